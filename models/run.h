// run.h: what every training run shares, whatever its model: its settings (TrainRun: run.*,
// data.*, model.*, train.*, the compute mode, optimizer.* and schedule.*, one declared list), the
// outputs it writes, where it computes (its rank, device and mode), and the Trainer driven over
// a model and its task (checkpoints, metrics.csv, config.yaml and the loss curve in
// run.out_dir). models/train_run.h is the entry; a language model's run (models/lm_run.h) and a
// forecaster's (models/forecast/forecast_run.h) build their model and task and call
// run_trainer.
#pragma once
#include <functional>
#include <string>

#include "core/compute_mode.h"
#include "core/distributed.h"
#include "data/data_spec.h"
#include "models/model_spec.h"
#include "models/trainer.h"

namespace bg {

// A training run's settings, for every model.
struct TrainRun {
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
    t.momentum = 0.9;  // optimizer.momentum's default (sgd)
    return t;
  }();
};

// Its declared fields (core/settings.h): run.*, data.*, model.*, train.*, the compute mode's
// (core/compute_mode.h), optimizer.* and schedule.* (core/optim_settings.h).
const Settings<TrainRun>& run_settings();

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
TrainResult run_trainer(const TrainRun& run, const RunContext& context,
                        const RunPlace& place, const TrainedModel& model, TrainTask& task);

}  // namespace bg
