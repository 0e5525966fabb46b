// export.cpp: `bitgrad export CKPT --packed --out FILE.h5`: a BitLinear GPT's inference file
// (models/gpt_packed.h). The ternary weights are quantised from the latent ones exactly as the
// training forward quantises them (the CPU and CUDA quantisers give the same bits, so this runs
// on the CPU), packed at 2 bits with their multiplying scale; the rest is copied. The file is
// written to FILE.tmp and renamed, so a failure leaves no partial FILE and never touches CKPT.
#include <cstdio>
#include <filesystem>

#include "cli.h"
#include "core/checkpoint.h"
#include "core/error.h"
#include "data/token_shards.h"
#include "models/gpt_packed.h"
#include "models/lm_checkpoint.h"

namespace bg::cli {

int run_export(const Args& args) {
  args.allow_only({"packed", "out"});
  BG_CHECK(args.positional.size() == 1 && args.has("out"), "export",
           "usage: bitgrad export CKPT --packed --out FILE.h5");
  BG_CHECK(args.has("packed"), "export",
           "say --packed: the packed inference file is the one export form");
  const std::string src = args.positional[0], dst = args.option("out", "");
  check_input_file(src, "export", "checkpoint");
  check_output_file(dst, "export", "--out", {src});
  const CheckpointReader ck(src);
  BG_CHECK(is_train_checkpoint(ck), "export", src, " is not a bitgrad train checkpoint");
  const auto loaded = load_gpt_checkpoint(src, Device::cpu());
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
