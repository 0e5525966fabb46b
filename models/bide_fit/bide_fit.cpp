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

namespace bg {

std::unique_ptr<BideFit> fit_distributions(const FitConfig& cfg, const FitData& data,
                                           Device device) {
  const int64_t n_dist = int64_t(cfg.dists.size()), per_step = n_dist * cfg.batch;
  auto fit = std::make_unique<BideFit>();
  const Tensor y_all = from_vector(data.train_y, {cfg.steps, per_step}, device);
  std::vector<int64_t> idx_v(static_cast<size_t>(per_step));
  for (int64_t i = 0; i < per_step; ++i) idx_v[size_t(i)] = i / cfg.batch;
  const Tensor idx = from_vector(idx_v, {per_step}, device);
  // The support per distribution (eval rows) and per training row (rows d * batch + i).
  fit->train_options = fit->eval_options = cfg.bide;
  if (cfg.range != RangeMode::all) {
    const Tensor table = support_table(cfg.bide.code, data.dists);
    bide_set_support(fit->eval_options, table, device);
    const std::vector<int64_t> t = table.to_vector<int64_t>();
    std::vector<int64_t> rows(static_cast<size_t>(4 * per_step));
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t i = 0; i < per_step; ++i)
        rows[size_t(j * per_step + i)] = t[size_t(j * n_dist + idx_v[size_t(i)])];
    bide_set_support(fit->train_options, from_vector(rows, {4, per_step}), device);
  }
  // One embedding row per distribution -> W (H x B) and r (H).
  Generator init(cfg.seed + 1);
  fit->model = std::make_unique<BideFitModel>(n_dist, cfg.hidden, cfg.bide.code.bits, init);
  if (cfg.mode.deterministic) fit->model->set_compute_mode(cfg.mode.on(device));
  fit->params = std::make_unique<FlatParameters>(fit->model->named_parameters(), device);
  fit->task = std::make_unique<BideFitTask>(*fit->model, idx, y_all, fit->train_options, cfg.ema);
  TrainerConfig tc;
  tc.command = "fit-bide";
  tc.steps = cfg.steps;
  tc.log_interval = cfg.log_interval;
  tc.adamw = cfg.adamw;
  tc.schedule = cfg.schedule;
  tc.cuda_graph = cfg.cuda_graph;
  tc.record_every_loss = true;
  fit->trainer = std::make_unique<Trainer>(tc, *fit->params, *fit->task);
  fit->result = fit->trainer->run();
  return fit;
}

}  // namespace bg
