#include "bide_fit_data.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/optim_settings.h"
#include "core/rng.h"

namespace bg {

BideCode fit_value_code(FitValueType type, int uint_bits) {
  BideCode code;
  switch (type) {
    case FitValueType::float16:
    case FitValueType::bfloat16:
      code.type = type == FitValueType::float16 ? BideValueType::f16 : BideValueType::bf16;
      code.bits = 16;
      break;
    case FitValueType::uint8:
    case FitValueType::uint16:
    case FitValueType::int8:
    case FitValueType::int16:
      code.type = type == FitValueType::uint8 || type == FitValueType::uint16 ? BideValueType::uint
                                                                              : BideValueType::sint;
      code.bits = type == FitValueType::uint16 || type == FitValueType::int16 ? 16 : 8;
      break;
    case FitValueType::uint_bits:
      code.type = BideValueType::uint;
      code.bits = uint_bits;
      break;
  }
  return code;
}

namespace {

// bide.range: [lo, hi] (a list), or auto or all.
void read_range(ConfigReader& r, FitConfig& c) {
  if (r.is_list("bide.range")) {
    const std::vector<double> v = r.numbers("bide.range", {}, 2);
    if (!(v[0] <= v[1])) r.fail_at("bide.range", "expected [lo, hi] with lo <= hi");
    if (bide_value_range_patterns(c.bide.code, v[0], v[1]).empty())
      r.fail_at("bide.range", "holds no value of bide.dtype " + std::string(enum_name(c.value_type)));
    c.range = RangeMode::fixed;
    c.range_lo = v[0];
    c.range_hi = v[1];
  } else {
    c.range = r.choice("bide.range", "auto", {"auto", "all"}) == "all" ? RangeMode::all
                                                                       : RangeMode::automatic;
    r.range_is("bide.range", "auto | all | [lo, hi]");
  }
}

// bide.support: [lo, hi) of the patterns, under bide.range: all.
void read_support(ConfigReader& r, FitConfig& c) {
  if (!r.has("bide.support")) return;
  if (c.range != RangeMode::all)
    r.fail_at("bide.support",
              "a pattern range and bide.range exclude each other (set bide.range: all)");
  const std::vector<double> s = r.numbers("bide.support", {}, 2);
  r.default_is("bide.support", "every pattern");
  c.bide.support_lo = int64_t(s[0]);
  c.bide.support_hi = int64_t(s[1]);
  if (!(s[0] >= 0 && s[1] > s[0] && s[1] <= std::ldexp(1.0, c.bide.code.bits)))
    r.fail_at("bide.support", "expected [lo, hi) with 0 <= lo < hi <= 2^bits");
}

}  // namespace

const Settings<FitConfig>& fit_settings() {
  static const Settings<FitConfig> s = [] {
    Settings<FitConfig> s;
    s.custom("run.name", kRunNameMeaning,
             [](ConfigReader& r, FitConfig& c) { c.out_dir = read_out_dir(r, "bide_fit"); });
    s.custom("run.out_dir", kRunOutDirMeaning, [](ConfigReader&, FitConfig&) {
      // read with run.name, which it overrides
    });
    s.integer("run.seed", [](auto& c) -> auto& { return c.seed; }, 0, INT64_MAX,
              "fit-bide: seeds the draws, the file splits and the initialisation");
    s.string("run.device", [](auto& c) -> auto& { return c.device; },
             "auto (CUDA when present), cpu, cuda or cuda:N");
    s.choice("bide.dtype", [](auto& c) -> auto& { return c.value_type; },
             "value type: float16, bfloat16, uint8, uint16, int8, int16 or uint");
    s.when([](const FitConfig& c) { return c.value_type == FitValueType::uint_bits; },
           [](const FitConfig& c) {
             return "bide.dtype is " + std::string(enum_name(c.value_type));
           });
    s.integer("bide.bits", [](auto& c) -> auto& { return c.uint_bits; }, 1, 24,
              "bits for bide.dtype uint (cost grows as 2^B)");
    s.always();
    s.custom("bide.hidden", "H, hidden units of the BIDE MLP (default 2B)",
             [](ConfigReader& r, FitConfig& c) {
               c.bide.code = fit_value_code(c.value_type, c.uint_bits);
               c.hidden = r.integer("bide.hidden", 2 * c.bide.code.bits, 1, kMaxSickHidden);
               r.default_is("bide.hidden", "2 x bits");
             });
    s.custom("bide.range",
             "where each distribution's mass lies: auto (the training values' range, widened), "
             "all (every pattern) or [lo, hi]",
             read_range);
    s.when([](const FitConfig& c) { return c.range == RangeMode::automatic; },
           [](const FitConfig&) { return std::string("bide.range is not auto"); });
    s.number("bide.auto_margin", [](auto& c) -> auto& { return c.auto_margin; }, 0.0, 100.0,
             "bide.range auto: the widening, as a fraction of max - min");
    s.always();
    s.custom("bide.support",
             "[lo, hi): restrict every distribution to these patterns (bide.range all)",
             read_support);
    s.choice("sick.variant", [](auto& c) -> auto& { return c.bide.variant; },
             "how SICK walks the 2^B patterns: auto, bruteforce or precomputed");
    s.choice("sick.dtype", [](auto& c) -> auto& { return c.bide.precision; },
             "W and r inside the CUDA kernel: fp32 or fp16");
    s.integer("train.steps", [](auto& c) -> auto& { return c.steps; }, 1, 100000000,
              "optimizer steps");
    s.integer("train.batch_size", [](auto& c) -> auto& { return c.batch; }, 1, 1 << 20,
              "fit-bide: samples per distribution per step");
    s.integer("train.log_interval", [](auto& c) -> auto& { return c.log_interval; }, 1,
              100000000, "steps between progress lines");
    s.number("train.ema", [](auto& c) -> auto& { return c.ema; }, 0.0, 0.99999,
             "fit-bide: EMA factor of the reported loss");
    s.boolean("train.cuda_graph", [](auto& c) -> auto& { return c.cuda_graph; },
              "fit-bide: capture a training step as a CUDA graph and replay it");
    s.integer("eval.samples", [](auto& c) -> auto& { return c.eval_samples; }, 16, 1 << 24,
              "held-out samples per built-in distribution");
    s.integer("eval.plot_bins", [](auto& c) -> auto& { return c.plot_bins; }, 10, 10000,
              "bins of the CDF and density plots");
    // Batch-invariant arithmetic (docs/determinism.md): the projections' matmuls take the
    // batch-invariant algorithm and the SICK pass a partition fixed per example.
    s.nested(deterministic_mode_settings(), [](auto& c) -> auto& { return c.mode; });
    add_optimizer_fields(
        s, [](FitConfig& c) -> AdamWConfig& { return c.adamw; },
        [](FitConfig& c) -> LrSchedule& { return c.schedule; },
        [](const FitConfig& c) { return c.steps; });
    return s;
  }();
  return s;
}

namespace {

// Why a value cannot be a training value ("" when it can).
std::string value_problem(const FitConfig& cfg, double v) {
  const BideCode& code = cfg.bide.code;
  const int64_t support_hi =
      cfg.bide.support_hi < 0 ? (int64_t(1) << code.bits) : cfg.bide.support_hi;
  uint32_t k;
  std::string why;
  if (!bide_encode(code, v, &k, &why)) return why;
  if (int64_t(k) < cfg.bide.support_lo || int64_t(k) >= support_hi)
    return "value outside the configured support";
  const double x = code.value(k);
  if (cfg.range == RangeMode::fixed && !(x >= cfg.range_lo && x <= cfg.range_hi))
    return str_cat("value ", v, " is outside bide.range [", cfg.range_lo, ", ", cfg.range_hi, "]");
  return "";
}

bool encode_value(const FitConfig& cfg, double v, uint32_t* k) {
  std::string why;
  return value_problem(cfg, v).empty() && bide_encode(cfg.bide.code, v, k, &why);
}

// A sample file's values: read, shuffled by `rng`, the first val_fraction held out.
void split_sample_file(const FitConfig& cfg, const DistSpec& spec, HostRng& rng, DistData& dd) {
  const BideCode& code = cfg.bide.code;
  SampleSet set = read_samples(spec.file, [&](double v) { return value_problem(cfg, v); });
  std::vector<double>& v = set.values;
  for (size_t i = v.size(); i > 1; --i)
    std::swap(v[i - 1], v[size_t(rng.uniform() * double(i)) % i]);
  const size_t n_val = std::max<size_t>(1, size_t(double(v.size()) * spec.val_fraction));
  BG_CHECK(v.size() > n_val, "fit-bide", spec.file.path, ": ", v.size(),
           " samples are too few to split");
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t k;
    encode_value(cfg, v[i], &k);
    if (i < n_val) {
      dd.eval.push_back(k);
      dd.eval_values.push_back(code.value(k));
    } else {
      dd.train_pool.push_back(k);
    }
  }
  dd.skipped = set.skipped;
  dd.skip_note = set.first_skip;
}

// bide.range auto: the range the patterns seen in training span, widened; a float zero of a
// sign the data never take left out.
void set_auto_range(const FitConfig& cfg, const std::vector<uint32_t>& seen, DistData& dd) {
  const BideCode& code = cfg.bide.code;
  std::tie(dd.range_lo, dd.range_hi) = auto_range(code, seen, cfg.auto_margin);
  if (!code.is_float()) return;
  const uint32_t sign = 1u << (code.bits - 1);
  bool negative = false, positive = false;
  for (uint32_t k : seen) (k & sign ? negative : positive) = true;
  dd.drop_negative_zero = !negative;
  dd.drop_positive_zero = !positive;
}

}  // namespace

FitData draw_fit_data(const FitConfig& cfg) {
  const BideCode code = cfg.bide.code;
  const int64_t n_dist = int64_t(cfg.dists.size()), per_step = n_dist * cfg.batch;
  // Every training pattern of the run up front (one upload), and the held-out sets.
  HostRng rng(cfg.seed);
  FitData out;
  out.dists.resize(static_cast<size_t>(n_dist));
  out.train_y.resize(static_cast<size_t>(cfg.steps * per_step));
  for (int64_t d = 0; d < n_dist; ++d) {
    DistData& dd = out.dists[size_t(d)];
    const DistSpec& spec = cfg.dists[size_t(d)];
    if (spec.from_file)
      split_sample_file(cfg, spec, rng, dd);
    else
      dd.truth = make_distribution(spec.params);
    auto draw = [&]() -> uint32_t {
      if (spec.from_file)
        return dd.train_pool[size_t(rng.uniform() * double(dd.train_pool.size())) %
                             dd.train_pool.size()];
      for (int attempt = 0;; ++attempt) {
        uint32_t k;
        if (encode_value(cfg, dd.truth->sample(rng), &k)) return k;
        ++dd.skipped;  // e.g. a Pareto draw beyond float16's range, or outside bide.range
        BG_CHECK(attempt < 1000, "fit-bide", spec.name, ": samples keep falling outside ",
                 code.bits, "-bit values", cfg.range == RangeMode::fixed ? " and bide.range" : "");
      }
    };
    std::vector<uint32_t> drawn(static_cast<size_t>(cfg.steps * cfg.batch));
    for (uint32_t& k : drawn) k = draw();
    for (int64_t s = 0; s < cfg.steps; ++s)
      for (int64_t i = 0; i < cfg.batch; ++i)
        out.train_y[size_t(s * per_step + d * cfg.batch + i)] = drawn[size_t(s * cfg.batch + i)];
    if (!spec.from_file)
      for (int64_t i = 0; i < cfg.eval_samples; ++i) {
        const uint32_t k = draw();
        dd.eval.push_back(k);
        dd.eval_values.push_back(code.value(k));
      }
    dd.full_support = cfg.range == RangeMode::all;
    if (cfg.range == RangeMode::fixed) {
      dd.range_lo = cfg.range_lo;
      dd.range_hi = cfg.range_hi;
    } else if (cfg.range == RangeMode::automatic) {
      set_auto_range(cfg, spec.from_file ? dd.train_pool : drawn, dd);
    }
  }
  return out;
}

// The support table rows of each distribution: all 2^B patterns, or its value range's pieces.
Tensor support_table(const BideCode& code, const std::vector<DistData>& data) {
  std::vector<std::pair<double, double>> ranges;
  for (const DistData& d : data) ranges.emplace_back(d.range_lo, d.range_hi);
  Tensor table = bide_support_table(code, ranges);
  int64_t* t = static_cast<int64_t*>(table.data_ptr());
  const int64_t n = int64_t(data.size());
  const int64_t sign = int64_t(1) << (code.bits - 1);
  for (int64_t i = 0; i < n; ++i) {
    const DistData& d = data[size_t(i)];
    if (d.full_support) {
      t[i] = 0;
      t[n + i] = int64_t(1) << code.bits;
      t[2 * n + i] = t[3 * n + i] = 0;
      continue;
    }
    for (int j = 0; j < 2; ++j) {  // piece j: [t[2j n + i], t[(2j+1) n + i])
      int64_t& lo = t[2 * j * n + i];
      const int64_t hi = t[(2 * j + 1) * n + i];
      if (lo < hi && ((d.drop_positive_zero && lo == 0) || (d.drop_negative_zero && lo == sign)))
        ++lo;
      if (lo >= hi) lo = t[(2 * j + 1) * n + i] = 0;  // an empty piece
    }
    if (t[i] == t[n + i] && t[2 * n + i] < t[3 * n + i]) {  // keep a lone piece first
      std::swap(t[i], t[2 * n + i]);
      std::swap(t[n + i], t[3 * n + i]);
    }
  }
  return table;
}

// [min - m, max + m] with m = margin (max - min), never across zero.
std::pair<double, double> auto_range(const BideCode& code, const std::vector<uint32_t>& patterns,
                                     double margin_fraction) {
  double lo = INFINITY, hi = -INFINITY;
  for (uint32_t k : patterns) {
    lo = std::min(lo, code.value(k));
    hi = std::max(hi, code.value(k));
  }
  double margin = margin_fraction * (hi - lo);
  if (hi == lo) margin = margin_fraction * std::max(std::fabs(hi), 1.0);  // one repeated value
  double a = lo - margin, b = hi + margin;
  if (lo >= 0) a = std::max(a, 0.0);
  if (hi <= 0) b = std::min(b, 0.0);
  return {a, b};
}

}  // namespace bg
