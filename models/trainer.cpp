#include "trainer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/files.h"
#include "core/graph.h"
#include "core/ops.h"
#include "core/stop.h"
#include "data/csv.h"

namespace bg {

void MicroBatchStreams::seek(int64_t index, const std::function<void()>& draw_one) {
  if (!counted_) {  // one forward without gradients counts a micro-batch's draws
    data_origin_ = data.offset;
    dropout_origin_ = dropout.offset;
    {
      NoGradGuard no_grad;
      draw_one();
    }
    data_per_micro_ = data.offset - data_origin_;
    dropout_per_micro_ = dropout.offset - dropout_origin_;
    counted_ = true;
  }
  data.offset = data_origin_ + uint64_t(index) * data_per_micro_;
  dropout.offset = dropout_origin_ + uint64_t(index) * dropout_per_micro_;
}
namespace {

// SIGINT / SIGTERM ask the loop to save a checkpoint and stop after the current step.
std::atomic<int> g_stop_signal{0};
extern "C" void request_stop(int sig) { g_stop_signal = sig; }

std::string format_duration(double s) {
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  return buf;
}

// Restores the previous SIGINT/SIGTERM handlers when the run ends, however it ends.
struct SignalScope {
  void (*old_int)(int), (*old_term)(int);
  SignalScope() {
    g_stop_signal = 0;
    old_int = std::signal(SIGINT, request_stop);
    old_term = std::signal(SIGTERM, request_stop);
  }
  ~SignalScope() {
    std::signal(SIGINT, old_int);
    std::signal(SIGTERM, old_term);
  }
};

}  // namespace

std::vector<MetricsRow> parse_metrics_csv(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  BG_CHECK(line.rfind("step,train_loss,val_loss", 0) == 0, "metrics", origin,
           ": not a bitgrad metrics.csv (its header is '", line.substr(0, 60),
           "', expected step,train_loss,val_loss,...)");
  std::vector<MetricsRow> rows;
  for (int64_t line_no = 2; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    std::vector<std::string> f = csv_fields(line, origin, line_no);
    f.resize(std::max<size_t>(f.size(), 3));  // a row without a validation loss
    double v[3] = {0, 0, NAN};
    for (int i = 0; i < 3; ++i) {
      if (i == 2 && f[i].empty()) continue;  // no validation at this step
      char* end = nullptr;
      v[i] = std::strtod(f[i].c_str(), &end);
      BG_CHECK(!f[i].empty() && *end == '\0' && std::isfinite(v[i]), "metrics", origin, ":",
               line_no, ": '", f[i], "' is not a finite number");
    }
    BG_CHECK(v[0] >= 0 && v[0] < 9007199254740992.0 && v[0] == std::floor(v[0]), "metrics", origin,
             ":", line_no, ": step '", f[0], "' is not a whole number in [0, 2^53)");
    rows.push_back({int64_t(v[0]), v[1], v[2]});
  }
  return rows;
}

Trainer::Trainer(TrainerConfig cfg, FlatParameters& params, TrainTask& task)
    : cfg_(std::move(cfg)),
      params_(params),
      task_(task),
      device_(params.values().device()),
      loss_watch_(device_),
      grad_watch_(device_) {
  switch (cfg_.optimizer) {
    case OptimizerKind::adamw:
      adamw_ = std::make_unique<AdamW>(params_, cfg_.adamw);
      break;
    case OptimizerKind::sgd:
      sgd_ = std::make_unique<SGD>(params_, cfg_.momentum, cfg_.adamw.weight_decay);
      break;
  }
  cfg_.cuda_graph = cfg_.cuda_graph && device_.is_cuda();
  BG_CHECK(!cfg_.cuda_graph || (adamw_ && cfg_.grad_accum == 1), cfg_.command.c_str(),
           "a CUDA-graph step runs AdamW on one micro-batch (set train.grad_accum: 1 and the "
           "adamw optimizer, or train.cuda_graph: false)");
  // A captured step number never changes, so under a graph the non-finite watch reads the
  // recorded losses (a non-finite gradient norm shows in the next step's loss).
  if (cfg_.cuda_graph) cfg_.record_every_loss = true;
  BG_CHECK(!cfg_.cuda_graph || cfg_.freeze_steps == 0, cfg_.command.c_str(),
           "a CUDA-graph step cannot change which parameters it updates");
  if (cfg_.freeze_steps > 0) {
    frozen_ranges_ = ranges_not_named(params_, cfg_.trainable_prefix);
    BG_CHECK(frozen_ranges_.size() != 1 || frozen_ranges_[0].first != 0 ||
                 frozen_ranges_[0].second != params_.numel(),
             cfg_.command.c_str(), "no parameter is named ", cfg_.trainable_prefix,
             "...: freezing the others leaves nothing to train");
  }
  result_.metrics_csv = kMetricsHeader;
}

Trainer::~Trainer() = default;

// Checkpoints: the parameters under the model's state_dict names, the optimizer state in a group
// of its own (the root holds exactly the state_dict), the trainer's attributes, then the task's.
void Trainer::save(const std::string& path) {
  CheckpointWriter ck(path);
  for (const auto& [name, t] : params_.named()) ck.tensor(name, t);
  if (adamw_) {
    ck.tensor("optimizer/exp_avg", sharded() ? full_m_ : adamw_->exp_avg());
    ck.tensor("optimizer/exp_avg_sq", sharded() ? full_v_ : adamw_->exp_avg_sq());
  } else {
    ck.tensor("optimizer/momentum_buffer", sgd_->momentum_buffer());
  }
  task_.save(ck);
  ck.attr("step", result_.steps_done);
  ck.attr("optimizer_steps", adamw_ ? adamw_->steps() : result_.steps_done);
  ck.attr("best_val_loss", result_.best_val);
  ck.attr("metrics_csv", result_.metrics_csv);
  ck.commit();
}

void Trainer::resume() {
  const std::string path = cfg_.out_dir + "/last.h5";
  CheckpointReader ck(path);
  release_input(path);  // the run's own checkpoint: this run writes it again
  BG_CHECK(!ck.has_attr(kImportedFromAttr), cfg_.command.c_str(), path,
           " was written by bitgrad import from ", ck.str_attr(kImportedFromAttr),
           ": it has no optimizer state to resume; start a run from the source with "
           "model.init_from");
  task_.load(ck, path);
  load_parameters(ck, params_.named());
  // bitgrad-train-1 kept the optimizer state at the root as optimizer.*.
  const std::string opt = ck.has("optimizer/exp_avg") || ck.has("optimizer/momentum_buffer")
                              ? "optimizer/"
                              : "optimizer.";
  if (adamw_) {
    // The whole state is saved; a sharded optimizer keeps its range of it.
    const int64_t b = adamw_->shard_begin(), e = adamw_->shard_end();
    const Shape whole = {params_.numel()};
    adamw_->exp_avg().copy_(ck.finite_tensor(opt + "exp_avg", DType::f32, whole).slice(0, b, e));
    adamw_->exp_avg_sq().copy_(
        ck.finite_tensor(opt + "exp_avg_sq", DType::f32, whole).slice(0, b, e));
    adamw_->set_steps(ck.int_attr("optimizer_steps"));
  } else {
    sgd_->momentum_buffer().copy_(
        ck.finite_tensor(opt + "momentum_buffer", DType::f32, sgd_->momentum_buffer().shape()));
  }
  result_.steps_done = ck.int_attr("step");
  result_.best_val = ck.float_attr("best_val_loss");
  result_.metrics_csv = ck.str_attr("metrics_csv");
  parse_metrics_csv(result_.metrics_csv, path + "'s attribute metrics_csv");  // what the plot reads
  BG_CHECK(result_.steps_done <= cfg_.steps, cfg_.command.c_str(), path, " is at step ",
           result_.steps_done, ", past train.steps = ", cfg_.steps);
  saved_step_ = result_.steps_done;
  std::printf("resumed from %s at step %lld\n", path.c_str(), (long long)result_.steps_done);
}

std::string Trainer::checkpoint_note() const {
  const std::string last = cfg_.out_dir + "/last.h5";
  if (cfg_.out_dir.empty()) return "nothing was written";
  if (saved_step_ >= 0)
    return str_cat("the last checkpoint, ", last, " (step ", saved_step_, "), is kept as it was");
  return str_cat("no checkpoint was saved by this run (", last, " is first written at step ",
                 cfg_.eval_interval > 0 ? std::min(cfg_.eval_interval, cfg_.steps) : cfg_.steps,
                 ")");
}

// Non-finite losses and gradient norms are caught on the device at the step they happen and
// read when a progress line syncs anyway; nothing non-finite is ever saved.
void Trainer::stop_if_nonfinite() {
  const int64_t at_loss = loss_watch_.first_step(), at_grad = grad_watch_.first_step();
  if (at_loss == 0 && at_grad == 0) return;
  const bool is_loss = at_loss != 0 && (at_grad == 0 || at_loss <= at_grad);
  fail(cfg_.command.c_str(), is_loss ? "the loss" : "the gradient norm",
       " became non-finite at step ", is_loss ? at_loss : at_grad,
       "; stopping: ", checkpoint_note());
}

// Per-step losses [folded_, upto) from the device into step_losses_.
void Trainer::fold_losses(int64_t upto) {
  const std::vector<float> l = device_losses_.slice(0, folded_, upto).to_vector<float>();
  for (float v : l) {
    if (!std::isfinite(v))
      fail(cfg_.command.c_str(), "the loss became non-finite at step ", folded_ + 1,
           "; stopping: ", checkpoint_note());
    step_losses_.push_back(v);
    ++folded_;
  }
}

// One optimizer step: the micro-batches' backward (and, across ranks, the gradient sum), the
// hook, the clip factor, the update. Under a CUDA graph the same calls are captured once; the
// watches then run on the recorded losses instead (a captured step number would never change).
void Trainer::step_once(int64_t step, double lr) {
  Tensor loss;
  {  // a signal may abandon the passes (StopRequested), never the update below
    const StopCheckScope stoppable(stop_flag_);
    if (cfg_.tree_reduce && cfg_.grad_accum > 1)
      tree_backward(step, &loss);
    else
      backward_micro_batches(step, &loss);
  }
  if (hook_) hook_(params_);
  const bool frozen = step < cfg_.freeze_steps;
  if (frozen)
    for (const auto& [b, e] : frozen_ranges_) params_.grads().slice(0, b, e).fill_(0.0);
  if (adamw_) adamw_->set_frozen(frozen ? frozen_ranges_ : FrozenRanges());
  if (sgd_) sgd_->set_frozen(frozen ? frozen_ranges_ : FrozenRanges());
  Tensor scale;
  if (cfg_.grad_clip > 0) {
    const ClipResult clip = clip_grad_norm(params_, cfg_.grad_clip);
    scale = clip.scale;
    if (!cfg_.cuda_graph) grad_watch_.check(clip.norm, step + 1);
  } else if (!cfg_.cuda_graph) {
    grad_watch_.check(grad_norm(params_), step + 1);
  }
  if (cfg_.cuda_graph)
    adamw_->step_device(hyper_, scale);
  else if (adamw_)
    adamw_->step(lr, scale);
  else
    sgd_->step(lr, scale);
  if (sharded()) {  // each rank updated its range: the whole parameters, everywhere
    const Tensor mine = params_.values().slice(0, adamw_->shard_begin(), adamw_->shard_end());
    params_.values().copy_(gather_shards(mine, params_.numel()));
  }
  last_loss_ = loss;
  if (cfg_.record_every_loss) loss_buf_.copy_(loss.detach().to(DType::f32).reshape({1}));
}

void Trainer::prepare_step_buffers() {
  if (cfg_.record_every_loss) {
    device_losses_ = zeros({cfg_.steps}, DType::f32, device_);
    loss_buf_ = zeros({1}, DType::f32, device_);
    folded_ = result_.steps_done;
  }
  // A graph step reads AdamW's {lr, 1 - beta1^t, 1 - beta2^t} from a device buffer, copied from
  // a table of every step's values before each replay.
  if (cfg_.cuda_graph) {
    hyper_ = empty({3}, DType::f32, device_);
    std::vector<float> table;
    for (int64_t st = 0; st < cfg_.steps; ++st)
      for (float v : adamw_->hyper_values(st + 1, cfg_.schedule.at(st))) table.push_back(v);
    schedule_table_ = from_vector(table, {cfg_.steps, 3}, device_);
  }
}

bool Trainer::should_stop(int64_t step, RunStop* stop) {
  // Every rank stops at the step rank 0 saw the signal before: one consistent checkpoint.
  if (group_->agree(g_stop_signal != 0)) {
    stop->signal = g_stop_signal ? int(g_stop_signal) : SIGINT;
    return true;
  }
  if (cfg_.stop_after > 0 && step - first_step_ == cfg_.stop_after) {
    stop->early = true;
    return true;
  }
  return false;
}

void Trainer::enter_stage(int64_t step, std::unique_ptr<CudaGraph>& graph) {
  if (cfg_.schedule.in_stage2(step) == in_stage2_) return;
  // The weight decay is a kernel argument, so a captured graph is captured again.
  in_stage2_ = !in_stage2_;
  const double wd = in_stage2_ ? cfg_.schedule.stage2_weight_decay : cfg_.adamw.weight_decay;
  if (adamw_) adamw_->set_weight_decay(wd);
  if (sgd_) sgd_->set_weight_decay(wd);
  graph.reset();
}

bool Trainer::train_step(int64_t step, double lr, std::unique_ptr<CudaGraph>& graph,
                         RunStop* stop) {
  const std::vector<uint64_t> streams =
      stop_flag_ ? task_.stream_positions() : std::vector<uint64_t>();
  task_.before_step(step);
  if (cfg_.profile_count > 0 && step == cfg_.profile_first) profiler_capture(device_, true);
  if (cfg_.cuda_graph) hyper_.copy_(schedule_table_.slice(0, step, step + 1).reshape({3}));
  if (cfg_.cuda_graph && step - first_step_ >= 2) {  // two eager steps warm caches first
    const bool captured = !graph;
    if (captured) graph = std::make_unique<CudaGraph>(device_, [&] { step_once(step, lr); });
    task_.before_replay(captured);
    graph->replay();
  } else {
    try {
      step_once(step, lr);
    } catch (const StopRequested&) {  // the step is abandoned: its draws are undone
      task_.set_stream_positions(streams);
      stop->signal = int(g_stop_signal);
      return false;
    }
  }
  if (cfg_.profile_count > 0 && step + 1 == cfg_.profile_first + cfg_.profile_count)
    profiler_capture(device_, false);
  if (cfg_.record_every_loss) device_losses_.slice(0, step, step + 1).copy_(loss_buf_);
  return true;
}

void Trainer::read_last_loss(int64_t step) {
  if (cfg_.record_every_loss) {
    fold_losses(step + 1);
    result_.last_loss = step_losses_.back();
  } else if (group_->size() > 1) {  // the ranks' mean of their last micro-batch's loss
    const Tensor l = last_loss_.detach().to(DType::f32).reshape({1}).clone();
    group_->all_reduce_sum(l);
    result_.last_loss = l.item() / double(group_->size());
  } else {
    result_.last_loss = last_loss_.item();  // syncs the device
  }
  stop_if_nonfinite();
}

bool Trainer::evaluate(int64_t step, double* val, RunStop* stop) {
  NoGradGuard no_grad;
  try {
    const StopCheckScope stoppable(stop_flag_);
    *val = task_.validation_loss();
  } catch (const StopRequested&) {  // the step is done; only its evaluation is skipped
    stop->signal = int(g_stop_signal);
    stop->abandoned_eval = true;
    return false;
  }
  BG_CHECK(std::isfinite(*val), cfg_.command.c_str(), "the validation loss is ", *val,
           " at step ", step + 1, "; stopping: ", checkpoint_note());
  return true;
}

void Trainer::print_progress(const ProgressPoint& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "step %6lld/%lld | loss %.4f", (long long)(p.step + 1),
                (long long)cfg_.steps, result_.last_loss);
  std::string line = buf;
  if (cfg_.eval_interval > 0) {
    // The loss's own digits: %.4f as the training loss, whatever its size (cutting text to a
    // width would show 2.3e9 as 231769).
    std::snprintf(buf, sizeof buf, "val %.4f", p.val);
    line += " | " + (p.evaluated ? std::string(buf) : std::string(10, ' '));
  }
  const std::string note = task_.progress_note(step_losses_);
  if (!note.empty()) line += " | " + note;
  std::snprintf(buf, sizeof buf, " | lr %.2e | %.2f ms/step", p.lr, p.ms);
  line += buf;
  const double tokens_per_s = cfg_.tokens_per_step * 1000.0 / p.ms;
  if (cfg_.tokens_per_step > 0) {
    std::snprintf(buf, sizeof buf, " | %.0f tok/s", tokens_per_s);
    line += buf;
  }
  if (cfg_.peak_tflops > 0 && cfg_.flops_per_token > 0) {
    std::snprintf(buf, sizeof buf, " | MFU %.1f%%",
                  100.0 * cfg_.flops_per_token * tokens_per_s / (cfg_.peak_tflops * 1e12));
    line += buf;
  }
  // This invocation's end: run.stop_after_steps (check-determinism's short runs) or train.steps.
  const int64_t end =
      cfg_.stop_after > 0 ? std::min(cfg_.steps, first_step_ + cfg_.stop_after) : cfg_.steps;
  line += " | ETA " + format_duration(p.elapsed / double(p.step + 1 - first_step_) *
                                      double(std::max<int64_t>(0, end - p.step - 1)));
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

void Trainer::record_metrics(const ProgressPoint& p) {
  // Losses and the rate to 9 significant digits (every f32 value exactly; %f would print a
  // rate of 6e-5 as 0.000060 and a loss of 1e-7 as 0).
  char buf[96];
  std::snprintf(buf, sizeof buf, "%lld,%.9g,", (long long)(p.step + 1), result_.last_loss);
  result_.metrics_csv += buf;
  if (p.evaluated) {
    std::snprintf(buf, sizeof buf, "%.9g", p.val);
    result_.metrics_csv += buf;
  }
  std::snprintf(buf, sizeof buf, ",%.9g,%.3f\n", p.lr, p.ms);
  result_.metrics_csv += buf;
}

void Trainer::save_evaluated(int64_t step, double val) {
  result_.steps_done = step + 1;
  // The streams where one process would have them after this step.
  if (group_->size() > 1) task_.seek_micro_batch((step + 1 - first_step_) * cfg_.grad_accum);
  const bool improved = val < result_.best_val;
  if (improved) result_.best_val = val;
  save(cfg_.out_dir + "/last.h5");
  saved_step_ = result_.steps_done;
  if (improved) save(cfg_.out_dir + "/best.h5");
  write_file_atomic(cfg_.out_dir + "/metrics.csv", result_.metrics_csv);
  if (eval_hook_) eval_hook_(result_.metrics_csv);
}

TrainResult Trainer::finish(int64_t step, const RunStop& stop, double seconds) {
  if (adamw_ && cfg_.cuda_graph) adamw_->set_steps(step);  // the capture counted as a step
  group_->wait();
  synchronize(device_);
  result_.seconds = seconds;
  result_.steps_done = step;
  result_.steps_run = step - first_step_;
  result_.stop_signal = stop.signal;
  if (!stop.signal && !stop.early) {
    result_.finished = true;
    return result_;
  }
  const bool checkpoints = !cfg_.out_dir.empty();
  const std::string last_path = cfg_.out_dir + "/last.h5";
  stop_if_nonfinite();  // a stop saves the state: never a non-finite one
  if (cfg_.record_every_loss) fold_losses(step);
  if (checkpoints && sharded()) gather_optimizer_state();
  if (!lead()) return result_;
  if (group_->size() > 1) task_.seek_micro_batch((step - first_step_) * cfg_.grad_accum);
  if (checkpoints) {
    save(last_path);
    write_file_atomic(cfg_.out_dir + "/metrics.csv", result_.metrics_csv);
  }
  const std::string where =
      checkpoints ? str_cat("checkpoint ", last_path, " (resume with --set run.resume=true)")
                  : "nothing was written";
  if (stop.early)
    std::printf("stopped after step %lld (run.stop_after_steps): %s\n", (long long)step,
                where.c_str());
  else
    std::printf("stopped by signal %d after step %lld%s: %s\n", stop.signal, (long long)step,
                stop.abandoned_eval ? " (its evaluation skipped)" : "", where.c_str());
  return result_;
}

// Each step: the stop checks, the stage, the step itself; at a progress line the loss read back,
// rank 0's evaluation, the line, metrics.csv and the checkpoints.
TrainResult Trainer::run() {
  if (cfg_.resume) resume();
  prepare_step_buffers();
  std::unique_ptr<CudaGraph> graph;
  const SignalScope signals;
  if (group_->size() == 1 && !cfg_.cuda_graph && !task_.stream_positions().empty())
    stop_flag_ = &g_stop_signal;
  synchronize(device_);
  using Clock = std::chrono::steady_clock;
  const auto t_start = Clock::now();
  auto t_last = t_start;
  first_step_ = result_.steps_done;
  int64_t step = first_step_;
  int64_t line_step = first_step_;  // the step the previous progress line ended at
  RunStop stop;
  for (; step < cfg_.steps; ++step) {
    if (should_stop(step, &stop)) break;
    const double lr = cfg_.schedule.at(step);
    enter_stage(step, graph);
    if (!train_step(step, lr, graph, &stop)) break;
    const bool log = (step + 1) % cfg_.log_interval == 0 || step == 0 || step + 1 == cfg_.steps;
    const bool eval =
        cfg_.eval_interval > 0 && ((step + 1) % cfg_.eval_interval == 0 || step + 1 == cfg_.steps);
    if (!log && !eval) continue;
    read_last_loss(step);
    const auto now = Clock::now();
    // The steps since the previous line, timed from the end of that line's evaluation and save.
    ProgressPoint p{step, lr, NAN, false, 0, 0};
    p.elapsed = std::chrono::duration<double>(now - t_start).count();
    p.ms = std::chrono::duration<double, std::milli>(now - t_last).count() /
           double(step + 1 - line_step);
    line_step = step + 1;
    const bool checkpoints = eval && !cfg_.out_dir.empty();
    if (checkpoints && sharded()) gather_optimizer_state();
    if (lead()) {  // rank 0 evaluates, prints and saves; the others go on to the next step
      if (eval && !evaluate(step, &p.val, &stop)) {
        ++step;  // the step is done; only its evaluation is skipped
        break;
      }
      p.evaluated = eval;
      print_progress(p);
      record_metrics(p);
      if (checkpoints) save_evaluated(step, p.val);
    }
    t_last = Clock::now();
  }
  return finish(step, stop, std::chrono::duration<double>(Clock::now() - t_start).count());
}

}  // namespace bg
