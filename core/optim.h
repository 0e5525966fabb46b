// optim.h: flat parameter storage, optimizers (AdamW, SGD with momentum), LR schedules and
// gradient clipping by global norm.
//
// FlatParameters moves every parameter into one f32 buffer (parameters with >= 2 dims first:
// they get weight decay) and gives each a gradient view into one flat gradient buffer. An
// optimizer step is then one fused kernel launch per decay group, and clipping is one norm over
// one buffer, with the clip factor kept on the device (no host sync per step).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tensor.h"

namespace bg {

class FlatParameters {
 public:
  FlatParameters() = default;
  // Rebinds each tensor's storage into the flat buffer on `device` (values preserved).
  FlatParameters(const std::vector<std::pair<std::string, Tensor>>& named, Device device);
  const Tensor& values() const { return values_; }  // (numel,) f32
  const Tensor& grads() const { return grads_; }    // (numel,) f32
  int64_t decay_count() const {
    return decay_count_;
  }  // elements [0, decay_count) get weight decay
  int64_t numel() const { return values_.defined() ? values_.numel() : 0; }
  const std::vector<std::pair<std::string, Tensor>>& named() const { return named_; }
  void zero_grad();

 private:
  std::vector<std::pair<std::string, Tensor>> named_;
  Tensor values_, grads_;
  int64_t decay_count_ = 0;
};

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
};

// Flat-buffer element ranges [begin, end) an optimizer leaves alone (values and state).
using FrozenRanges = std::vector<std::pair<int64_t, int64_t>>;
// The ranges of `params` whose names do not start with `trainable_prefix`, merged and sorted.
FrozenRanges ranges_not_named(const FlatParameters& params, const std::string& trainable_prefix);

class AdamW {
 public:
  AdamW(FlatParameters& params, AdamWConfig config);
  // One step at learning rate `lr`; `grad_scale` (device scalar from clip_grad_norm) may be empty.
  void step(double lr, const Tensor& grad_scale = Tensor());
  // The same step with {lr, 1 - beta1^t, 1 - beta2^t} read from `hyper` (3 f32 on the
  // parameters' device) when the kernel runs: what a captured CUDA graph needs.
  void step_device(const Tensor& hyper, const Tensor& grad_scale = Tensor());
  // Host values of `hyper` for 1-based step t.
  std::vector<float> hyper_values(int64_t t, double lr) const;
  int64_t steps() const { return steps_; }
  Tensor& exp_avg() { return m_; }
  Tensor& exp_avg_sq() { return v_; }
  void set_steps(int64_t s) { steps_ = s; }
  void set_weight_decay(double wd) { config_.weight_decay = wd; }
  // Until set again, steps leave these ranges' parameters and moments as they are (the step
  // count still advances).
  void set_frozen(FrozenRanges ranges) { frozen_ = std::move(ranges); }
  // ZeRO-1: keep the moments of the parameters [begin, end) of the flat buffer only, and update
  // only those (the other ranks update the rest); exp_avg()/exp_avg_sq() then hold that range.
  void shard(int64_t begin, int64_t end);
  int64_t shard_begin() const { return shard_begin_; }
  int64_t shard_end() const { return shard_end_; }

 private:
  FlatParameters& params_;
  AdamWConfig config_;
  Tensor m_, v_;
  int64_t shard_begin_ = 0, shard_end_ = 0;  // the range m_ and v_ cover
  Tensor hyper_;                             // set for the duration of step_device
  int64_t steps_ = 0;
  FrozenRanges frozen_;
};

class SGD {
 public:
  SGD(FlatParameters& params, double momentum, double weight_decay);
  void step(double lr, const Tensor& grad_scale = Tensor());
  Tensor& momentum_buffer() { return buf_; }
  void set_weight_decay(double wd) { weight_decay_ = wd; }
  void set_frozen(FrozenRanges ranges) { frozen_ = std::move(ranges); }  // as AdamW's

 private:
  FlatParameters& params_;
  double momentum_, weight_decay_;
  Tensor buf_;
  FrozenRanges frozen_;
};

struct ClipResult {
  Tensor norm;   // global L2 norm of the gradients (device scalar)
  Tensor scale;  // min(1, max_norm / norm) (device scalar), for the optimizer
};
// Global-norm clipping. The gradients are not rewritten: the optimizer applies `scale`.
ClipResult clip_grad_norm(const FlatParameters& params, double max_norm);

// The first step whose loss or gradient norm was NaN or infinite, recorded on the device: each
// check is one single-thread kernel and no host synchronisation, and the host reads the step
// only when it syncs anyway (a progress line). A run that goes non-finite at step 7 is then
// reported at step 7, not at the next log line.
class NonFiniteWatch {
 public:
  explicit NonFiniteWatch(Device device);
  // Records `step` (1-based) if `value` (a scalar) is non-finite and no step was recorded yet.
  void check(const Tensor& value, int64_t step);
  int64_t first_step() const;  // 0 when every checked value was finite (syncs)

 private:
  Tensor flag_;  // i64 scalar
};

// The global L2 norm of the gradients (device scalar), as clip_grad_norm computes it.
Tensor grad_norm(const FlatParameters& params);

// schedule.type: the learning rate after warmup. constant; cosine and linear decay to min_lr at
// the last step; exponential goes lr -> min_lr geometrically.
#define BG_SCHEDULE_KINDS(X) \
  X(constant, "constant") X(cosine, "cosine") X(linear, "linear") X(exponential, "exponential")
BG_NAMED_ENUM(ScheduleKind, BG_SCHEDULE_KINDS)

struct LrSchedule {
  ScheduleKind kind = ScheduleKind::constant;
  double lr = 1e-3, min_lr = 0.0;
  int64_t warmup_steps = 0, total_steps = 1;
  // BitNet b1.58's two stages: from 0-based step stage2_step on (0: one stage) the learning
  // rate is multiplied by stage2_lr_scale and weight decay becomes stage2_weight_decay.
  int64_t stage2_step = 0;
  double stage2_lr_scale = 1.0, stage2_weight_decay = 0.0;
  bool in_stage2(int64_t step) const { return stage2_step > 0 && step >= stage2_step; }
  // Learning rate for 0-based step `step`. Warmup is linear from lr/warmup to lr; cosine and
  // linear then decay to min_lr at total_steps; exponential goes lr -> min_lr geometrically.
  double at(int64_t step) const;
};

}  // namespace bg
