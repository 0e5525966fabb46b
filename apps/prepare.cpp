// prepare.cpp: `bitgrad prepare TEXT --out DIR`: a text file to llm.c token shards
// DIR/train.bin and DIR/val.bin (the text split at --val-fraction of its characters, then each
// part encoded: nanoGPT's data/shakespeare/prepare.py).
#include <cstdio>

#include "cli.h"
#include "data/token_streams.h"
#include "core/error.h"
#include "data/text.h"
#include "data/token_shards.h"
#include "data/tokenizer.h"

namespace bg::cli {

int run_prepare(const Args& args) {
  args.allow_only({"out", "tokenizer", "gpt2-dir", "val-fraction"});
  BG_CHECK(args.positional.size() == 1 && !args.option("out", "").empty(), "prepare",
           "usage: bitgrad prepare TEXT --out DIR [--tokenizer gpt2|byte] [--gpt2-dir DIR] "
           "[--val-fraction F]");
  const std::string name = args.option("tokenizer", "gpt2");
  TokenizerKind kind = TokenizerKind::gpt2;
  BG_CHECK(parse_enum(name, &kind) && (kind == TokenizerKind::gpt2 || kind == TokenizerKind::byte),
           "prepare", "--tokenizer must be gpt2 or byte (a char ",
           "vocabulary depends on the text; train from the text file instead), got '", name, "'");
  const double val_fraction =
      parse_number(args.option("val-fraction", "0.1"), "--val-fraction", 0.0, 0.5);
  check_data_path(args.positional[0], "TEXT");
  // The input first: a missing TEXT is the error to report, whatever the tokenizer's folder.
  const std::string text = read_text_file(args.positional[0]);
  const std::string gpt2_dir = args.option("gpt2-dir", "datasets/gpt2");
  if (kind == TokenizerKind::gpt2) check_data_path(gpt2_dir, "--gpt2-dir");
  const auto tok = make_tokenizer(kind, "", gpt2_dir);
  const size_t cut = split_point(text, val_fraction);
  const std::vector<int32_t> train = tok->encode(text.substr(0, cut));
  const std::vector<int32_t> val = tok->encode(text.substr(cut));
  BG_CHECK(!train.empty() && !val.empty(), "prepare", args.positional[0],
           ": the split leaves an empty part (", train.size(), " train, ", val.size(),
           " val tokens)");
  const std::string out = args.option("out", "");
  for (const char* name : {"/train.bin", "/val.bin"})
    check_output_file(out + name, "prepare", "--out's");
  write_token_shard(out + "/train.bin", train);
  write_token_shard(out + "/val.bin", val);
  std::printf("%s: %zu train tokens -> %s/train.bin, %zu val tokens -> %s/val.bin (%s)\n",
              args.positional[0].c_str(), train.size(), out.c_str(), val.size(), out.c_str(),
              name.c_str());
  return 0;
}

}  // namespace bg::cli
