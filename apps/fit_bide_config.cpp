// fit_bide_config.cpp: the keys of `bitgrad fit-bide`, checked (README lists them), and the
// value ranges that bide.range gives each distribution.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "cli.h"
#include "core/config.h"
#include "fit_bide.h"

namespace bg::cli {
namespace {

const std::vector<std::string> kKinds = {
    "normal",    "gamma",   "mixture",     "pareto", "poisson", "binomial", "lognormal",
    "student_t", "uniform", "exponential", "beta",   "laplace", "weibull",  "file"};

// Parameters stay where the reference law and its moments are finite numbers: locations and
// scales within 1e9 (beyond every BIDE value type's range but uint's 2^24), scales positive.
constexpr double kTiny = 1e-300, kBig = 1e9, kRequiredParam = std::numeric_limits<double>::quiet_NaN();

// Where a parameter goes: DistributionParams' a or b (a number, or an integer count), or a
// reader of its own (a mixture's lists, a file's settings).
enum class ParamSlot : uint8_t { a, b, a_integer, own_reader };

// Every kind's parameters, declared once, in reading order: the reader, the refusal of another
// kind's parameter and `bitgrad config`'s meanings all walk this table.
struct DistParam {
  const char* kind;
  const char* key;
  double lo, hi, def;  // def kRequiredParam: the config must set it
  ParamSlot slot;
  const char* meaning;
};
const DistParam kParams[] = {
    {"normal", "mu", -kBig, kBig, kRequiredParam, ParamSlot::a, "location"},
    {"normal", "sigma", kTiny, kBig, kRequiredParam, ParamSlot::b, "scale"},
    {"lognormal", "mu", -kBig, kBig, kRequiredParam, ParamSlot::a, "location"},
    {"lognormal", "sigma", kTiny, kBig, kRequiredParam, ParamSlot::b, "scale"},
    {"gamma", "alpha", kTiny, kBig, kRequiredParam, ParamSlot::a, "shape"},
    {"gamma", "beta", kTiny, kBig, 1.0, ParamSlot::b, "rate"},
    {"pareto", "x_m", kTiny, kBig, 1.0, ParamSlot::a, "scale (the minimum)"},
    {"pareto", "alpha", kTiny, kBig, kRequiredParam, ParamSlot::b, "shape"},
    {"poisson", "lambda", kTiny, 1e6, kRequiredParam, ParamSlot::a, "mean"},
    {"binomial", "n", 1, 1e6, 10, ParamSlot::a_integer, "trials"},
    {"binomial", "p", 0.0, 1.0, kRequiredParam, ParamSlot::b, "success probability"},
    {"student_t", "nu", kTiny, kBig, kRequiredParam, ParamSlot::a, "degrees of freedom"},
    {"student_t", "scale", kTiny, kBig, 1.0, ParamSlot::b, "scale"},
    {"uniform", "low", -kBig, kBig, kRequiredParam, ParamSlot::a, "lower end"},
    {"uniform", "high", -kBig, kBig, kRequiredParam, ParamSlot::b, "upper end"},
    {"exponential", "rate", kTiny, kBig, kRequiredParam, ParamSlot::a, "rate"},
    {"beta", "a", kTiny, kBig, kRequiredParam, ParamSlot::a, "alpha"},
    {"beta", "b", kTiny, kBig, kRequiredParam, ParamSlot::b, "beta"},
    {"laplace", "mu", -kBig, kBig, kRequiredParam, ParamSlot::a, "location"},
    {"laplace", "b", kTiny, kBig, kRequiredParam, ParamSlot::b, "scale"},
    {"weibull", "k", kTiny, kBig, kRequiredParam, ParamSlot::a, "shape"},
    {"weibull", "lambda", kTiny, kBig, kRequiredParam, ParamSlot::b, "scale"},
    {"mixture", "weights", 0, 0, 0, ParamSlot::own_reader, "component weights (positive)"},
    {"mixture", "means", 0, 0, 0, ParamSlot::own_reader, "component means"},
    {"mixture", "stds", 0, 0, 0, ParamSlot::own_reader,
     "component standard deviations (positive)"},
    {"file", "path", 0, 0, 0, ParamSlot::own_reader, "the samples file"},
    {"file", "format", 0, 0, 0, ParamSlot::own_reader, "auto, text, csv or hdf5"},
    {"file", "column", 0, 0, 0, ParamSlot::own_reader, "csv column (index or header name)"},
    {"file", "dataset", 0, 0, 0, ParamSlot::own_reader, "hdf5 dataset name"},
    {"file", "skip_invalid", 0, 0, 0, ParamSlot::own_reader,
     "skip values that do not parse instead of refusing"},
    {"file", "val_fraction", 0, 0, 0, ParamSlot::own_reader, "fraction of the samples held out"},
};

bool has_param(const std::string& kind, const std::string& key) {
  for (const DistParam& d : kParams)
    if (kind == d.kind && key == d.key) return true;
  return false;
}

// A mixture's lists, checked entry by entry.
void read_mixture(ConfigReader& r, const std::string& p, DistributionParams& q) {
  const size_t n = r.list_size(p + "weights");
  if (n == 0) r.fail_at(p + "weights", "a mixture needs weights, means and stds lists");
  q.weights = r.numbers(p + "weights", {}, n);
  q.means = r.numbers(p + "means", {}, n);
  q.stds = r.numbers(p + "stds", {}, n);
  for (size_t i = 0; i < n; ++i) {
    if (!(q.weights[i] > 0 && q.weights[i] <= kBig))
      r.fail_at(p + "weights", "weights must be positive and at most 1e9");
    if (!(q.stds[i] > 0 && q.stds[i] <= kBig))
      r.fail_at(p + "stds", "stds must be positive and at most 1e9");
    if (!(std::fabs(q.means[i]) <= kBig)) r.fail_at(p + "means", "means must be within +-1e9");
  }
}

void read_file_source(ConfigReader& r, const std::string& p, DistSpec& d) {
  d.from_file = true;
  d.file.path = r.string(p + "path");
  d.file.format = r.choice(p + "format", "auto", {"auto", "text", "csv", "hdf5"});
  d.file.column = r.string(p + "column", "0");
  d.file.dataset = r.string(p + "dataset", "samples");
  d.file.skip_invalid = r.boolean(p + "skip_invalid", false);
  d.val_fraction = r.number(p + "val_fraction", 0.1, 0.01, 0.9);
}

void read_dist_params(ConfigReader& r, const std::string& p, DistSpec& d) {
  DistributionParams& q = d.params;
  for (const DistParam& e : kParams)
    if (e.kind != q.kind && !has_param(q.kind, e.key)) r.not_used(p + e.key, "kind is " + q.kind);
  for (const DistParam& e : kParams) {
    if (e.kind != q.kind || e.slot == ParamSlot::own_reader) continue;
    const std::string key = p + e.key;
    const double v = e.slot == ParamSlot::a_integer
                         ? double(r.integer(key, int64_t(e.def), int64_t(e.lo), int64_t(e.hi)))
                     : std::isnan(e.def) ? r.number(key, e.lo, e.hi)
                                         : r.number(key, e.def, e.lo, e.hi);
    (e.slot == ParamSlot::b ? q.b : q.a) = v;
  }
  if (q.kind == "uniform" && q.b <= q.a) r.fail_at(p + "high", "must be greater than low");
  if (q.kind == "mixture") read_mixture(r, p, q);
  if (q.kind == "file") read_file_source(r, p, d);
}

}  // namespace

void add_distribution_meanings(std::map<std::string, std::string>& out) {
  out["distributions[].kind"] = "a built-in law (normal, gamma, ...) or file";
  out["distributions[].name"] = "the name in the summary and plots (default: the kind)";
  // Kinds sharing a key and a meaning are named together: "normal, lognormal, laplace: location".
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_key;
  for (const DistParam& e : kParams) {
    auto& groups = by_key[e.key];
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.second == e.meaning; });
    if (it == groups.end())
      groups.emplace_back(e.kind, e.meaning);
    else
      it->first += std::string(", ") + e.kind;
  }
  for (const auto& [key, groups] : by_key) {
    std::string m;
    for (const auto& [kinds, meaning] : groups) m += (m.empty() ? "" : "; ") + kinds + ": " + meaning;
    out["distributions[]." + key] = m;
  }
}

FitConfig read_fit_config(ConfigReader& r) {
  FitConfig c;
  fit_settings().read(r, c);
  c.bide.batch_invariant = c.mode.deterministic;
  const size_t n = r.list_size("distributions");
  if (n == 0) r.fail_at("distributions", "list at least one distribution");
  for (size_t i = 0; i < n; ++i) {
    const std::string p = "distributions." + std::to_string(i) + ".";
    DistSpec d;
    d.params.kind = r.choice(p + "kind", "", kKinds);
    d.name = r.string(p + "name", d.params.kind);
    r.default_is("distributions[].name", "the kind");
    // summary.csv's rows, curves.csv's and the plots' panels are keyed by the name.
    for (size_t j = 0; j < c.dists.size(); ++j)
      if (c.dists[j].name == d.name)
        r.fail_at(p + "name", "'" + d.name + "' names distributions." + std::to_string(j) +
                                  " too; give each its own name (the outputs' rows are keyed by it)");
    read_dist_params(r, p, d);
    c.dists.push_back(d);
  }
  r.finish();
  return c;
}

}  // namespace bg::cli
