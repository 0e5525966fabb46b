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

Tensor BideHead::nll(const Tensor& x, const Tensor& y, const std::string& reduction) const {
  const Distribution d = distribution(x);
  return bide_nll(d.w, d.r, y, opt_, reduction);
}
Tensor BideHead::log_prob(const Tensor& x, const Tensor& y) const {
  const Distribution d = distribution(x);
  return bide_log_prob(d.w, d.r, y, opt_);
}
Tensor BideHead::cdf(const Tensor& x, const Tensor& patterns) const {
  const Distribution d = distribution(x);
  return bide_cdf(d.w, d.r, patterns, opt_);
}
Tensor BideHead::quantile(const Tensor& x, const Tensor& q) const {
  const Distribution d = distribution(x);
  return bide_quantile(d.w, d.r, q, opt_);
}
Tensor BideHead::sample(const Tensor& x, uint64_t seed) const {
  const Distribution d = distribution(x);
  return bide_sample(d.w, d.r, opt_, seed);
}
BideMoments BideHead::moments(const Tensor& x) const {
  const Distribution d = distribution(x);
  return bide_moments(d.w, d.r, opt_);
}

}  // namespace bg
