// bide_head.h: BIDE as a layer. Features x (N, in) go through two projections (built by the
// linear factory) to W (N, H, B) and r (N, H), which define an exact distribution over the 2^B
// bit patterns of a value (core/bide.h, normalised by a SICK pass): NLL, log-prob, CDF,
// quantiles, sampling, moments. A model that predicts a value rather than a token (a GPT with a
// BIDE output head) puts one of these on its features; `bitgrad fit-bide`'s model
// (models/bide_fit/bide_fit.h) learns W and r directly, one embedding row per distribution.
#pragma once
#include <array>
#include <memory>

#include "core/bide.h"
#include "linear.h"

namespace bg {

class BideHead : public Module {
 public:
  // W's projection starts at N(0, 2 / (B in)) and r's at N(0, 1 / (H in)), so unit-variance
  // features give the SICK paper's initial W ~ N(0, 2 / B) and r ~ N(0, 1 / H). Parameters:
  // w_proj.weight (H B, in), r_proj.weight (H, in), no biases.
  BideHead(int64_t in_features, int64_t hidden, const BideOptions& opt, Generator& init,
           const LinearSpec& linear = LinearSpec());
  struct Distribution {
    Tensor w, r;  // (N, H, B), (N, H)
  };
  Distribution distribution(const Tensor& x) const;
  // The options' support, precision and variant apply to every call; under a deterministic
  // compute mode (set_compute_mode) every call is batch-invariant.
  Tensor nll(const Tensor& x, const Tensor& y, const std::string& reduction = "mean") const;
  Tensor log_prob(const Tensor& x, const Tensor& y) const;
  Tensor cdf(const Tensor& x, const Tensor& patterns) const;
  Tensor quantile(const Tensor& x, const Tensor& q) const;
  Tensor sample(const Tensor& x, uint64_t seed) const;
  BideMoments moments(const Tensor& x) const;
  const BideOptions& options() const { return opt_; }
  // Every row's support is the same two pattern ranges [lo0, hi0) and [lo1, hi1) (a float
  // type's finite values without -0: data/value_format.h's ValueCode::ranges), whatever the batch: the
  // ops' per-row support table is made for each call's rows.
  void set_row_support(const std::array<int64_t, 4>& ranges);

 private:
  // The options of a call over n rows on `device`: opt_, batch-invariant in a deterministic
  // mode, with the row support when one is set.
  BideOptions call_options(int64_t n, Device device) const;
  int64_t hidden_;
  BideOptions opt_;
  bool row_support_ = false;
  std::array<int64_t, 4> row_ranges_{};
  std::shared_ptr<LinearLayer> w_proj_, r_proj_;
};

}  // namespace bg
