// bide_fit.h: the multi-distribution BIDE fit of the SICK BIDE paper as a model. Each of N
// distributions owns one learned row of two embeddings, reshaped into its W (H x B) and r (H);
// its distribution over the 2^B bit patterns is softmax(r . relu(W b_k)) (core/bide.h), and the
// loss is the mean NLL of observed patterns, normalised exactly by SICK.
#pragma once
#include <memory>
#include <utility>

#include "core/bide.h"
#include "models/bide_fit/bide_fit_data.h"
#include "layers/embedding.h"
#include "models/trainer.h"

namespace bg {

class BideFitModel : public Module {
 public:
  // The paper's init: W rows N(0, 2 / B), r rows N(0, 1 / H), drawn from `init` in that order.
  // Parameters: bide.w_embedding.weight (N, H * B), bide.r_embedding.weight (N, H).
  BideFitModel(int64_t n_dist, int64_t hidden, int bits, Generator& init);
  // W (M, H, B) and r (M, H) of the distributions idx (M) i64.
  std::pair<Tensor, Tensor> forward(const Tensor& idx) const;
  // Mean NLL of patterns y (M) i64, y_m drawn from distribution idx_m.
  Tensor nll(const Tensor& idx, const Tensor& y, const BideOptions& opt) const;
  int64_t hidden() const { return hidden_; }
  int bits() const { return bits_; }

 private:
  int64_t hidden_;
  int bits_;
  std::shared_ptr<Embedding> w_, r_;
};

// The bias-corrected exponential moving average of the losses (factor beta): fit-bide's
// progress figure.
double debiased_ema(const std::vector<float>& losses, double beta);

// fit-bide's TrainTask: one micro-batch is the step's targets, every distribution's batch at
// once (y_all holds a row of targets per step, uploaded up front).
struct BideFitTask : TrainTask {
  BideFitTask(const BideFitModel& m, const Tensor& i, const Tensor& y_all, const BideOptions& o,
              double beta);
  void before_step(int64_t step) override;
  Tensor train_loss() override { return model.nll(idx, y, opt); }
  std::string progress_note(const std::vector<float>& losses) const override;
  const BideFitModel& model;
  Tensor idx, y_all;
  const BideOptions& opt;
  double ema;
  Tensor y;
};

// A whole fit of cfg's distributions to `data` on `device`: the supports of the evaluation rows
// (one per distribution) and the training rows, the model (the paper's initialisation from
// seed + 1), and the Trainer's run of it (on a GPU captured once as a CUDA graph: a step's ~30
// small kernels cost more to launch than to run). Held by pointer: the trainer refers to the
// rest.
struct BideFit {
  BideOptions train_options, eval_options;
  std::unique_ptr<BideFitModel> model;
  std::unique_ptr<FlatParameters> params;
  std::unique_ptr<BideFitTask> task;
  std::unique_ptr<Trainer> trainer;
  TrainResult result;
};
std::unique_ptr<BideFit> fit_distributions(const FitConfig& cfg, const FitData& data,
                                           Device device);

}  // namespace bg
