#include "bide_head.h"

#include <cmath>

namespace bg {

BideHead::BideHead(int64_t in_features, int64_t hidden, const BideOptions& opt, Generator& init,
                   const LinearSpec& linear)
    : hidden_(hidden), opt_(opt) {
  const int64_t bits = opt.code.bits;
  BG_CHECK(in_features > 0 && hidden > 0 && bits > 0, "bide_head",
           "sizes must be positive, got in ", in_features, ", hidden ", hidden, ", bits ", bits);
  const double in = double(in_features);
  w_proj_ = register_module("w_proj", make_linear(linear, in_features, hidden * bits, false, init,
                                                  std::sqrt(2.0 / (double(bits) * in))));
  r_proj_ = register_module("r_proj", make_linear(linear, in_features, hidden, false, init,
                                                  1.0 / std::sqrt(double(hidden) * in)));
}

BideHead::Distribution BideHead::distribution(const Tensor& x) const {
  BG_CHECK(x.ndim() == 2, "bide_head", "expected features (N, in), got ", shape_str(x.shape()));
  const int64_t n = x.size(0);
  return {w_proj_->forward(x).reshape({n, hidden_, int64_t(opt_.code.bits)}), r_proj_->forward(x)};
}

void BideHead::set_row_support(const std::array<int64_t, 4>& ranges) {
  const int64_t k = int64_t(opt_.code.count());
  BG_CHECK(ranges[0] >= 0 && ranges[0] < ranges[1] && ranges[1] <= ranges[2] &&
               ranges[2] <= ranges[3] && ranges[3] <= k,
           "bide_head", "row support [", ranges[0], ", ", ranges[1], ") [", ranges[2], ", ",
           ranges[3], ") is not two ordered ranges within [0, ", k, ")");
  row_support_ = true;
  row_ranges_ = ranges;
}

BideOptions BideHead::call_options(int64_t n, Device device) const {
  BideOptions o = opt_;
  // train.deterministic: an example's numbers never depend on the batch around it.
  o.batch_invariant = o.batch_invariant || compute_mode().deterministic;
  if (!row_support_) return o;
  std::vector<int64_t> table(size_t(4 * n));  // (4, N): row j holds bound j of every example
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t i = 0; i < n; ++i) table[size_t(j * n + i)] = row_ranges_[size_t(j)];
  bide_set_support(o, from_vector(table, {4, n}), device);
  return o;
}

Tensor BideHead::nll(const Tensor& x, const Tensor& y, const std::string& reduction) const {
  const Distribution d = distribution(x);
  return bide_nll(d.w, d.r, y, call_options(x.size(0), x.device()), reduction);
}
Tensor BideHead::log_prob(const Tensor& x, const Tensor& y) const {
  const Distribution d = distribution(x);
  return bide_log_prob(d.w, d.r, y, call_options(x.size(0), x.device()));
}
Tensor BideHead::cdf(const Tensor& x, const Tensor& patterns) const {
  const Distribution d = distribution(x);
  return bide_cdf(d.w, d.r, patterns, call_options(x.size(0), x.device()));
}
Tensor BideHead::quantile(const Tensor& x, const Tensor& q) const {
  const Distribution d = distribution(x);
  return bide_quantile(d.w, d.r, q, call_options(x.size(0), x.device()));
}
Tensor BideHead::sample(const Tensor& x, uint64_t seed) const {
  const Distribution d = distribution(x);
  return bide_sample(d.w, d.r, call_options(x.size(0), x.device()), seed);
}
BideMoments BideHead::moments(const Tensor& x) const {
  const Distribution d = distribution(x);
  return bide_moments(d.w, d.r, call_options(x.size(0), x.device()));
}

}  // namespace bg
