#include "bide_fit.h"

#include <cmath>

namespace bg {

BideFitModel::BideFitModel(int64_t n_dist, int64_t hidden, int bits, Generator& init)
    : hidden_(hidden), bits_(bits) {
  w_ = register_module("bide.w_embedding", std::make_shared<Embedding>(n_dist, hidden * bits, init,
                                                                       std::sqrt(2.0 / bits)));
  r_ = register_module(
      "bide.r_embedding",
      std::make_shared<Embedding>(n_dist, hidden, init, 1.0 / std::sqrt(double(hidden))));
}

std::pair<Tensor, Tensor> BideFitModel::forward(const Tensor& idx) const {
  const int64_t m = idx.size(0);
  return {w_->forward(idx).reshape({m, hidden_, int64_t(bits_)}), r_->forward(idx)};
}

Tensor BideFitModel::nll(const Tensor& idx, const Tensor& y, const BideOptions& opt) const {
  const auto [w, r] = forward(idx);
  return bide_nll(w, r, y, opt);
}

}  // namespace bg
