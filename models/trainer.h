// trainer.h: the training loop every command shares. An app parses its config, builds the model
// and the data, wraps them in a TrainTask (what one micro-batch's loss is, how to evaluate, what
// a checkpoint holds besides the parameters) and hands that to a Trainer, which owns the rest:
//   - the step loop, gradient accumulation, clipping by global norm;
//   - the optimizer (AdamW or SGD) and the LR schedule;
//   - evaluation every eval_interval steps and at the end;
//   - last.h5 (every evaluation, a stop, a signal) and best.h5 (best validation loss), written
//     atomically, and exact resume from last.h5 (parameters, optimizer state, step, RNG
//     positions through the task);
//   - SIGINT/SIGTERM (save and stop: a lone process abandons the current step's forward and
//     backward within one op where the task can undo its draws; otherwise after the step) and
//     the NaN/Inf stop naming the step;
//   - CUDA-graph capture of the whole step where the task allows it;
//   - the progress line (step, loss, lr, ms/step, tok/s, MFU, ETA) and metrics.csv;
//   - one hook after the backward pass and before the optimizer step;
//   - data parallel (set_process_group; trainer_parallel.cpp): each rank's share of a step's
//     micro-batches, the gradient sum over the ranks, ZeRO-1; rank 0 evaluates and writes.
#pragma once
#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/checkpoint.h"
#include "kernels/enum_names.h"
#include "core/distributed.h"
#include "core/grad_tree.h"
#include "core/optim.h"
#include "layers/module.h"

namespace bg {

class CudaGraph;

// A checkpoint attribute naming the file a checkpoint was imported from (`bitgrad import`): such
// a checkpoint has weights but no optimizer state, so resume refuses it.
inline constexpr const char* kImportedFromAttr = "imported_from";
// The header line of a run's metrics CSV (the metrics_csv attribute and metrics.csv).
inline constexpr const char* kMetricsHeader = "step,train_loss,val_loss,lr,ms_per_step\n";

// optimizer.type: AdamW (decoupled weight decay) or SGD with momentum.
#define BG_OPTIMIZER_KINDS(X) X(adamw, "adamw") X(sgd, "sgd")
BG_NAMED_ENUM(OptimizerKind, BG_OPTIMIZER_KINDS)

struct TrainerConfig {
  std::string command = "train";  // names the errors
  // last.h5, best.h5 and metrics.csv go here; empty: the trainer writes nothing (the app
  // writes its outputs itself after the run).
  std::string out_dir;
  bool resume = false;     // continue from out_dir/last.h5
  int64_t steps = 1;       // total optimizer steps
  int64_t stop_after = 0;  // stop (saving last.h5) after this many steps of this run; 0: never
  // Steps [profile_first, profile_first + profile_count) run inside the profiler's capture range
  // (profiler_capture: what `ncu --profile-from-start off` records); count 0: none.
  int64_t profile_first = 0, profile_count = 0;
  // Micro-batches per optimizer step, over all ranks together: each of N ranks runs
  // grad_accum / N of them, so a config means the same global batch at any world size.
  int64_t grad_accum = 1;
  // train.deterministic: the micro-batch gradients are summed in the fixed tree of
  // core/grad_tree.h (each from zero), so one process and N ranks give the same bits.
  bool tree_reduce = false;
  // train.shard_optimizer (ZeRO-1): on N ranks each keeps and updates 1/N of AdamW's state and
  // parameters, then the parameters are gathered; checkpoints hold the whole state.
  bool shard_optimizer = false;
  double grad_clip = 0;       // 0: no clipping
  // Steps [0, freeze_steps) change only the parameters named trainable_prefix...: the others'
  // gradients are zeroed before the clip (so the norm is the trainable ones') and the optimizer
  // leaves their values and state alone (model.freeze_trunk_steps: a new head on a pretrained
  // trunk). Not with cuda_graph.
  int64_t freeze_steps = 0;
  std::string trainable_prefix;
  int64_t eval_interval = 0;  // 0: no evaluation
  int64_t log_interval = 100;
  OptimizerKind optimizer = OptimizerKind::adamw;
  AdamWConfig adamw;                // sgd reads weight_decay
  double momentum = 0;              // sgd
  LrSchedule schedule;
  // Capture one step as a CUDA graph after two eager ones and replay it (CUDA only). The task
  // must issue the same work into the same memory every step: before_step copies the step's
  // inputs into fixed buffers. AdamW reads its per-step values from the device then.
  bool cuda_graph = false;
  // Record every step's loss (step_losses(); read from the device in batches at progress
  // lines), instead of only the losses of progress lines.
  bool record_every_loss = false;
  // Progress-line extras: tok/s when tokens_per_step > 0, MFU when flops_per_token and
  // peak_tflops are.
  double tokens_per_step = 0, flops_per_token = 0, peak_tflops = 0;
};

// What a Trainer trains.
class TrainTask {
 public:
  virtual ~TrainTask() = default;
  // The loss (a scalar) of one training micro-batch; draws its own data.
  virtual Tensor train_loss() = 0;
  // Mean validation loss (called with gradients off; the task switches its model to eval mode
  // and back). Needed when eval_interval > 0.
  virtual double validation_loss() { return NAN; }
  // Before step `step` (0-based): copy the step's inputs into fixed buffers (graph replay).
  virtual void before_step(int64_t /*step*/) {}
  // Under cuda_graph, right before each replay; `captured`: the graph was captured this step,
  // so the host drew this step's random numbers while capturing. A task whose step draws them
  // (dropout) shifts later replays' counters on the device (Generator::device_shift) and
  // advances its host streams as an eager step would.
  virtual void before_replay(bool /*captured*/) {}
  // What a checkpoint holds besides the parameters, the optimizer state and the trainer's own
  // attributes (step, optimizer_steps, best_val_loss, metrics_csv): the model's description,
  // the tokenizer, the RNG positions.
  virtual void save(CheckpointWriter& /*ck*/) const {}
  // On resume, before anything is loaded: check that `ck` fits this task (one-line errors) and
  // restore the task's own state (RNG positions).
  virtual void load(const CheckpointReader& /*ck*/, const std::string& /*path*/) {}
  // Extra progress-line fields ("ema 7.2018") after the loss; step_losses holds every step's
  // loss so far when the trainer records them (record_every_loss).
  virtual std::string progress_note(const std::vector<float>& /*step_losses*/) const { return ""; }
  // Data parallel: put the task's random streams (data and dropout) where micro-batch `index` of
  // this run starts in a one-process run (index counts from the run's first micro-batch, the
  // same at any world size), so each rank draws the samples one process would at that point.
  virtual void seek_micro_batch(int64_t /*index*/) {
    fail("train", "this task cannot run on several ranks");
  }
  // The positions of the task's random streams, and putting them back: a step stopped half-way
  // (Ctrl-C during a long CPU step) is abandoned and its draws undone, so the checkpoint saved
  // then resumes exactly. A task that returns none finishes its step before a signal stops it.
  virtual std::vector<uint64_t> stream_positions() const { return {}; }
  virtual void set_stream_positions(const std::vector<uint64_t>& /*positions*/) {}
};

// A task's two random streams, data and dropout, for a task whose every micro-batch takes the
// same number of counters from each: where micro-batch `index` of the run starts is the
// streams' origin plus index times that count, measured once by `draw_one` (one micro-batch's
// forward without gradients). What TrainTask::seek_micro_batch and stream_positions need.
class MicroBatchStreams {
 public:
  MicroBatchStreams(uint64_t data_seed, uint64_t dropout_seed)
      : data(data_seed), dropout(dropout_seed) {}
  Generator data, dropout;
  void seek(int64_t index, const std::function<void()>& draw_one);
  std::vector<uint64_t> positions() const { return {data.offset, dropout.offset}; }
  void set_positions(const std::vector<uint64_t>& p) {
    data.offset = p.at(0);
    dropout.offset = p.at(1);
  }

 private:
  bool counted_ = false;
  uint64_t data_origin_ = 0, dropout_origin_ = 0, data_per_micro_ = 0, dropout_per_micro_ = 0;
};

// Evaluation mode for a scope: the module back in training mode however the scope ends (a stop
// throws).
struct EvalModeScope {
  Module& module;
  explicit EvalModeScope(Module& m) : module(m) { module.train(false); }
  ~EvalModeScope() { module.train(true); }
};

struct TrainResult {
  int64_t steps_done = 0;  // steps completed, over every run of a resumed training
  int64_t steps_run = 0;   // steps this invocation ran (seconds is their time)
  double last_loss = NAN;  // the loss of the last progress line
  double best_val = INFINITY;
  double seconds = 0;       // this run's training time
  bool finished = false;    // reached `steps`
  int stop_signal = 0;      // SIGINT/SIGTERM that stopped it (0: none)
  std::string metrics_csv;  // step,train_loss,val_loss,lr,ms_per_step (progress lines)
};

// A metrics.csv (the trainer's own format: step,train_loss,val_loss,lr,ms_per_step, one row a
// progress line) read back for plots: steps are whole numbers in [0, 2^53), losses finite (the
// validation loss NaN where a row has none). Anything else is refused naming `origin` and the
// line: a loss that cannot be drawn is never drawn as if fine.
struct MetricsRow {
  int64_t step = 0;
  double train_loss = 0, val_loss = NAN;
};
std::vector<MetricsRow> parse_metrics_csv(const std::string& text, const std::string& origin);

class Trainer {
 public:
  // `params` must be the task's model parameters; the trainer builds the optimizer over them.
  Trainer(TrainerConfig cfg, FlatParameters& params, TrainTask& task);
  ~Trainer();
  // Runs after every backward pass (all micro-batches), before clipping and the optimizer.
  void after_backward(std::function<void(FlatParameters&)> hook) { hook_ = std::move(hook); }
  // Runs on rank 0 after each evaluation's checkpoint and metrics.csv are written, with the
  // metrics so far: an app's own per-evaluation outputs (train's loss.svg).
  void after_evaluation(std::function<void(const std::string& metrics_csv)> hook) {
    eval_hook_ = std::move(hook);
  }
  // Train as one rank of `group` (data parallel; it outlives the trainer): each rank runs its
  // share of every step's micro-batches, the gradients are summed over the ranks after the
  // backward, and rank 0 alone evaluates, prints and writes checkpoints.
  void set_process_group(ProcessGroup* group);
  // Trains to cfg.steps or until stopped. A non-finite loss or gradient norm, or a non-finite
  // validation loss, throws naming the step and the checkpoint that is kept.
  TrainResult run();
  // Every step's loss (record_every_loss).
  const std::vector<float>& step_losses() const { return step_losses_; }
  AdamW* adamw() { return adamw_.get(); }

 private:
  void save(const std::string& path);
  void resume();
  void step_once(int64_t step, double lr);
  void backward_micro_batches(int64_t step, Tensor* loss);
  void tree_backward(int64_t step, Tensor* loss);
  void reduce_tree_over_ranks(const std::vector<Tensor>& sums);
  int64_t run_micro_index(int64_t step, int64_t micro) const;
  bool lead() const { return group_->rank() == 0; }
  std::string checkpoint_note() const;
  void stop_if_nonfinite();
  void fold_losses(int64_t upto);
  // run()'s steps. RunStop: why the loop ended early (a signal, run.stop_after_steps, a signal
  // during an evaluation); ProgressPoint: what a progress line and metrics.csv's row say.
  struct RunStop {
    int signal = 0;  // the signal the ranks agreed to stop on (rank 0's)
    bool early = false, abandoned_eval = false;
  };
  struct ProgressPoint {
    int64_t step;
    double lr, val;
    bool evaluated;
    double elapsed, ms;  // seconds since the run began; ms per step since the previous line
  };
  void prepare_step_buffers();
  bool should_stop(int64_t step, RunStop* stop);
  void enter_stage(int64_t step, std::unique_ptr<CudaGraph>& graph);
  bool train_step(int64_t step, double lr, std::unique_ptr<CudaGraph>& graph, RunStop* stop);
  void read_last_loss(int64_t step);
  bool evaluate(int64_t step, double* val, RunStop* stop);
  void print_progress(const ProgressPoint& p);
  void record_metrics(const ProgressPoint& p);
  void save_evaluated(int64_t step, double val);
  TrainResult finish(int64_t step, const RunStop& stop, double seconds);

  TrainerConfig cfg_;
  FlatParameters& params_;
  TrainTask& task_;
  Device device_;
  std::unique_ptr<AdamW> adamw_;
  std::unique_ptr<SGD> sgd_;
  std::function<void(FlatParameters&)> hook_;
  std::function<void(const std::string&)> eval_hook_;
  ProcessGroup solo_;
  ProcessGroup* group_ = &solo_;
  int64_t first_step_ = 0;
  // Data parallel, default mode: the gradient buffer cut into buckets of whole parameters, each
  // summed over the ranks as soon as the backward has finished its parameters.
  struct GradBucket {
    int64_t begin = 0, end = 0;
    int params = 0;
  };
  std::vector<GradBucket> buckets_;
  std::unordered_map<const TensorImpl*, size_t> bucket_of_;
  void build_buckets();
  // ZeRO-1: this rank's range of the flat parameters, and the whole moments gathered for a save.
  bool sharded() const { return group_->size() > 1 && cfg_.shard_optimizer; }
  Tensor gather_shards(const Tensor& mine, int64_t total);
  void gather_optimizer_state();
  Tensor full_m_, full_v_;
  NonFiniteWatch loss_watch_, grad_watch_;
  TrainResult result_;
  int64_t saved_step_ = -1;  // the step of the last.h5 this run can fall back to (-1: none)
  // The signal flag kernels check while a step's passes or an evaluation run (core/stop.h):
  // a lone process, eager steps, a task that can undo its draws. Null: stops wait for the step.
  const std::atomic<int>* stop_flag_ = nullptr;
  Tensor last_loss_;         // the last micro-batch's loss (device scalar)
  // record_every_loss / graphs: per-step losses on the device, folded into step_losses_.
  Tensor device_losses_, loss_buf_, hyper_, schedule_table_;
  bool in_stage2_ = false;  // the optimizer's weight decay is the second stage's
  FrozenRanges frozen_ranges_;  // what steps [0, freeze_steps) leave alone
  std::vector<float> step_losses_;
  int64_t folded_ = 0;
};

}  // namespace bg
