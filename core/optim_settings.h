// optim_settings.h: the optimizer.* and schedule.* keys, declared once (core/settings.h) for
// every command that trains (train's run list and fit-bide's), over the struct's own AdamW
// config and schedule, whose initialisers are that command's defaults. Ranges that depend on
// train.steps (read before them) are checked against it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/optim.h"
#include "core/settings.h"

namespace bg {

// `adamw(s)` and `schedule(s)` reach the struct's AdamWConfig and LrSchedule; `steps(s)` is
// train.steps; `adam(s)` says whether AdamW runs (empty: always), betas and eps being "not used
// when optimizer.type is sgd" otherwise.
template <typename S, typename AdamW_, typename Schedule_, typename Steps_>
void add_optimizer_fields(Settings<S>& s, AdamW_ adamw, Schedule_ schedule, Steps_ steps,
                          typename Settings<S>::Condition adam = {}) {
  s.number("optimizer.lr", [schedule](S& c) -> double& { return schedule(c).lr; }, 0.0, 10.0,
           "peak learning rate");
  if (adam)
    s.when(adam, [](const S&) { return std::string("optimizer.type is sgd"); });
  s.custom("optimizer.betas", "AdamW's beta1 and beta2, each in [0, 1)",
           [adamw](ConfigReader& r, S& c) {
             AdamWConfig& a = adamw(c);
             const std::vector<double> betas = r.numbers("optimizer.betas", {a.beta1, a.beta2}, 2);
             for (double b : betas)
               if (b < 0 || b >= 1) r.fail_at("optimizer.betas", "each beta must be in [0, 1)");
             a.beta1 = betas[0];
             a.beta2 = betas[1];
           });
  s.number("optimizer.eps", [adamw](S& c) -> double& { return adamw(c).eps; }, 0.0, 1.0,
           "AdamW's epsilon");
  s.always();
  s.number("optimizer.weight_decay", [adamw](S& c) -> double& { return adamw(c).weight_decay; },
           0.0, 10.0, "decoupled weight decay, on parameters of 2 or more dims");
  s.choice("schedule.type", [schedule](S& c) -> ScheduleKind& { return schedule(c).kind; },
           "learning-rate schedule: constant, cosine, linear or exponential");
  s.custom("schedule.warmup_steps", "linear warmup steps", [schedule, steps](ConfigReader& r, S& c) {
    LrSchedule& l = schedule(c);
    l.total_steps = steps(c);
    l.warmup_steps = r.integer("schedule.warmup_steps", l.warmup_steps, 0, l.total_steps);
    r.range_is("schedule.warmup_steps", "[0, train.steps]");
  });
  s.when([schedule](const S& c) { return schedule(const_cast<S&>(c)).kind != ScheduleKind::constant; },
         [](const S&) { return std::string("schedule.type is constant"); });
  s.custom("schedule.min_lr", "floor (cosine, linear) or end point (exponential)",
           [schedule](ConfigReader& r, S& c) {
             LrSchedule& l = schedule(c);
             l.min_lr = r.number("schedule.min_lr", l.min_lr, 0.0, 10.0);
             if (l.kind == ScheduleKind::exponential && l.min_lr <= 0)
               r.fail_at("schedule.min_lr", "an exponential schedule needs min_lr > 0");
           });
  s.always();
  // BitNet b1.58's second stage (docs/bitlinear.md): 0 keeps one stage.
  s.custom("schedule.stage2_step", "BitNet's second stage from this 0-based step on (0: one stage)",
           [schedule](ConfigReader& r, S& c) {
             LrSchedule& l = schedule(c);
             l.stage2_step = r.integer("schedule.stage2_step", l.stage2_step, 0, l.total_steps - 1);
             r.range_is("schedule.stage2_step", "[0, train.steps - 1]");
           });
  s.when([schedule](const S& c) { return schedule(const_cast<S&>(c)).stage2_step > 0; },
         [](const S&) { return std::string("schedule.stage2_step is 0"); });
  s.number("schedule.stage2_lr_scale",
           [schedule](S& c) -> double& { return schedule(c).stage2_lr_scale; }, 0.0, 10.0,
           "the learning rate's factor in the second stage");
  s.number("schedule.stage2_weight_decay",
           [schedule](S& c) -> double& { return schedule(c).stage2_weight_decay; }, 0.0, 10.0,
           "the weight decay in the second stage");
  s.always();
}

}  // namespace bg
