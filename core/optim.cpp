#include "optim.h"

#include <algorithm>
#include <cmath>

#include "dispatch.h"
#include "ops.h"

namespace bg {

FlatParameters::FlatParameters(const std::vector<std::pair<std::string, Tensor>>& named,
                               Device device)
    : named_(named) {
  std::vector<size_t> order;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < named.size(); ++i)
      if ((named[i].second.ndim() >= 2) == (pass == 0)) order.push_back(i);
  int64_t total = 0;
  for (size_t i : order) {
    const Tensor& t = named[i].second;
    BG_CHECK(t.dtype() == DType::f32, "parameters", "parameter '", named[i].first, "' is ",
             dtype_name(t.dtype()), "; master weights are f32");
    if (t.ndim() >= 2) decay_count_ += t.numel();
    total += t.numel();
  }
  values_ = empty({total}, DType::f32, device);
  grads_ = zeros({total}, DType::f32, device);
  int64_t off = 0;
  for (size_t i : order) {
    Tensor t = named[i].second;
    const int64_t n = t.numel();
    Tensor dst = values_.slice(0, off, off + n);
    dst.copy_(t.detach().reshape({n}));
    // Rebind in place: every holder of this parameter now sees the flat buffer.
    TensorImpl* impl = t.impl();
    impl->storage = values_.impl()->storage;
    impl->offset = off;
    impl->strides = contiguous_strides(impl->shape);
    impl->grad = make_view(grads_, impl->shape, impl->strides, off).impl_ptr();
    impl->requires_grad = true;
    off += n;
  }
}

void FlatParameters::zero_grad() {
  if (grads_.defined()) grads_.fill_(0.0);
}

FrozenRanges ranges_not_named(const FlatParameters& params, const std::string& trainable_prefix) {
  FrozenRanges ranges;
  for (const auto& [name, t] : params.named())
    if (name.rfind(trainable_prefix, 0) != 0 && t.numel() > 0)
      ranges.emplace_back(t.impl()->offset, t.impl()->offset + t.numel());
  std::sort(ranges.begin(), ranges.end());
  FrozenRanges merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  return merged;
}

namespace {

// [lo, hi) without the frozen ranges (sorted, disjoint): the pieces an optimizer updates.
FrozenRanges open_pieces(int64_t lo, int64_t hi, const FrozenRanges& frozen) {
  FrozenRanges pieces;
  int64_t at = lo;
  for (const auto& [b, e] : frozen) {
    if (e <= at || b >= hi) continue;
    if (b > at) pieces.emplace_back(at, b);
    at = std::max(at, e);
  }
  if (at < hi) pieces.emplace_back(at, hi);
  return pieces;
}

}  // namespace

AdamW::AdamW(FlatParameters& params, AdamWConfig config) : params_(params), config_(config) {
  shard(0, params.numel());
}

void AdamW::shard(int64_t begin, int64_t end) {
  BG_CHECK(0 <= begin && begin <= end && end <= params_.numel(), "adamw", "shard [", begin, ", ",
           end, ") outside the ", params_.numel(), " parameters");
  shard_begin_ = begin;
  shard_end_ = end;
  m_ = zeros({end - begin}, DType::f32, params_.values().device());
  v_ = zeros({end - begin}, DType::f32, params_.values().device());
}

std::vector<float> AdamW::hyper_values(int64_t t, double lr) const {
  return {float(lr), float(1.0 - std::pow(config_.beta1, double(t))),
          float(1.0 - std::pow(config_.beta2, double(t)))};
}

void AdamW::step_device(const Tensor& hyper, const Tensor& grad_scale) {
  BG_CHECK(hyper.numel() == 3 && hyper.dtype() == DType::f32 &&
               hyper.device() == params_.values().device() && hyper.is_contiguous(),
           "adamw", "hyper must be 3 contiguous f32 values on the parameters' device");
  hyper_ = hyper;
  step(0.0, grad_scale);
  hyper_ = Tensor();
}

void AdamW::step(double lr, const Tensor& grad_scale) {
  if (params_.numel() == 0) return;
  ++steps_;
  const Device dev = params_.values().device();
  AdamWParams p{};
  p.lr = float(lr);
  p.beta1 = float(config_.beta1);
  p.beta2 = float(config_.beta2);
  p.eps = float(config_.eps);
  p.bias_correction1 = float(1.0 - std::pow(config_.beta1, double(steps_)));
  p.bias_correction2 = float(1.0 - std::pow(config_.beta2, double(steps_)));
  p.hyper = hyper_.defined() ? hyper_.data<float>() : nullptr;
  const KView scale = grad_scale.defined() ? grad_scale.kview() : null_view();
  const int64_t split = params_.decay_count(), n = params_.numel();
  for (int group = 0; group < 2; ++group) {
    // The group's elements within the shard this optimizer keeps (all of them unsharded).
    const int64_t lo = std::max(group == 0 ? 0 : split, shard_begin_);
    const int64_t hi = std::min(group == 0 ? split : n, shard_end_);
    if (hi <= lo) continue;
    p.weight_decay = group == 0 ? float(config_.weight_decay) : 0.f;
    for (const auto& [a, b] : open_pieces(lo, hi, frozen_)) {
      const int64_t ma = a - shard_begin_, mb = b - shard_begin_;
      BG_DISPATCH(dev, adamw_step, params_.values().slice(0, a, b).kview(),
                  params_.grads().slice(0, a, b).kview(), m_.slice(0, ma, mb).kview(),
                  v_.slice(0, ma, mb).kview(), p, scale, stream_for(dev));
    }
  }
}

SGD::SGD(FlatParameters& params, double momentum, double weight_decay)
    : params_(params), momentum_(momentum), weight_decay_(weight_decay) {
  buf_ = zeros({params.numel()}, DType::f32, params.values().device());
}

void SGD::step(double lr, const Tensor& grad_scale) {
  if (params_.numel() == 0) return;
  const Device dev = params_.values().device();
  const KView scale = grad_scale.defined() ? grad_scale.kview() : null_view();
  const int64_t split = params_.decay_count(), n = params_.numel();
  for (int group = 0; group < 2; ++group) {
    const int64_t lo = group == 0 ? 0 : split, hi = group == 0 ? split : n;
    for (const auto& [a, b] : open_pieces(lo, hi, frozen_))
      BG_DISPATCH(dev, sgd_step, params_.values().slice(0, a, b).kview(),
                  params_.grads().slice(0, a, b).kview(), buf_.slice(0, a, b).kview(), float(lr),
                  float(momentum_), group == 0 ? float(weight_decay_) : 0.f, scale,
                  stream_for(dev));
  }
}

ClipResult clip_grad_norm(const FlatParameters& params, double max_norm) {
  BG_CHECK(max_norm > 0, "clip_grad_norm", "max_norm must be positive, got ", max_norm);
  NoGradGuard no_grad;
  const Tensor& g = params.grads();
  ClipResult r;
  r.norm = grad_norm(params);
  // scale = max_norm / max(norm, max_norm) == min(1, max_norm / norm), without a host sync.
  const Tensor cap = full({}, max_norm, DType::f32, g.device());
  r.scale = cap / maximum(r.norm, cap);
  return r;
}

Tensor grad_norm(const FlatParameters& params) {
  NoGradGuard no_grad;
  const Tensor& g = params.grads();
  return sqrt(sum_squares(g));  // sum(g * g)'s bits, one pass over the 4-byte gradients
}

NonFiniteWatch::NonFiniteWatch(Device device) : flag_(zeros({}, DType::i64, device)) {}

void NonFiniteWatch::check(const Tensor& value, int64_t step) {
  BG_CHECK(value.numel() == 1 && value.device() == flag_.device(), "nonfinite_watch",
           "expected a scalar on ", flag_.device().str(), ", got ", shape_str(value.shape()),
           " on ", value.device().str());
  const Tensor v = value.detach().to(DType::f32).contiguous();
  BG_DISPATCH(flag_.device(), mark_first_nonfinite, flag_.kview(), v.kview(), step,
              stream_for(flag_.device()));
}

int64_t NonFiniteWatch::first_step() const { return flag_.to_vector<int64_t>()[0]; }

double LrSchedule::at(int64_t step) const {
  if (in_stage2(step)) {
    LrSchedule one = *this;
    one.stage2_step = 0;
    return one.at(step) * stage2_lr_scale;
  }
  if (warmup_steps > 0 && step < warmup_steps) return lr * double(step + 1) / double(warmup_steps);
  const int64_t span = std::max<int64_t>(1, total_steps - warmup_steps);
  const double t = std::min(1.0, double(step - warmup_steps) / double(span));
  switch (kind) {
    case ScheduleKind::constant:
      return lr;
    case ScheduleKind::cosine:
      return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(M_PI * t));
    case ScheduleKind::linear:
      return lr + (min_lr - lr) * t;
    case ScheduleKind::exponential:
      return lr * std::pow(min_lr / lr, t);
  }
  fail("schedule", "unknown schedule kind");
}

}  // namespace bg
