// fit_bide.h: what `bitgrad fit-bide` passes between reading its config and data
// (fit_bide.cpp) and evaluating and reporting the fit (fit_bide_report.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/bide.h"
#include "core/optim.h"
#include "data/distributions.h"
#include "data/samples.h"

namespace bg {
class ConfigReader;
}

namespace bg::cli {

// bide.range: where each distribution's mass may lie. all: every 2^B pattern (the paper's);
// auto: the training values' range [min, max] widened by bide.auto_margin (max - min) on each
// side (not across zero: data that are all >= 0 keep the range >= 0, all <= 0 keep it <= 0);
// fixed: [lo, hi] from the config.
enum class RangeMode { all, automatic, fixed };

struct DistSpec {
  std::string name;
  bool from_file = false;
  DistributionParams params;
  SampleFileSpec file;
  double val_fraction = 0.1;
};

struct FitConfig {
  std::string out_dir, device;
  uint64_t seed = 0;
  BideOptions bide;
  RangeMode range = RangeMode::automatic;
  double range_lo = 0, range_hi = 0;  // RangeMode::fixed
  double auto_margin = 0.02;          // RangeMode::automatic
  int64_t hidden = 32, steps = 2000, batch = 64, log_interval = 100, eval_samples = 8192,
          plot_bins = 200;
  bool cuda_graph = true;
  ComputeMode mode;  // train.deterministic (the one mode key fit-bide offers)
  double ema = 0.99;
  AdamWConfig adamw;
  LrSchedule schedule;
  std::vector<DistSpec> dists;
};

// One distribution's data, as patterns.
struct DistData {
  std::unique_ptr<Distribution> truth;  // null for sample files
  std::vector<uint32_t> train_pool;     // files: the training split
  std::vector<uint32_t> eval;           // held-out patterns
  std::vector<double> eval_values;      // their values (files: the empirical reference)
  int64_t skipped = 0;
  std::string skip_note;
  bool full_support = true;           // RangeMode::all
  double range_lo = 0, range_hi = 0;  // the value range of the support otherwise
  // bide.range auto on floats: the data never take this sign, so its zero (-0 or +0, equal to
  // the other as values) is left out of the support: all-zero data is one pattern, not two.
  bool drop_negative_zero = false, drop_positive_zero = false;
};

// fit_bide_config.cpp: the config, checked.
FitConfig read_fit_config(ConfigReader& r);
// The support table rows of each distribution: all 2^B patterns, or its value range's pieces.
Tensor support_table(const BideCode& code, const std::vector<DistData>& data);
// [min - m, max + m] of the patterns' values with m = margin (max - min), never across zero.
std::pair<double, double> auto_range(const BideCode& code, const std::vector<uint32_t>& patterns,
                                     double margin_fraction);

// Evaluates the fitted distributions (w_all (N, H, B), r_all (N, H)) against their data and
// writes every output of the run (summary.csv, curves.csv, fit.svg, metrics.csv, loss.svg,
// config.yaml, checkpoint.h5) into cfg.out_dir, after printing the summary table.
struct FitResult {
  const Tensor& w_all;
  const Tensor& r_all;
  const BideOptions& eval_options;  // the support per distribution
  const FlatParameters& params;
  AdamW& optimizer;
  const std::vector<float>& losses;  // per step
  double train_seconds;
  double final_ema;
};
void report_fit(const FitConfig& cfg, const ConfigReader& reader, const std::vector<DistData>& data,
                const FitResult& fit);

}  // namespace bg::cli
