// import.cpp: `bitgrad import FILE --out CKPT.h5`: pretrained GPT-2 weights (a Hugging Face
// folder or .safetensors file with config.json beside it, or an llm.c .bin) as a bitgrad
// checkpoint that sample, eval and export read. The model is the file's own (layers, heads,
// width, positions, GELU form; --vocab-size pads its embedding), its tokenizer GPT-2's (or bytes,
// for a model over 256 ids). The checkpoint has no optimizer state: fine-tuning starts from the
// source file (model.init_from), and resume refuses the import. Written to CKPT.tmp and renamed.
#include <cstdio>
#include <filesystem>

#include "cli.h"
#include "core/config.h"
#include "core/error.h"
#include "data/gpt2_bpe.h"
#include "data/token_streams.h"
#include "data/tokenizer.h"
#include "models/gpt/gpt_weights.h"
#include "models/lm_checkpoint.h"

namespace bg::cli {

int run_import(const Args& args) {
  args.allow_only({"out", "tokenizer", "gpt2-dir", "vocab-size"});
  BG_CHECK(args.positional.size() == 1 && !args.option("out", "").empty(), "import",
           "usage: bitgrad import FILE --out CKPT.h5 [--tokenizer gpt2|byte] [--gpt2-dir DIR] "
           "[--vocab-size N]");
  const std::string src = args.positional[0], out = args.option("out", "");
  const PretrainedGpt2 file = pretrained_gpt2_config(src);
  GPTConfig cfg = file.config;
  if (args.has("vocab-size"))
    cfg.vocab_size = parse_integer(args.option("vocab-size", ""), "--vocab-size", file.token_ids,
                                   int64_t(1) << 24);
  const std::string name = args.option("tokenizer", "gpt2");
  TokenizerKind kind = TokenizerKind::gpt2;
  BG_CHECK(parse_enum(name, &kind) && (kind == TokenizerKind::gpt2 || kind == TokenizerKind::byte),
           "import", "--tokenizer must be gpt2 or byte, got '", name, "'");
  // A Hugging Face folder's own tokenizer (vocab.json, merges.txt) unless --gpt2-dir names one.
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool own = fs::is_directory(src, ec) && has_gpt2_vocab(src);
  const std::string gpt2_dir = args.option("gpt2-dir", own ? src : "datasets/gpt2");
  BG_CHECK(kind == TokenizerKind::gpt2 || !args.has("gpt2-dir"), "import",
           "--gpt2-dir: not used with --tokenizer byte");
  if (kind == TokenizerKind::gpt2) check_data_path(gpt2_dir, "--gpt2-dir");
  const auto tok = make_tokenizer(kind, "", gpt2_dir);
  BG_CHECK(tok->vocab_size() == file.token_ids, "import", src, " has ", file.token_ids,
           " token ids; the ", name, " tokenizer has ", tok->vocab_size(),
           (kind == TokenizerKind::gpt2 ? " (--tokenizer byte for a model over 256 ids)" : ""));
  check_output_file(out, "import", "--out", {src});
  // The weights are read and checked (names, shapes against config.json, finite values) before
  // the model is allocated: a config.json that describes a model its file does not hold is
  // refused at the cost of the file, not of the model it describes.
  const NamedTensors weights = load_pretrained_gpt2(src, cfg);
  Generator init(0);
  GPT model(cfg, init);
  assign_pretrained(model, weights, src);
  const std::string yaml = str_cat(
      "# bitgrad import\nmodel:\n  type: gpt\n  n_layer: ", cfg.n_layer,
      "\n  n_head: ", cfg.n_head, "\n  n_embd: ", cfg.n_embd, "\n  block_size: ", cfg.block_size,
      "\n  vocab_size: ", cfg.vocab_size, "\n  bias: true\n  dropout: 0.0\n  gelu: ",
      enum_name(cfg.gelu), "\n  init_from: ", yaml_scalar(src), "\ndata:\n  tokenizer: ", name,
      kind == TokenizerKind::gpt2 ? "\n  gpt2_dir: " + yaml_scalar(gpt2_dir) : std::string(), "\n");
  save_imported_checkpoint(out, model, *tok, src, yaml);
  std::printf("%s: GPT-2 from %s, %lld layers, %lld heads, width %lld, %lld positions, %s GELU, "
              "vocabulary %lld (%lld token ids, %s tokenizer), %lld parameters\n",
              out.c_str(), src.c_str(), (long long)cfg.n_layer, (long long)cfg.n_head,
              (long long)cfg.n_embd, (long long)cfg.block_size, enum_name(cfg.gelu),
              (long long)cfg.vocab_size, (long long)file.token_ids, name.c_str(),
              (long long)model.parameter_count());
  return 0;
}

}  // namespace bg::cli
