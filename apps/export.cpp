// export.cpp: `bitgrad export CKPT --packed --out FILE.h5`: a BitLinear GPT's inference file
// (models/gpt/gpt_packed.h); `--format safetensors --out DIR` and `--format llmc --out FILE.bin`: a
// dense GPT-2-shaped model's weights for transformers (model.safetensors and config.json) and for
// llm.c (models/gpt/gpt_weights.h). The ternary weights are quantised from the latent ones exactly as the
// training forward quantises them (the CPU and CUDA quantisers give the same bits, so this runs
// on the CPU), packed at 2 bits with their multiplying scale; the rest is copied. The file is
// written to FILE.tmp and renamed, so a failure leaves no partial FILE and never touches CKPT.
#include <cstdio>
#include <filesystem>

#include "cli.h"
#include "core/checkpoint.h"
#include "core/error.h"
#include "data/token_shards.h"
#include "data/llmc_format.h"
#include "data/safetensors.h"
#include "models/gpt/gpt_packed.h"
#include "models/gpt/gpt_weights.h"
#include "models/lm_checkpoint.h"

namespace bg::cli {

namespace {

// The dense model's weights for another tool: transformers' folder or llm.c's file.
int export_weights(const std::string& format, const std::string& src, const std::string& dst,
                   const std::string& dtype_text, const LoadedGPT& loaded) {
  const GPT& model = *loaded.model;
  const GPTConfig& cfg = model.config();
  BG_CHECK(cfg.linear.kind == LinearKind::dense, "export", src, " has BitLinear projections: ",
           format, " has no place for ternary weights and would run the latent ones dense "
           "(export --packed keeps them)");
  NamedTensors params;
  for (const auto& [name, t] : model.named_parameters()) params.emplace_back(name, t);
  const int64_t vocab = loaded.tokenizer->vocab_size();
  if (format == "safetensors") {
    const NamedTensors hf = hf_from_gpt_params(params, cfg, vocab);  // refusals before any write
    const std::string json = hf_config_json(cfg, vocab);
    check_output_dir(dst, "export");
    const std::string weights = dst + "/model.safetensors", config = dst + "/config.json";
    check_output_file(weights, "export", "--out", {src});
    check_output_file(config, "export", "--out", {src});
    write_safetensors(weights, hf, {{"format", "pt"}, {"source", src}});
    write_file_atomic(config, json, "export");
    std::printf("%s: model.safetensors (%zu tensors) and config.json (GPT2LMHeadModel, %lld ids)\n",
                dst.c_str(), hf.size(), (long long)vocab);
    return 0;
  }
  BG_CHECK(dtype_text == "fp32" || dtype_text == "bf16", "export", "--dtype ", dtype_text,
           " (llm.c's files hold fp32 or bf16)");
  const DType dtype = dtype_text == "fp32" ? DType::f32 : DType::bf16;
  const LlmcCheckpoint ck = llmc_from_gpt_params(params, cfg, vocab, dtype);
  write_llmc(dst, ck);
  std::printf("%s: llm.c GPT-2 checkpoint, %s, %lld layers, vocabulary %lld padded to %lld\n",
              dst.c_str(), dtype_text.c_str(), (long long)cfg.n_layer, (long long)vocab,
              (long long)ck.header.padded_vocab_size);
  return 0;
}

}  // namespace

int run_export(const Args& args) {
  args.allow_only({"packed", "format", "dtype", "out"});
  BG_CHECK(args.positional.size() == 1 && args.has("out"), "export",
           "usage: bitgrad export CKPT (--packed --out FILE.h5 | --format safetensors --out DIR | "
           "--format llmc [--dtype fp32|bf16] --out FILE.bin)");
  const std::string format = args.option("format", args.has("packed") ? "packed" : "");
  BG_CHECK(!(args.has("packed") && args.has("format")), "export",
           "say --packed or --format, not both");
  BG_CHECK(format == "packed" || format == "safetensors" || format == "llmc", "export",
           format.empty() ? std::string("say --packed or --format safetensors|llmc")
                          : "--format " + format + " (expected safetensors or llmc; or --packed)");
  BG_CHECK(!args.has("dtype") || format == "llmc", "export", "--dtype applies to --format llmc");
  const std::string src = args.positional[0], dst = args.option("out", "");
  check_input_file(src, "export", "checkpoint");
  if (format != "safetensors") check_output_file(dst, "export", "--out", {src});
  const CheckpointReader ck(src);
  BG_CHECK(is_train_checkpoint(ck), "export", src, " is not a bitgrad train checkpoint");
  const auto loaded = load_gpt_checkpoint(src, Device::cpu());
  if (format != "packed") return export_weights(format, src, dst, args.option("dtype", "fp32"), *loaded);
  const GPT& model = *loaded->model;
  CheckpointWriter out(dst);
  const PackedSizes sizes = save_packed_gpt(model, out);
  out.attr("format", std::string(kPackedFormat));
  out.attr("model_type", std::string("gpt"));
  out.attr("source", src);
  out.attr("step", loaded->step);
  save_gpt_config(out, model.config());
  save_bide_code(out, model);
  loaded->tokenizer->save(out);
  // Every setting that changes the logits travels with the weights: the compute mode (L-Mul's
  // multiplies included) and the attention a deterministic run trained with.
  copy_compute_mode(ck, src, out);
  if (const AttentionChoice ran = load_trained_attention(ck, src); ran != AttentionChoice::automatic)
    save_trained_attention(out, ran);
  out.attr("val_data", loaded->val_data);
  out.attr("val_fraction", loaded->val_fraction);
  out.commit();
  std::error_code ec;
  const auto file_bytes = std::filesystem::file_size(dst, ec);
  std::printf(
      "%s: %lld ternary matrices, %lld bytes of 2-bit codes + %lld bytes of scales (fp16: %lld "
      "bytes, %.2fx); file %lld bytes\n",
      dst.c_str(), (long long)sizes.matrices, (long long)sizes.code_bytes,
      (long long)sizes.scale_bytes, (long long)sizes.fp16_bytes,
      double(sizes.fp16_bytes) / double(sizes.code_bytes), (long long)file_bytes);
  return 0;
}

}  // namespace bg::cli
