// train.h: what `bitgrad train` passes between reading its config (train_config.cpp) and
// running (train.cpp).
#pragma once
#include <string>
#include <vector>

#include "core/compute_mode.h"
#include "core/optim.h"
#include "models/char_mlp.h"
#include "models/gpt.h"
#include "models/trainer.h"

namespace bg {
class ConfigReader;
}

namespace bg::cli {

struct TrainConfig {
  std::string device, data_path, model_type, tokenizer, gpt2_dir, train_bin, val_bin;
  uint64_t seed = 0;
  double val_fraction = 0.1;
  CharMLPConfig model;
  GPTConfig gpt;
  int64_t batch = 0, eval_iters = 0;
  ComputeMode mode;  // train.precision, train.deterministic, train.matmul, lmul.* (unresolved)
  AttentionChoice attention = AttentionChoice::automatic;  // model.attention
  bool resume_mode_change = false;                         // run.resume_mode_change
  // run.out_dir, run.resume, run.stop_after_steps, train.{steps, grad_accum, eval_interval,
  // log_interval, grad_clip}, optimizer.*, schedule.*: the Trainer's own settings.
  TrainerConfig trainer;
};

TrainConfig read_train_config(ConfigReader& r);
// The files a run of `cfg` reads (besides its config): the data, the tokenizer's files.
std::vector<std::string> train_inputs(const TrainConfig& cfg);
// The files a run writes into run.out_dir.
inline constexpr const char* kRunOutputs[] = {"last.h5", "best.h5", "config.yaml", "metrics.csv",
                                              "loss.svg"};

// The train and validation loss against step, from the metrics CSV (resumed runs included).
std::string loss_plot(const std::string& metrics_csv);

}  // namespace bg::cli
