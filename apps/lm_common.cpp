#include "lm_common.h"

#include "core/checkpoint.h"
#include "core/error.h"
#include "data/text.h"
#include "data/token_shards.h"
#include "models/gpt_packed.h"

namespace bg::cli {

bool is_shard_path(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".bin") == 0;
}

std::vector<int32_t> read_tokens(const std::string& path, const Tokenizer& tok) {
  if (!is_shard_path(path)) return tok.encode(read_text_file(path));
  std::vector<int32_t> tokens = read_token_shard(path);
  for (size_t i = 0; i < tokens.size(); ++i)
    BG_CHECK(tokens[i] < tok.vocab_size(), "data", path, ": token ", tokens[i], " at position ", i,
             " is outside the ", tok.kind(), " vocabulary of ", tok.vocab_size());
  return tokens;
}

bool is_train_checkpoint(const CheckpointReader& ck) {
  if (!ck.has_attr("format")) return false;
  const std::string f = ck.str_attr("format");
  return f == kTrainFormat || f == "bitgrad-train-1";
}

std::unique_ptr<LoadedGPT> load_gpt_checkpoint(const std::string& path, Device device) {
  CheckpointReader ck(path);
  const bool packed = ck.has_attr("format") && ck.str_attr("format") == kPackedFormat;
  BG_CHECK(packed || is_train_checkpoint(ck), "checkpoint", path,
           " is not a bitgrad train checkpoint or packed export");
  auto out = std::make_unique<LoadedGPT>();
  GPTConfig cfg = load_gpt_config(ck, path);
  const int64_t head_dim = cfg.n_embd / cfg.n_head;
  if (ck.has_attr("compute_deterministic") && ck.int_attr("compute_deterministic") == 1) {
    // A train.deterministic run: the forward runs in its mode and with its attention, so on the
    // device kind it trained on the logits are the training forward's, bit for bit.
    const std::string p = ck.str_attr("compute_precision");
    BG_CHECK(p == "fp32" || p == "tf32" || p == "bf16", "checkpoint", path, ": compute_precision '",
             p, "' is not fp32, tf32 or bf16");
    out->mode = ComputeMode::deterministic_mode(p == "bf16"   ? MatmulPrecision::bf16
                                                : p == "tf32" ? MatmulPrecision::tf32
                                                              : MatmulPrecision::fp32)
                    .on(device);
    const bool trained_fused = !ck.has_attr("attention") || ck.str_attr("attention") == "fused";
    cfg.fused_attention =
        trained_fused && fused_attention_supports(out->mode, device, head_dim).empty();
  } else {
    // No dropout here, so both attention paths compute the same function: the fused kernel
    // where it honours the fp32 mode (the CPU), the composed ops otherwise (CUDA, whose fused
    // kernel multiplies in bf16).
    cfg.fused_attention = fused_attention_supports(ComputeMode(), device, head_dim).empty();
  }
  if (ck.has_attr("compute_matmul") && ck.str_attr("compute_matmul") == "lmul") {
    // An L-Mul run is sampled and evaluated with the multiplies it trained with.
    ComputeMode& m = out->mode;
    m.algo = MatmulAlgo::lmul;
    m.lmul_mantissa_bits = int(ck.int_attr("lmul.mantissa_bits"));
    BG_CHECK(m.lmul_mantissa_bits >= 1 && m.lmul_mantissa_bits <= 23, "checkpoint", path,
             ": lmul.mantissa_bits is ", m.lmul_mantissa_bits, ", expected 1 to 23");
    const std::string scope = ck.str_attr("lmul.scope");
    BG_CHECK(parse_lmul_scope(scope, &m.lmul_scope), "checkpoint", path, ": lmul.scope is '", scope,
             "', expected attention, mlp or all");
    m.lmul_exact_backward = ck.str_attr("lmul.backward") == "exact";
    cfg.fused_attention =
        cfg.fused_attention &&
        fused_attention_supports(m.at(MatmulSite::attention), device, head_dim).empty();
  }
  out->tokenizer = load_tokenizer(ck);
  BG_CHECK(out->tokenizer->vocab_size() <= cfg.vocab_size, "checkpoint", path, ": the ",
           out->tokenizer->kind(), " tokenizer has ", out->tokenizer->vocab_size(),
           " tokens, the model only ", cfg.vocab_size);
  Generator init(0);
  out->model = std::make_unique<GPT>(cfg, init);
  out->model->set_compute_mode(out->mode);
  if (packed) load_packed_weights(*out->model, ck, device);  // releases the latent weights
  const auto named = out->model->named_parameters();
  load_parameters(ck, named);
  out->params = FlatParameters(named, device);
  out->model->train(false);
  out->step = ck.int_attr("step");
  out->val_data = ck.has_attr("val_data") ? ck.str_attr("val_data") : "";
  out->val_fraction = ck.has_attr("val_fraction") ? ck.float_attr("val_fraction") : 0.1;
  return out;
}

}  // namespace bg::cli
