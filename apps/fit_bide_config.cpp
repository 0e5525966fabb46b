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
  fit_settings().read(r, c);
  // Batch-invariant arithmetic (docs/determinism.md): the projections' matmuls take the
  // batch-invariant algorithm and the SICK pass a partition fixed per example.
  c.mode = read_compute_mode(r, ModeKeys::deterministic_only);
  c.bide.batch_invariant = c.mode.deterministic;
  read_adamw_and_schedule(r, {0.1, {0.9, 0.96}, 0.01, ScheduleKind::exponential, 1e-5}, c.steps, &c.adamw,
                          &c.schedule);
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
