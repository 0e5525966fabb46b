// lm_run.h: a language-model training run, from its settings to its outputs: the data read and
// split, the model built (models/lm_builder.h), one rank of a data-parallel group joined when the
// environment names one, the Trainer run (checkpoints, metrics.csv, the config and the loss curve
// in run.out_dir), and a sample of the trained model printed at the end. `bitgrad train` is its
// config reader and this call; check-determinism runs it N times.
#pragma once
#include <functional>
#include <string>

#include "core/compute_mode.h"
#include "core/distributed.h"
#include "data/lm_data.h"
#include "models/lm_builder.h"
#include "models/trainer.h"

namespace bg {

struct LanguageModelRun {
  std::string device = "auto";  // run.device
  uint64_t seed = 1337;         // run.seed: initialisation, data, dropout and sample streams
  DataSpec data;
  ModelSpec model;
  int64_t batch = 64, eval_iters = 20;  // train.batch_size, train.eval_iters
  ComputeMode mode;  // train.precision, train.deterministic, train.matmul, lmul.* (unresolved)
  bool resume_mode_change = false;  // run.resume_mode_change
  // run.out_dir, run.resume, run.stop_after_steps, train.{steps, grad_accum, eval_interval,
  // log_interval, grad_clip}, optimizer.*, schedule.*: the Trainer's own settings, here with a
  // training run's defaults.
  TrainerConfig trainer = [] {
    TrainerConfig t;
    t.steps = 1000;
    t.eval_interval = 250;
    t.grad_clip = 1.0;
    return t;
  }();
};

// Its declared fields (core/settings.h): run.*, data.*, model.* and train.* (the compute mode's,
// optimizer's and schedule's keys have readers of their own, shared with fit-bide).
const Settings<LanguageModelRun>& run_settings();

// The files a run writes into run.out_dir.
inline constexpr const char* kRunOutputs[] = {"last.h5", "best.h5", "config.yaml", "metrics.csv",
                                              "loss.svg"};

// What the run asks of its caller: the config as read (its path, and the effective YAML written
// to config.yaml and into checkpoints), and the loss curve's drawing (SVG text from a
// metrics.csv; drawn at each evaluation and at the end).
struct RunContext {
  std::string config_path, effective_yaml;
  std::function<std::string(const std::string& metrics_csv)> draw_losses;
};

// Where a run computes: its rank in the data-parallel group, the device and the resolved mode.
struct RunPlace {
  const DistEnv& dist;
  ProcessGroup& group;
  Device device;
  ComputeMode mode;
};
// What the progress line needs of the model besides its parameters.
struct TrainedModel {
  FlatParameters* params;
  double flops_per_token = 0;
  int64_t context = 0;  // values or tokens a window holds
};
// The part every run shares once its model and task are built: the Trainer over them, with
// config.yaml and loss.svg in run.out_dir, the memory line and the closing "done" line.
TrainResult run_trainer(const LanguageModelRun& run, const RunContext& context,
                        const RunPlace& place, const TrainedModel& model, TrainTask& task);

// Trains a token model (model.type char_mlp or gpt) at `place`, which models/run.h's train_run
// has set up; as train_run returns.
int train_token_model(const LanguageModelRun& run, const RunContext& context,
                      const RunPlace& place);

}  // namespace bg
