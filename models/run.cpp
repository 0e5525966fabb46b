#include "run.h"

#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <map>

#include "core/allocator.h"
#include "core/checkpoint.h"
#include "core/config.h"
#include "core/distributed.h"
#include "core/files.h"
#include "core/optim_settings.h"
#include "core/sha256.h"
#include "models/trainer.h"

namespace bg {
namespace {

// The Trainer's settings for this run: the tree reduction of a deterministic mode, the steps a
// profiler records (BITGRAD_PROFILE_STEPS=FIRST:COUNT, scripts/gpt2_breakdown.sh), and the
// progress line's tok/s and MFU.
TrainerConfig trainer_config(const TrainRun& run, const ComputeMode& mode,
                             const TrainedModel& model, Device device, int world) {
  TrainerConfig tc = run.trainer;
  tc.tree_reduce = mode.deterministic;
  tc.freeze_steps = run.model.freeze_trunk_steps;
  tc.trainable_prefix = "lm_head.";  // a GPT's head: what GPT-2's weights do not hold
  if (const char* p = std::getenv("BITGRAD_PROFILE_STEPS"); p && *p) {
    const std::string text = p;
    const size_t colon = text.find(':');
    char* end = nullptr;
    const long long first = std::strtoll(text.c_str(), &end, 10);
    const long long count = colon == std::string::npos ? 0 : std::strtoll(&text[colon + 1], nullptr, 10);
    BG_CHECK(colon != std::string::npos && end == text.c_str() + colon && first >= 0 &&
                 first < tc.steps && count >= 1 && count <= tc.steps,
             "train", "BITGRAD_PROFILE_STEPS is '", text,
             "', expected FIRST:COUNT (steps from 0, FIRST below train.steps, COUNT at least 1)");
    tc.profile_first = first;
    tc.profile_count = count;
  }
  tc.tokens_per_step = double(run.batch * tc.grad_accum * model.context);
  if (device.is_cuda()) {
    tc.flops_per_token = model.flops_per_token;
    tc.peak_tflops = peak_bf16_tflops(cuda_device_name(device.index)) * world;
  }
  return tc;
}

}  // namespace

const Settings<TrainRun>& run_settings() {
  static const Settings<TrainRun> s = [] {
    Settings<TrainRun> s;
    s.custom("run.name", kRunNameMeaning, [](ConfigReader& r, TrainRun& c) {
      c.trainer.out_dir = read_out_dir(r, "run");
    });
    s.custom("run.out_dir", kRunOutDirMeaning, [](ConfigReader&, TrainRun&) {
      // read with run.name, which it overrides
    });
    s.integer("run.seed", [](auto& c) -> auto& { return c.seed; }, 0, INT64_MAX,
              "seeds the run's random streams (initialisation, data, dropout)");
    s.string("run.device", [](auto& c) -> auto& { return c.device; },
             "auto (CUDA when present), cpu, cuda or cuda:N");
    s.boolean("run.resume", [](auto& c) -> auto& { return c.trainer.resume; },
              "continue from out_dir/last.h5 exactly where it stopped");
    s.when([](const TrainRun& c) { return c.trainer.resume; },
           [](const TrainRun&) { return std::string("run.resume is false"); });
    s.boolean("run.resume_mode_change", [](auto& c) -> auto& { return c.resume_mode_change; },
              "with run.resume: continue even though the checkpoint's compute mode differs from "
              "the config's (the run then holds two arithmetics)");
    s.always();
    // Stop (saving last.h5, as on SIGINT) after this many steps of this invocation: time-boxed
    // jobs, and the interrupted-and-resumed test.
    s.integer("run.stop_after_steps", [](auto& c) -> auto& { return c.trainer.stop_after; }, 0,
              int64_t(1) << 40,
              "stop after this many steps of this invocation, saving last.h5 (0: off)");
    s.nested(data_settings(), [](auto& c) -> auto& { return c.data; });
    s.nested(model_spec_settings(), [](auto& c) -> auto& { return c.model; });
    s.integer("train.steps", [](auto& c) -> auto& { return c.trainer.steps; }, 1,
              int64_t(1) << 40, "optimizer steps");
    s.integer("train.batch_size", [](auto& c) -> auto& { return c.batch; }, 1, 1 << 24,
              "train: sequences per micro-batch");
    s.integer("train.grad_accum", [](auto& c) -> auto& { return c.trainer.grad_accum; }, 1,
              1 << 16,
              "micro-batches per optimizer step, over all ranks of a data-parallel run (each "
              "runs grad_accum / ranks)");
    s.boolean("train.shard_optimizer", [](auto& c) -> auto& { return c.trainer.shard_optimizer; },
              "data parallel: each rank keeps and updates 1/N of AdamW's state (ZeRO-1); "
              "checkpoints hold the whole state");
    s.integer("train.eval_interval", [](auto& c) -> auto& { return c.trainer.eval_interval; }, 1,
              int64_t(1) << 40, "steps between validation passes (and checkpoints)");
    // A forecaster's validation pass reads every series' validation window once: no batches
    // to count.
    s.when([](const TrainRun& c) { return c.model.type != ModelType::forecaster; },
           [](const TrainRun&) {
             return std::string("model.type is forecaster (its validation pass reads every "
                                "series' validation window once)");
           });
    s.integer("train.eval_iters", [](auto& c) -> auto& { return c.eval_iters; }, 1, 1 << 20,
              "batches per validation pass");
    s.always();
    s.integer("train.log_interval", [](auto& c) -> auto& { return c.trainer.log_interval; }, 1,
              int64_t(1) << 40, "steps between progress lines");
    s.number("train.grad_clip", [](auto& c) -> auto& { return c.trainer.grad_clip; }, 0.0, 1e9,
             "global gradient-norm clip (0: off)");
    s.boolean("train.cuda_graph", [](auto& c) -> auto& { return c.trainer.cuda_graph; },
              "train: capture a GPT's step as a CUDA graph after two eager steps and replay it, "
              "one launch per step, the eager step's bits (AdamW, train.grad_accum 1, one "
              "rank)");
    s.nested(compute_mode_settings(), [](auto& c) -> auto& { return c.mode; });
    s.choice("optimizer.type", [](auto& c) -> auto& { return c.trainer.optimizer; },
             "adamw or sgd");
    add_optimizer_fields(
        s, [](TrainRun& c) -> AdamWConfig& { return c.trainer.adamw; },
        [](TrainRun& c) -> LrSchedule& { return c.trainer.schedule; },
        [](const TrainRun& c) { return c.trainer.steps; },
        [](const TrainRun& c) { return c.trainer.optimizer == OptimizerKind::adamw; });
    s.when([](const TrainRun& c) { return c.trainer.optimizer == OptimizerKind::sgd; },
           [](const TrainRun&) { return std::string("optimizer.type is adamw"); });
    s.number("optimizer.momentum", [](auto& c) -> auto& { return c.trainer.momentum; }, 0.0, 1.0,
             "SGD momentum");
    return s;
  }();
  return s;
}

TrainResult run_trainer(const TrainRun& run, const RunContext& context,
                        const RunPlace& place, const TrainedModel& model, TrainTask& task) {
  Trainer trainer(trainer_config(run, place.mode, model, place.device, place.dist.world),
                  *model.params, task);
  trainer.set_process_group(&place.group);
  // The run's config and its loss curve are there from the start, the curve redrawn at each
  // evaluation (not only when the run ends).
  const std::string& out = run.trainer.out_dir;
  if (place.dist.rank == 0) write_file_atomic(out + "/config.yaml", context.effective_yaml);
  trainer.after_evaluation([&](const std::string& metrics) {
    write_file_atomic(out + "/loss.svg", context.draw_losses(metrics));
  });
  const TrainResult result = trainer.run();
  if (place.device.is_cuda())  // the allocator's high-water mark, and the GPU's whole use
    std::printf("device memory: peak %.1f MiB allocated, %.1f MiB in use on the GPU\n",
                double(cuda_allocator_stats(place.device.index).peak_allocated) / 1048576.0,
                double(cuda_memory_in_use()) / 1048576.0);
  if (result.finished && place.dist.rank == 0) {
    write_file_atomic(out + "/loss.svg", context.draw_losses(result.metrics_csv));
    std::printf(
        "done: %lld steps in %.1f s | final train loss %.4f | best val loss %.4f | outputs in %s\n",
        (long long)result.steps_run, result.seconds, result.last_loss, result.best_val,
        out.c_str());
  }
  return result;
}

}  // namespace bg
