// fit_bide_config.cpp: the keys of `bitgrad fit-bide`, checked (README lists them), and the
// value ranges that bide.range gives each distribution.
#include <cmath>

#include "cli.h"
#include "core/config.h"
#include "fit_bide.h"

namespace bg::cli {
namespace {

const std::vector<std::string> kKinds = {
    "normal",    "gamma",   "mixture",     "pareto", "poisson", "binomial", "lognormal",
    "student_t", "uniform", "exponential", "beta",   "laplace", "weibull",  "file"};

// Every kind's parameter keys, so that a parameter of another kind is named as such.
const std::vector<std::pair<std::string, std::vector<std::string>>> kParams = {
    {"normal", {"mu", "sigma"}},
    {"lognormal", {"mu", "sigma"}},
    {"gamma", {"alpha", "beta"}},
    {"pareto", {"x_m", "alpha"}},
    {"poisson", {"lambda"}},
    {"binomial", {"n", "p"}},
    {"student_t", {"nu", "scale"}},
    {"uniform", {"low", "high"}},
    {"exponential", {"rate"}},
    {"beta", {"a", "b"}},
    {"laplace", {"mu", "b"}},
    {"weibull", {"k", "lambda"}},
    {"mixture", {"weights", "means", "stds"}},
    {"file", {"path", "format", "column", "dataset", "skip_invalid", "val_fraction"}}};

void read_dist_params(ConfigReader& r, const std::string& p, DistSpec& d) {
  for (const auto& [kind, keys] : kParams)
    if (kind != d.params.kind)
      for (const std::string& k : keys) {
        bool own = false;
        for (const auto& [k2, keys2] : kParams)
          if (k2 == d.params.kind)
            for (const std::string& o : keys2) own |= o == k;
        if (!own) r.not_used(p + k, "kind is " + d.params.kind);
      }
  // Parameters stay where the reference law and its moments are finite numbers: locations and
  // scales within 1e9 (beyond every BIDE value type's range but uint's 2^24), scales positive.
  const double tiny = 1e-300, big = 1e9;
  DistributionParams& q = d.params;
  const std::string& k = q.kind;
  auto num = [&](const char* key, double lo, double hi) { return r.number(p + key, lo, hi); };
  if (k == "normal" || k == "lognormal") {
    q.a = num("mu", -big, big);
    q.b = num("sigma", tiny, big);
  } else if (k == "gamma") {
    q.a = num("alpha", tiny, big);
    q.b = r.number(p + "beta", 1.0, tiny, big);
  } else if (k == "pareto") {
    q.a = r.number(p + "x_m", 1.0, tiny, big);
    q.b = num("alpha", tiny, big);
  } else if (k == "poisson") {
    q.a = num("lambda", tiny, 1e6);
  } else if (k == "binomial") {
    q.a = double(r.integer(p + "n", 10, 1, 1000000));
    q.b = num("p", 0.0, 1.0);
  } else if (k == "student_t") {
    q.a = num("nu", tiny, big);
    q.b = r.number(p + "scale", 1.0, tiny, big);
  } else if (k == "uniform") {
    q.a = num("low", -big, big);
    q.b = num("high", -big, big);
    if (q.b <= q.a) r.fail_at(p + "high", "must be greater than low");
  } else if (k == "exponential") {
    q.a = num("rate", tiny, big);
  } else if (k == "beta") {
    q.a = num("a", tiny, big);
    q.b = num("b", tiny, big);
  } else if (k == "laplace") {
    q.a = num("mu", -big, big);
    q.b = num("b", tiny, big);
  } else if (k == "weibull") {
    q.a = num("k", tiny, big);
    q.b = num("lambda", tiny, big);
  } else if (k == "mixture") {
    const size_t n = r.list_size(p + "weights");
    if (n == 0) r.fail_at(p + "weights", "a mixture needs weights, means and stds lists");
    q.weights = r.numbers(p + "weights", {}, n);
    q.means = r.numbers(p + "means", {}, n);
    q.stds = r.numbers(p + "stds", {}, n);
    for (size_t i = 0; i < n; ++i) {
      if (!(q.weights[i] > 0 && q.weights[i] <= big))
        r.fail_at(p + "weights", "weights must be positive and at most 1e9");
      if (!(q.stds[i] > 0 && q.stds[i] <= big))
        r.fail_at(p + "stds", "stds must be positive and at most 1e9");
      if (!(std::fabs(q.means[i]) <= big)) r.fail_at(p + "means", "means must be within +-1e9");
    }
  } else {  // file
    d.from_file = true;
    d.file.path = r.string(p + "path");
    d.file.format = r.choice(p + "format", "auto", {"auto", "text", "csv", "hdf5"});
    d.file.column = r.string(p + "column", "0");
    d.file.dataset = r.string(p + "dataset", "samples");
    d.file.skip_invalid = r.boolean(p + "skip_invalid", false);
    d.val_fraction = r.number(p + "val_fraction", 0.1, 0.01, 0.9);
  }
}

}  // namespace

FitConfig read_fit_config(ConfigReader& r) {
  FitConfig c;
  c.out_dir = read_out_dir(r, "bide_fit");
  c.seed = uint64_t(r.integer("run.seed", 0, 0, INT64_MAX));
  c.device = r.string("run.device", "auto");
  const std::string vt = r.choice(
      "bide.dtype", "float16", {"float16", "bfloat16", "uint8", "uint16", "int8", "int16", "uint"});
  BideCode& code = c.bide.code;
  if (vt == "float16" || vt == "bfloat16") {
    code.type = vt == "float16" ? BideValueType::f16 : BideValueType::bf16;
    code.bits = 16;
  } else if (vt == "uint") {
    code.type = BideValueType::uint;
    code.bits = int(r.integer("bide.bits", 8, 1, 24));
  } else {
    code.type = vt[0] == 'u' ? BideValueType::uint : BideValueType::sint;
    code.bits = vt.find("16") != std::string::npos ? 16 : 8;
  }
  c.hidden = r.integer("bide.hidden", 2 * code.bits, 1, kMaxSickHidden);
  r.default_is("bide.hidden", "2 x bits");
  if (r.is_list("bide.range")) {
    const std::vector<double> v = r.numbers("bide.range", {}, 2);
    if (!(v[0] <= v[1])) r.fail_at("bide.range", "expected [lo, hi] with lo <= hi");
    if (bide_value_range_patterns(code, v[0], v[1]).empty())
      r.fail_at("bide.range", "holds no value of bide.dtype " + vt);
    c.range = RangeMode::fixed;
    c.range_lo = v[0];
    c.range_hi = v[1];
  } else {
    c.range = r.choice("bide.range", "auto", {"auto", "all"}) == "all" ? RangeMode::all
                                                                       : RangeMode::automatic;
    r.range_is("bide.range", "auto | all | [lo, hi]");
  }
  if (c.range == RangeMode::automatic)
    c.auto_margin = r.number("bide.auto_margin", 0.02, 0.0, 100.0);
  else
    r.not_used("bide.auto_margin", "bide.range is not auto");
  if (r.has("bide.support")) {
    if (c.range != RangeMode::all)
      r.fail_at("bide.support",
                "a pattern range and bide.range exclude each other (set bide.range: all)");
    const std::vector<double> s = r.numbers("bide.support", {}, 2);
    r.default_is("bide.support", "every pattern");
    c.bide.support_lo = int64_t(s[0]);
    c.bide.support_hi = int64_t(s[1]);
    if (!(s[0] >= 0 && s[1] > s[0] && s[1] <= std::ldexp(1.0, code.bits)))
      r.fail_at("bide.support", "expected [lo, hi) with 0 <= lo < hi <= 2^bits");
  }
  parse_enum(r.choice("sick.variant", "auto", {"auto", "bruteforce", "precomputed"}),
             &c.bide.variant);
  parse_enum(r.choice("sick.dtype", "fp32", {"fp32", "fp16"}), &c.bide.precision);
  c.steps = r.integer("train.steps", 2000, 1, 100000000);
  c.batch = r.integer("train.batch_size", 64, 1, 1 << 20);
  c.log_interval = r.integer("train.log_interval", 100, 1, 100000000);
  c.ema = r.number("train.ema", 0.99, 0.0, 0.99999);
  c.cuda_graph = r.boolean("train.cuda_graph", true);
  // Batch-invariant arithmetic (docs/determinism.md): the projections' matmuls take the
  // batch-invariant algorithm and the SICK pass a partition fixed per example.
  c.mode = read_compute_mode(r, ModeKeys::deterministic_only);
  c.bide.batch_invariant = c.mode.deterministic;
  read_adamw_and_schedule(r, {0.1, {0.9, 0.96}, 0.01, "exponential", 1e-5}, c.steps, &c.adamw,
                          &c.schedule);
  c.eval_samples = r.integer("eval.samples", 8192, 16, 1 << 24);
  c.plot_bins = r.integer("eval.plot_bins", 200, 10, 10000);
  const size_t n = r.list_size("distributions");
  if (n == 0) r.fail_at("distributions", "list at least one distribution");
  for (size_t i = 0; i < n; ++i) {
    const std::string p = "distributions." + std::to_string(i) + ".";
    DistSpec d;
    d.params.kind = r.choice(p + "kind", "", kKinds);
    d.name = r.string(p + "name", d.params.kind);
    r.default_is("distributions[].name", "the kind");
    read_dist_params(r, p, d);
    c.dists.push_back(d);
  }
  r.finish();
  return c;
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

}  // namespace bg::cli
