#include "lm_checkpoint.h"

#include <cstring>
#include <limits>

#include "core/checkpoint.h"
#include "core/error.h"
#include "models/gpt/gpt_packed.h"
#include "models/trainer.h"

namespace bg {

namespace {

// A tied head's lm_head.weight (written for PyTorch's load_state_dict) is the token embedding
// again: a file where they differ would load as one model here and another in PyTorch. Compared
// with the embedding as loaded (`wte`, on the host), so the matrix is read once more, not twice.
void check_tied_alias(const CheckpointReader& ck, const std::string& path, const Tensor& wte) {
  if (!ck.has(kTiedHeadAlias)) return;
  const Tensor alias = ck.tensor(kTiedHeadAlias, DType::f32, wte.shape());
  BG_CHECK(std::memcmp(alias.data_ptr(), wte.contiguous().data_ptr(),
                       size_t(wte.numel()) * sizeof(float)) == 0,
           "checkpoint", path, ": ", kTiedHeadAlias,
           " differs from transformer.wte.weight, which the tied head stores again");
}

// The run's step, validation source and split, as its checkpoint records them.
void read_loaded_record(const CheckpointReader& ck, const std::string& path, LoadedRun* out) {
  const LoadedRecord r = read_run_record(ck, path, DataSpec());
  out->step = r.step;
  out->val_data = r.val_source;
  out->val_fraction = r.data.val_fraction;
}

}  // namespace

std::unique_ptr<LoadedGPT> load_gpt_checkpoint(const std::string& path, Device device) {
  CheckpointReader ck(path);
  const bool packed = ck.has_attr("format") && ck.str_attr("format") == kPackedFormat;
  BG_CHECK(packed || is_train_checkpoint(ck), "checkpoint", path,
           " is not a bitgrad train checkpoint or packed export");
  auto out = std::make_unique<LoadedGPT>();
  GPTConfig cfg = load_gpt_config(ck, path);
  out->trained = load_compute_mode(ck, path);
  const std::string activations = activations_problem(out->trained, &cfg);
  BG_CHECK(activations.empty(), "checkpoint", path, ": ", activations);
  // A deterministic run is sampled and evaluated in its own mode, an L-Mul run with its
  // multiplies; others in fp32 (inference_mode); its attention by the trunk's rule.
  out->mode = inference_mode(out->trained).on(device);
  cfg.fused_attention = inference_fused_attention(out->trained, load_trained_attention(ck, path),
                                                  out->mode, device, cfg.n_embd / cfg.n_head);
  out->tokenizer = load_tokenizer(ck);
  BG_CHECK(out->tokenizer->vocab_size() <= cfg.vocab_size, "checkpoint", path, ": the ",
           out->tokenizer->kind(), " tokenizer has ", out->tokenizer->vocab_size(),
           " tokens, the model only ", cfg.vocab_size);
  BG_CHECK(out->tokenizer->tokens_per_target() == cfg.predict_tokens, "checkpoint", path, ": the ",
           out->tokenizer->kind(), " tokenizer's targets span ",
           out->tokenizer->tokens_per_target(), " tokens, model.predict_tokens says ",
           cfg.predict_tokens);
  Generator init(0);
  out->model = std::make_unique<GPT>(cfg, init);
  out->model->set_compute_mode(out->mode);
  if (packed) load_packed_weights(*out->model, ck, device);  // releases the latent weights
  const auto named = out->model->named_parameters();
  if (!packed) check_root_datasets(ck, path, named, cfg.head != HeadKind::bide ? kTiedHeadAlias : nullptr);
  load_parameters(ck, named);
  if (!packed && cfg.head != HeadKind::bide) check_tied_alias(ck, path, out->model->token_embedding());
  load_bide_code(ck, path, *out->model);
  out->params = FlatParameters(named, device);
  out->model->train(false);
  read_loaded_record(ck, path, out.get());
  return out;
}

void save_imported_checkpoint(const std::string& path, const GPT& model, const Tokenizer& tok,
                              const std::string& source, const std::string& config_yaml) {
  CheckpointWriter ck(path);
  for (const auto& [name, t] : model.named_parameters()) ck.tensor(name, t);
  RunRecord record;
  record.model_type = model.type();
  record.config_yaml = config_yaml;
  record.mode = model.compute_mode();
  save_run_record(ck, record, [&](CheckpointWriter& w) {
    tok.save(w);
    model.save_description(w);
  });
  ck.attr(kImportedFromAttr, source);
  ck.attr("step", int64_t(0));
  ck.attr("optimizer_steps", int64_t(0));
  ck.attr("best_val_loss", std::numeric_limits<double>::infinity());
  ck.attr("metrics_csv", std::string(kMetricsHeader));
  ck.commit();
}

std::string checkpoint_model_type(const std::string& path) {
  const CheckpointReader ck(path);
  BG_CHECK(ck.has_attr("model_type"), "checkpoint", path,
           " is not a bitgrad train checkpoint or packed export (no model_type)");
  return ck.str_attr("model_type");
}

std::unique_ptr<LoadedCharMLP> load_char_mlp_checkpoint(const std::string& path, Device device) {
  CheckpointReader ck(path);
  BG_CHECK(is_train_checkpoint(ck) && ck.str_attr("model_type") == "char_mlp", "checkpoint", path,
           " is not a bitgrad train checkpoint of a char_mlp");
  auto out = std::make_unique<LoadedCharMLP>();
  const CharMLPConfig cfg = load_char_mlp_config(ck, path);
  out->tokenizer = load_tokenizer(ck);
  BG_CHECK(out->tokenizer->vocab_size() == cfg.vocab_size, "checkpoint", path, ": the ",
           out->tokenizer->kind(), " tokenizer has ", out->tokenizer->vocab_size(),
           " tokens, the model ", cfg.vocab_size);
  Generator init(0);
  out->model = std::make_unique<CharMLP>(cfg, init);
  const auto named = out->model->named_parameters();
  check_root_datasets(ck, path, named);
  load_parameters(ck, named);
  out->params = FlatParameters(named, device);
  const ComputeMode trained = load_compute_mode(ck, path);
  const std::string activations = activations_problem(trained, nullptr);
  BG_CHECK(activations.empty(), "checkpoint", path, ": ", activations);
  out->mode = inference_mode(trained).on(device);
  out->model->set_compute_mode(out->mode);
  out->model->train(false);
  read_loaded_record(ck, path, out.get());
  return out;
}

}  // namespace bg
