// config_meanings.cpp: what every config key means (`bitgrad config`, docs/config.md): the
// declared field lists' meanings (core/settings.h) and, below, the keys read by code of its own.
// `bitgrad config` refuses a key that a command reads and nothing explains, and an entry here
// that no command reads.
#include <iterator>

#include "cli.h"
#include "models/bide_fit/bide_fit_data.h"
#include "models/lm_run.h"

namespace bg::cli {

namespace {

// The keys that readers of their own take, outside the declared field lists: the output folder
// (read_out_dir), the compute mode (read_compute_mode), the optimizer and schedule
// (read_adamw_and_schedule), and each fit-bide distribution's parameters by kind.
const std::pair<const char*, const char*> kMeanings[] = {
      // run: where outputs go and which device
      {"run.name", "run name; outputs go to runs/<name> unless run.out_dir is set"},
      {"run.out_dir", "output folder (checkpoints, metrics.csv, config.yaml, plots)"},
      // train
      {"train.precision",
       "CUDA matmul operands: fp32, tf32 or bf16 (fp32 accumulation and master weights; the CPU "
       "computes fp32)"},
      {"train.activations",
       "CUDA activations: fp32, or bf16 (the residual stream, norms, GELU and dropout stored in "
       "bf16; needs train.precision: bf16; fp32 weights, optimizer state and reductions)"},
      {"train.deterministic",
       "batch-invariant arithmetic: the same bits run to run and whatever the batch "
       "(docs/determinism.md)"},
      {"train.matmul", "standard, or lmul: multiplies as L-Mul integer adds (docs/lmul.md)"},
      {"lmul.mantissa_bits", "operands rounded to this many mantissa bits (7: bf16's)"},
      {"lmul.scope", "which matmuls multiply by L-Mul: attention, mlp or all"},
      {"lmul.backward", "the gradients' products: lmul too, or exact"},
      // optimizer and schedule (both commands)
      {"optimizer.type", "adamw or sgd"},
      {"optimizer.lr", "peak learning rate"},
      {"optimizer.betas", "AdamW's beta1 and beta2, each in [0, 1)"},
      {"optimizer.eps", "AdamW's epsilon"},
      {"optimizer.weight_decay", "decoupled weight decay, on parameters of 2 or more dims"},
      {"optimizer.momentum", "SGD momentum"},
      {"schedule.type", "learning-rate schedule: constant, cosine, linear or exponential"},
      {"schedule.warmup_steps", "linear warmup steps"},
      {"schedule.min_lr", "floor (cosine, linear) or end point (exponential)"},
      {"schedule.stage2_step", "BitNet's second stage from this 0-based step on (0: one stage)"},
      {"schedule.stage2_lr_scale", "the learning rate's factor in the second stage"},
      {"schedule.stage2_weight_decay", "the weight decay in the second stage"},
      // fit-bide
      {"distributions[].kind", "a built-in law (normal, gamma, ...) or file"},
      {"distributions[].name", "the name in the summary and plots (default: the kind)"},
      {"distributions[].mu", "normal, lognormal, laplace: location"},
      {"distributions[].sigma", "normal, lognormal: scale"},
      {"distributions[].alpha", "gamma: shape; pareto: shape"},
      {"distributions[].beta", "gamma: rate"},
      {"distributions[].x_m", "pareto: scale (the minimum)"},
      {"distributions[].lambda", "poisson: mean; weibull: scale"},
      {"distributions[].n", "binomial: trials"},
      {"distributions[].p", "binomial: success probability"},
      {"distributions[].nu", "student_t: degrees of freedom"},
      {"distributions[].scale", "student_t: scale"},
      {"distributions[].low", "uniform: lower end"},
      {"distributions[].high", "uniform: upper end"},
      {"distributions[].rate", "exponential: rate"},
      {"distributions[].a", "beta: alpha"},
      {"distributions[].b", "beta: beta; laplace: scale"},
      {"distributions[].k", "weibull: shape"},
      {"distributions[].weights", "mixture: component weights (positive)"},
      {"distributions[].means", "mixture: component means"},
      {"distributions[].stds", "mixture: component standard deviations (positive)"},
      {"distributions[].path", "file: the samples file"},
      {"distributions[].format", "file: auto, text, csv or hdf5"},
      {"distributions[].column", "file: csv column (index or header name)"},
      {"distributions[].dataset", "file: hdf5 dataset name"},
      {"distributions[].skip_invalid", "file: skip values that do not parse instead of refusing"},
      {"distributions[].val_fraction", "file: fraction of the samples held out"},
};

}  // namespace

const std::map<std::string, std::string>& config_key_meanings() {
  static const std::map<std::string, std::string> m = [] {
    std::map<std::string, std::string> m(std::begin(kMeanings), std::end(kMeanings));
    add_meanings(run_settings(), m);
    add_meanings(fit_settings(), m);
    return m;
  }();
  return m;
}

}  // namespace bg::cli
