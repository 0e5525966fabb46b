#include "lm_task.h"

#include <cstdio>

#include "core/checkpoint.h"
#include "data/text.h"
#include "models/lm_checkpoint.h"

namespace bg {

LanguageModelTask::LanguageModelTask(const LanguageModelTaskConfig& cfg, Tokenizer& tok,
                                     LanguageModel& model, Device device)
    : cfg_(cfg),
      tok_(tok),
      model_(model),
      device_(device),
      streams_(cfg.seed + 1, cfg.seed + 2) {}

Tensor LanguageModelTask::batch_loss(const std::vector<int32_t>& tokens, Generator& gen) {
  Tensor x, y;
  // A model predicting P tokens jointly (byte pairs) takes P-token targets.
  sample_windows(tokens, cfg_.batch, model_.context(), gen, device_, &x, &y,
                 model_.tokens_per_target(), model_.vocab_size());
  return model_.loss(x, y, streams_.dropout);
}
Tensor LanguageModelTask::train_loss() {
  if (!cfg_.step_buffers) return batch_loss(train_tokens, streams_.data);
  BG_CHECK(step_x_.defined(), "train", "a step's windows are drawn by before_step");
  return model_.loss(step_x_, step_y_, streams_.dropout);
}

// The same draws as train_loss's own (one micro-batch per step), copied into the buffers.
void LanguageModelTask::before_step(int64_t /*step*/) {
  if (!cfg_.step_buffers) return;
  if (!dropout_shift_.defined()) {
    dropout_shift_ = zeros({1}, DType::i64, device_);
    streams_.dropout.device_shift = static_cast<const uint64_t*>(dropout_shift_.data_ptr());
  }
  step_start_ = streams_.dropout.offset;
  Tensor x, y;
  sample_windows(train_tokens, cfg_.batch, model_.context(), streams_.data, device_, &x, &y,
                 model_.tokens_per_target(), model_.vocab_size());
  if (!step_x_.defined()) {
    step_x_ = empty(x.shape(), x.dtype(), device_);
    step_y_ = empty(y.shape(), y.dtype(), device_);
  }
  step_x_.copy_(x);
  step_y_.copy_(y);
}

// A replay runs the captured step's dropout kernels with the capture's counters plus the device
// shift: this step's draws start where the capture's did plus the shift, and the host stream
// moves past them as an eager step's draws would move it (checkpoints, resume).
void LanguageModelTask::before_replay(bool captured) {
  Generator& g = streams_.dropout;
  uint64_t shift = 0;
  if (captured) {
    captured_start_ = step_start_;
    counters_per_step_ = g.offset - step_start_;
  } else {
    shift = step_start_ - captured_start_;
    g.offset += counters_per_step_;
  }
  dropout_shift_.copy_(from_vector(std::vector<int64_t>{int64_t(shift)}, {1}));
}

void LanguageModelTask::seek_micro_batch(int64_t index) {
  streams_.seek(index, [&] { (void)batch_loss(train_tokens, streams_.data); });
}

double LanguageModelTask::validation_loss() {
  const EvalModeScope eval_mode(model_);
  Generator gen(cfg_.seed + 3);  // the same eval batches every time
  double total = 0;
  for (int64_t i = 0; i < cfg_.eval_iters; ++i) total += batch_loss(val_tokens, gen).item();
  return total / double(cfg_.eval_iters);
}
// What sample, eval and resume need to rebuild and check the run (the tied LM head is also
// stored as lm_head.weight, by the model's parameters, so PyTorch's load_state_dict finds every
// key).
RunRecord LanguageModelTask::record() const {
  RunRecord r;
  r.model_type = model_.type();
  r.config_yaml = cfg_.config_yaml;
  r.data = cfg_.data;
  r.val_source = val_source;
  r.mode = model_.compute_mode();
  r.data_offset = streams_.data.offset;
  r.dropout_offset = streams_.dropout.offset;
  return r;
}
void LanguageModelTask::save(CheckpointWriter& ck) const {
  save_run_record(ck, record(), [&](CheckpointWriter& w) {
    tok_.save(w);
    model_.save_description(w);
  });
}
void LanguageModelTask::load(const CheckpointReader& ck, const std::string& path) {
  BG_CHECK(is_train_checkpoint(ck), "train", path, " is not a bitgrad train checkpoint");
  BG_CHECK(ck.str_attr("model_type") == model_.type(), "train", path, " holds a ",
           ck.str_attr("model_type"), " model, the config asks for a ", model_.type());
  const auto saved = load_tokenizer(ck);
  BG_CHECK(saved->kind() == tok_.kind() && saved->vocab_size() == tok_.vocab_size() &&
               (tok_.kind() != "char" ||
                ck.str_attr("vocab_chars") == static_cast<const CharTokenizer&>(tok_).chars()),
           "train", path, " was trained with another vocabulary (", saved->kind(), ", ",
           saved->vocab_size(), " tokens) than this config's data (", tok_.kind(), ", ",
           tok_.vocab_size(), " tokens)");
  const std::string diff = model_.architecture_difference(ck, path);
  BG_CHECK(diff.empty(), "train", path,
           " holds another architecture than the config (checkpoint vs config: ", diff, ")");
  // A BIDE head's token code is part of the model: the run continues with the saved one.
  model_.load_extras(ck, path);
  check_resume_run(ck, path, record(), cfg_.allow_mode_change, streams_);
}

}  // namespace bg
