// fit_bide_report.cpp: evaluation and outputs of `bitgrad fit-bide`: per distribution the
// held-out NLL, the KS distance to the reference CDF, mean, std, median and 1%/99% quantiles of
// the fit and of the reference (the true law, or the held-out samples of a file), the CDF and
// density curves, and the files of the run. Everything is computed first and written last.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli.h"
#include "core/checkpoint.h"
#include "core/config.h"
#include "fit_bide.h"
#include "plot.h"

namespace bg::cli {
namespace {

std::string fmt(double v, int prec = 4) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

// A distribution over the finite patterns in value order, read as a density that is uniform
// over each pattern's bucket (the values that round to it: midway to each neighbour). Its CDF
// is continuous and piecewise linear, so a plot bin narrower than the value spacing gets the
// density of the bucket it falls in instead of nothing (no comb teeth), and a wide bin the
// mean density over it.
class BucketCdf {
 public:
  BucketCdf(std::vector<double> values, const std::vector<double>& mass)
      : values_(std::move(values)), cum_(mass.size() + 1, 0.0), upper_(mass.size()) {
    const size_t n = values_.size();
    for (size_t i = 0; i < n; ++i) cum_[i + 1] = cum_[i] + mass[i];
    for (size_t i = 0; i < n; ++i)
      upper_[i] = i + 1 < n ? 0.5 * (values_[i] + values_[i + 1])
                            : values_[i] + 0.5 * (values_[i] - values_[n > 1 ? i - 1 : i]);
  }
  double operator()(double x) const {
    const size_t n = values_.size();
    const size_t i = size_t(std::lower_bound(upper_.begin(), upper_.end(), x) - upper_.begin());
    if (i >= n) return cum_[n];
    const double lower = i > 0 ? upper_[i - 1] : values_[0] - (upper_[0] - values_[0]);
    if (x <= lower) return cum_[i];
    const double width = upper_[i] - lower;
    return cum_[i] + (cum_[i + 1] - cum_[i]) * (width > 0 ? (x - lower) / width : 1.0);
  }

 private:
  std::vector<double> values_, cum_, upper_;
};

// The value of the first pattern (in value order) where the step CDF reaches q.
double step_quantile(const std::vector<double>& values, const std::vector<double>& cdf, double q) {
  const size_t i = size_t(std::lower_bound(cdf.begin(), cdf.end(), q - 1e-12) - cdf.begin());
  return values[std::min(i, values.size() - 1)];
}

struct Row {
  std::string name;
  double range_lo, range_hi;
  double nll, ks, nonfinite;
  double fit[5], ref[5];  // mean, std, median, q01, q99
  int64_t skipped, outside;
};

}  // namespace

void report_fit(const FitConfig& cfg, const ConfigReader& reader, const std::vector<DistData>& data,
                const FitResult& fit) {
  const BideCode code = cfg.bide.code;
  const int64_t n_dist = int64_t(data.size()), k_all = int64_t(1) << code.bits;
  const std::vector<double> logp_all =
      bide_pattern_log_probs(fit.w_all, fit.r_all, fit.eval_options).to_vector<double>();
  const BideMoments mom = bide_moments(fit.w_all, fit.r_all, fit.eval_options);
  const std::vector<double> mean_fit = mom.mean.to_vector<double>(),
                            var_fit = mom.variance.to_vector<double>(),
                            nonfinite = mom.nonfinite_mass.to_vector<double>();
  // Finite patterns in value order, and their values.
  std::vector<uint32_t> order;
  std::vector<double> values;
  for (uint32_t key = 0; key < uint32_t(k_all); ++key) {
    const uint32_t k = code.from_order_key(key);
    if (!code.finite(k)) continue;
    order.push_back(k);
    values.push_back(code.value(k));
  }
  std::vector<Row> rows;
  std::vector<plot::Panel> panels;
  std::ostringstream curves;
  curves << "distribution,x,cdf_fit,cdf_true,density_fit,density_true\n";
  for (int64_t d = 0; d < n_dist; ++d) {
    const DistData& dd = data[size_t(d)];
    const double* lp = logp_all.data() + d * k_all;
    Row row;
    row.name = cfg.dists[size_t(d)].name;
    row.range_lo = dd.full_support ? -INFINITY : dd.range_lo;
    row.range_hi = dd.full_support ? INFINITY : dd.range_hi;
    row.skipped = dd.skipped;
    row.nonfinite = nonfinite[size_t(d)];
    // Held-out NLL over the values inside the support; those outside (drawn past the training
    // values' range) are counted, not averaged as +inf.
    double nll = 0;
    row.outside = 0;
    for (uint32_t k : dd.eval) {
      if (lp[k] == -INFINITY)
        ++row.outside;
      else
        nll -= lp[k];
    }
    row.nll = nll / double(std::max<int64_t>(1, int64_t(dd.eval.size()) - row.outside));
    // Reference CDF at each finite pattern: the true law rounded to the nearest value, or the
    // empirical CDF of the held-out samples.
    std::vector<double> sorted_eval = dd.eval_values;
    std::sort(sorted_eval.begin(), sorted_eval.end());
    auto empirical_cdf = [&](double x) {
      return double(std::upper_bound(sorted_eval.begin(), sorted_eval.end(), x) -
                    sorted_eval.begin()) /
             double(sorted_eval.size());
    };
    auto ref_cdf_at = [&](size_t i) {
      if (!dd.truth) return empirical_cdf(values[i]);
      if (i + 1 == order.size()) return 1.0;
      return dd.truth->cdf(code.is_float() ? 0.5 * (values[i] + values[i + 1]) : values[i]);
    };
    double cum = 0, ks = 0;
    std::vector<double> fit_mass(order.size()), fit_cdf(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      fit_mass[i] = std::exp(lp[order[i]]);
      cum += fit_mass[i];
      fit_cdf[i] = cum;
      // -0 and +0 are one value: compare the CDFs after the last pattern of a value.
      if (i + 1 < order.size() && values[i + 1] == values[i]) continue;
      ks = std::max(ks, std::fabs(cum - ref_cdf_at(i)));
    }
    row.ks = ks;
    // Moments and quantiles: the fit's over its finite mass; the reference's from the true law
    // or the held-out values.
    const double qs[3] = {0.5, 0.01, 0.99};
    row.fit[0] = mean_fit[size_t(d)];
    row.fit[1] = std::sqrt(var_fit[size_t(d)]);
    for (int j = 0; j < 3; ++j) row.fit[2 + j] = step_quantile(values, fit_cdf, qs[j] * cum);
    if (dd.truth) {
      row.ref[0] = dd.truth->mean();
      row.ref[1] = dd.truth->stddev();
      for (int j = 0; j < 3; ++j) row.ref[2 + j] = dd.truth->quantile(qs[j]);
    } else {
      double m = 0, v = 0;
      for (double x : dd.eval_values) m += x / double(dd.eval_values.size());
      for (double x : dd.eval_values) v += (x - m) * (x - m) / double(dd.eval_values.size());
      row.ref[0] = m;
      row.ref[1] = std::sqrt(v);
      for (int j = 0; j < 3; ++j) {  // the inverse empirical CDF: the ceil(q n)-th smallest
        const double rank = std::ceil(qs[j] * double(sorted_eval.size()));
        row.ref[2 + j] = sorted_eval[std::min(sorted_eval.size(), size_t(std::max(rank, 1.0))) - 1];
      }
    }
    rows.push_back(row);
    // Curves over [q 0.002, q 0.98] of the reference, in plot_bins equal bins. Densities are
    // CDF differences over each bin of bucket-interpolated CDFs (BucketCdf): the fit's, and for
    // sample files the held-out values' (they too sit on representable values).
    double lo, hi;
    if (dd.truth) {
      lo = dd.truth->quantile(0.002);
      hi = dd.truth->quantile(0.98);
    } else {
      lo = sorted_eval[size_t(0.002 * double(sorted_eval.size() - 1))];
      hi = sorted_eval[size_t(0.98 * double(sorted_eval.size() - 1))];
    }
    if (!(hi > lo)) hi = lo + 1;
    const BucketCdf fit_smooth(values, fit_mass);
    std::vector<double> eval_mass(values.size(), 0.0);
    for (double x : dd.eval_values) {
      const size_t i = size_t(std::lower_bound(values.begin(), values.end(), x) - values.begin());
      if (i < values.size()) eval_mass[i] += 1.0 / double(dd.eval_values.size());
    }
    const BucketCdf eval_smooth(values, eval_mass);
    auto ref_cdf_x = [&](double x) { return dd.truth ? dd.truth->cdf(x) : eval_smooth(x); };
    const int64_t nb = cfg.plot_bins;
    const double width = (hi - lo) / double(nb);
    std::vector<double> xs, cf, ct, df, dt;
    for (int64_t b = 0; b < nb; ++b) {
      const double x0 = lo + double(b) * width, x1 = x0 + width, xc = 0.5 * (x0 + x1);
      xs.push_back(xc);
      cf.push_back(fit_smooth(x1));
      ct.push_back(ref_cdf_x(x1));
      df.push_back((fit_smooth(x1) - fit_smooth(x0)) / width);
      dt.push_back((ref_cdf_x(x1) - ref_cdf_x(x0)) / width);
      curves << row.name << "," << xc << "," << cf.back() << "," << ct.back() << "," << df.back()
             << "," << dt.back() << "\n";
    }
    const std::string ref_label = dd.truth ? "true" : "held-out samples";
    panels.push_back(
        {row.name + ": CDF",
         "value",
         "P(X <= x)",
         {{"BIDE fit", "#d62728", xs, cf, false}, {ref_label, "#1f77b4", xs, ct, true}},
         true});
    panels.push_back(
        {row.name + ": density",
         "value",
         "density (per bin)",
         {{"BIDE fit", "#d62728", xs, df, false}, {ref_label, "#1f77b4", xs, dt, true}},
         true});
  }

  // Report and write every output (atomically) only now that everything succeeded.
  std::printf("\n%-14s %9s %8s %10s %10s %9s %9s %10s %10s %10s %8s %8s\n", "distribution", "NLL",
              "KS", "mean fit", "mean ref", "std fit", "std ref", "median fit", "median ref",
              "nonfinite", "skipped", "outside");
  std::ostringstream summary;
  summary << "distribution,range_lo,range_hi,nll,ks,mean_fit,mean_ref,std_fit,std_ref,median_fit,"
             "median_ref,q01_fit,q01_ref,q99_fit,q99_ref,nonfinite_mass,skipped,outside\n";
  for (size_t d = 0; d < rows.size(); ++d) {
    const Row& r = rows[d];
    std::printf("%-14s %9.4f %8.4f %10s %10s %9s %9s %10s %10s %10.2e %8lld %8lld\n",
                r.name.c_str(), r.nll, r.ks, fmt(r.fit[0]).c_str(), fmt(r.ref[0]).c_str(),
                fmt(r.fit[1]).c_str(), fmt(r.ref[1]).c_str(), fmt(r.fit[2]).c_str(),
                fmt(r.ref[2]).c_str(), r.nonfinite, (long long)r.skipped, (long long)r.outside);
    summary << r.name << "," << r.range_lo << "," << r.range_hi << "," << r.nll << "," << r.ks;
    for (int j = 0; j < 5; ++j) summary << "," << r.fit[j] << "," << r.ref[j];
    summary << "," << r.nonfinite << "," << r.skipped << "," << r.outside << "\n";
    if (!data[d].skip_note.empty())
      std::printf("  %s: skipped %lld value(s), first: %s\n", r.name.c_str(), (long long)r.skipped,
                  data[d].skip_note.c_str());
    if (r.outside > 0)
      std::printf("  %s: %lld held-out value(s) outside the range [%g, %g], left out of the NLL\n",
                  r.name.c_str(), (long long)r.outside, r.range_lo, r.range_hi);
  }
  const BideValueType type = cfg.bide.code.type;
  if (cfg.range == RangeMode::all && (type == BideValueType::f16 || type == BideValueType::bf16))
    std::printf(
        "note: under bide.range: all the fit's moments sum over every finite pattern; the small "
        "mass a fit leaves spread over the type's far tails (to +-65504 in float16) inflates "
        "mean and std fit, while KS and NLL are unaffected. bide.range: auto gives the moments "
        "of the data's range.\n");
  // One pass: the debiased EMA curve feeds both metrics.csv and loss.svg.
  std::ostringstream metrics;
  metrics << "step,loss,ema_loss,lr\n";
  std::vector<double> steps_x, loss_y, ema_y;
  double e = 0;
  for (size_t s = 0; s < fit.losses.size(); ++s) {
    e = cfg.ema * e + (1 - cfg.ema) * fit.losses[s];
    steps_x.push_back(double(s + 1));
    loss_y.push_back(fit.losses[s]);
    ema_y.push_back(e / (1 - std::pow(cfg.ema, double(s + 1))));
    metrics << s + 1 << "," << fit.losses[s] << "," << ema_y.back() << ","
            << cfg.schedule.at(int64_t(s)) << "\n";
  }
  const std::string& out = cfg.out_dir;
  write_file_atomic(out + "/config.yaml", reader.effective_yaml());
  write_file_atomic(out + "/metrics.csv", metrics.str());
  write_file_atomic(out + "/summary.csv", summary.str());
  write_file_atomic(out + "/curves.csv", curves.str());
  write_file_atomic(out + "/fit.svg", plot::svg(panels, 2));
  write_file_atomic(out + "/loss.svg", plot::svg({{"training loss (mean NLL, nats)",
                                                   "step",
                                                   "loss",
                                                   {{"loss", "#bbbbbb", steps_x, loss_y, false},
                                                    {"EMA", "#d62728", steps_x, ema_y, false}}}},
                                                 1, 640, 360));
  CheckpointWriter ck(out + "/checkpoint.h5");
  for (const auto& [name, t] : fit.params.named()) ck.tensor(name, t);
  // Optimizer state in a group of its own, as in train checkpoints.
  ck.tensor("optimizer/exp_avg", fit.optimizer.exp_avg());
  ck.tensor("optimizer/exp_avg_sq", fit.optimizer.exp_avg_sq());
  if (fit.eval_options.ranges_host.defined())
    ck.tensor("bide/support", fit.eval_options.ranges_host);  // (4, N) pattern ranges
  ck.attr("format", std::string("bitgrad-bide-fit-v1"));
  ck.attr("config", reader.effective_yaml());
  ck.attr("step", cfg.steps);
  ck.attr("seed", int64_t(cfg.seed));
  ck.commit();
  std::printf(
      "\ntraining: %lld steps in %.3f s (%.0f steps/s) | final EMA loss %.4f | outputs in %s\n",
      (long long)cfg.steps, fit.train_seconds, double(cfg.steps) / fit.train_seconds, fit.final_ema,
      out.c_str());
}

}  // namespace bg::cli
