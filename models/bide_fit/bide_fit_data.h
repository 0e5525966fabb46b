// bide_fit_data.h: what a fit-bide run fits, before any model exists: its settings (read by
// `bitgrad fit-bide`'s config reader), every training pattern drawn up front, each
// distribution's held-out set, and the patterns each distribution's support holds
// (bide.range). Everything here is checked before a file is written.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/bide.h"
#include "core/compute_mode.h"
#include "core/optim.h"
#include "core/settings.h"
#include "data/distributions.h"
#include "data/samples.h"

namespace bg {

// bide.range: where each distribution's mass may lie. all: every 2^B pattern (the paper's);
// auto: the training values' range [min, max] widened by bide.auto_margin (max - min) on each
// side (not across zero: data that are all >= 0 keep the range >= 0, all <= 0 keep it <= 0);
// fixed: [lo, hi] from the config.
#define BG_FIT_RANGE_MODES(X) X(all, "all") X(automatic, "auto") X(fixed, "fixed")
BG_NAMED_ENUM(RangeMode, BG_FIT_RANGE_MODES)

// bide.dtype: the values' type, each a BideCode (bits and kind); uint takes bide.bits.
#define BG_FIT_VALUE_TYPES(X)                                                                \
  X(float16, "float16") X(bfloat16, "bfloat16") X(uint8, "uint8") X(uint16, "uint16")        \
  X(int8, "int8") X(int16, "int16") X(uint_bits, "uint")
BG_NAMED_ENUM(FitValueType, BG_FIT_VALUE_TYPES)
// The code of `type` (uint: `uint_bits` bits).
BideCode fit_value_code(FitValueType type, int uint_bits);

struct DistSpec {
  std::string name;
  bool from_file = false;
  DistributionParams params;
  SampleFileSpec file;
  double val_fraction = 0.1;
};

struct FitConfig {
  std::string out_dir, device = "auto";
  uint64_t seed = 0;
  FitValueType value_type = FitValueType::float16;
  int uint_bits = 8;  // value_type uint_bits
  BideOptions bide;   // its code follows value_type
  RangeMode range = RangeMode::automatic;
  double range_lo = 0, range_hi = 0;  // RangeMode::fixed
  double auto_margin = 0.02;          // RangeMode::automatic
  int64_t hidden = 32, steps = 2000, batch = 64, log_interval = 100, eval_samples = 8192,
          plot_bins = 200;
  bool cuda_graph = true;
  ComputeMode mode;  // train.deterministic (the one mode key fit-bide offers)
  double ema = 0.99;
  // fit-bide's optimizer defaults: AdamW (0.9, 0.96), weight decay 0.01, the rate 0.1 decaying
  // exponentially to 1e-5.
  AdamWConfig adamw = {0.9, 0.96, 1e-8, 0.01};
  LrSchedule schedule = [] {
    LrSchedule l;
    l.kind = ScheduleKind::exponential;
    l.lr = 0.1;
    l.min_lr = 1e-5;
    return l;
  }();
  std::vector<DistSpec> dists;
};

// Its declared fields (core/settings.h), in reading order, with train.deterministic,
// optimizer.* and schedule.*; the distributions' keys are fit_distribution_settings'.
const Settings<FitConfig>& fit_settings();

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

// Every distribution's data, and the run's training targets: row s of `train_y` (steps x
// N * batch) holds step s's patterns, distribution d's at [d * batch, (d + 1) * batch). Drawn
// from the seed in a fixed order; a sample file is read, shuffled and split.
struct FitData {
  std::vector<DistData> dists;
  std::vector<int64_t> train_y;
};
FitData draw_fit_data(const FitConfig& cfg);

// The support table rows of each distribution: all 2^B patterns, or its value range's pieces.
Tensor support_table(const BideCode& code, const std::vector<DistData>& data);
// [min - m, max + m] of the patterns' values with m = margin (max - min), never across zero.
std::pair<double, double> auto_range(const BideCode& code, const std::vector<uint32_t>& patterns,
                                     double margin_fraction);

}  // namespace bg
