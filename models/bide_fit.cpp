#include "bide_fit.h"

#include <cmath>
#include <cstdio>

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

double debiased_ema(const std::vector<float>& losses, double beta) {
  double e = 0;
  for (float v : losses) e = beta * e + (1 - beta) * v;
  return e / (1 - std::pow(beta, double(losses.size())));
}

BideFitTask::BideFitTask(const BideFitModel& m, const Tensor& i, const Tensor& y_all,
                         const BideOptions& o, double beta)
    : model(m),
      idx(i),
      y_all(y_all),
      opt(o),
      ema(beta),
      y(empty({i.size(0)}, DType::i64, i.device())) {}

void BideFitTask::before_step(int64_t step) {
  y.copy_(y_all.slice(0, step, step + 1).reshape({idx.size(0)}));
}

std::string BideFitTask::progress_note(const std::vector<float>& losses) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "ema %.4f", debiased_ema(losses, ema));
  return buf;
}

}  // namespace bg
