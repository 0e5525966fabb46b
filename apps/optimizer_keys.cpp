// optimizer_keys.cpp: the optimizer.* and schedule.* keys that train and fit-bide share.
#include "cli.h"
#include "core/config.h"
#include "core/optim.h"

namespace bg::cli {

void read_adamw_and_schedule(ConfigReader& r, const OptimizerDefaults& d, int64_t steps,
                             AdamWConfig* adamw, LrSchedule* schedule, bool adam) {
  schedule->lr = r.number("optimizer.lr", d.lr, 0.0, 10.0);
  if (adam) {
    const std::vector<double> betas = r.numbers("optimizer.betas", d.betas, 2);
    for (double b : betas)
      if (b < 0 || b >= 1) r.fail_at("optimizer.betas", "each beta must be in [0, 1)");
    adamw->beta1 = betas[0];
    adamw->beta2 = betas[1];
    adamw->eps = r.number("optimizer.eps", 1e-8, 0.0, 1.0);
  } else {
    for (const char* k : {"betas", "eps"})
      r.not_used(std::string("optimizer.") + k, "optimizer.type is sgd");
  }
  adamw->weight_decay = r.number("optimizer.weight_decay", d.weight_decay, 0.0, 10.0);
  schedule->kind = r.choice("schedule.type", d.schedule);
  schedule->warmup_steps = r.integer("schedule.warmup_steps", 0, 0, steps);
  r.range_is("schedule.warmup_steps", "[0, train.steps]");
  if (schedule->kind == ScheduleKind::constant)
    r.not_used("schedule.min_lr", "schedule.type is constant");
  else
    schedule->min_lr = r.number("schedule.min_lr", d.min_lr, 0.0, 10.0);
  if (schedule->kind == ScheduleKind::exponential && schedule->min_lr <= 0)
    r.fail_at("schedule.min_lr", "an exponential schedule needs min_lr > 0");
  schedule->total_steps = steps;
  // BitNet b1.58's second stage (docs/bitlinear.md): 0 keeps one stage.
  schedule->stage2_step = r.integer("schedule.stage2_step", 0, 0, steps - 1);
  r.range_is("schedule.stage2_step", "[0, train.steps - 1]");
  if (schedule->stage2_step > 0) {
    schedule->stage2_lr_scale = r.number("schedule.stage2_lr_scale", 1.0, 0.0, 10.0);
    schedule->stage2_weight_decay = r.number("schedule.stage2_weight_decay", 0.0, 0.0, 10.0);
  } else {
    for (const char* k : {"stage2_lr_scale", "stage2_weight_decay"})
      r.not_used(std::string("schedule.") + k, "schedule.stage2_step is 0");
  }
}

}  // namespace bg::cli
