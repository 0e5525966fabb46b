#include "bide_fit_eval.h"

#include <algorithm>
#include <cmath>

namespace bg {
namespace {

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

// The finite patterns in value order, and their values.
struct ValueOrder {
  std::vector<uint32_t> order;
  std::vector<double> values;
};

// From one distribution's log-probabilities `lp` over all 2^B patterns: the held-out NLL
// (values outside the support counted, not averaged as +inf), KS, and the quantiles of the fit
// and the moments and quantiles of the reference. Returns the fit's mass per ordered pattern.
std::vector<double> fill_row(const BideCode& code, const ValueOrder& vo, const DistData& dd,
                             const double* lp, const std::vector<double>& sorted_eval,
                             FitRow& row) {
  const std::vector<uint32_t>& order = vo.order;
  const std::vector<double>& values = vo.values;
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
  // or the held-out values. (The fit's mean and std are set by the caller from the moments.)
  const double qs[3] = {0.5, 0.01, 0.99};
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
  return fit_mass;
}

// Densities are CDF differences over each bin of bucket-interpolated CDFs (BucketCdf): the
// fit's, and for sample files the held-out values' (they too sit on representable values).
FitCurve curve(const ValueOrder& vo, const DistData& dd, const std::vector<double>& fit_mass,
               const std::vector<double>& sorted_eval, int64_t bins) {
  const std::vector<double>& values = vo.values;
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
  const double width = (hi - lo) / double(bins);
  FitCurve c;
  c.reference_is_law = dd.truth != nullptr;
  for (int64_t b = 0; b < bins; ++b) {
    const double x0 = lo + double(b) * width, x1 = x0 + width;
    c.x.push_back(0.5 * (x0 + x1));
    c.cdf_fit.push_back(fit_smooth(x1));
    c.cdf_ref.push_back(ref_cdf_x(x1));
    c.density_fit.push_back((fit_smooth(x1) - fit_smooth(x0)) / width);
    c.density_ref.push_back((ref_cdf_x(x1) - ref_cdf_x(x0)) / width);
  }
  return c;
}

}  // namespace

FitEvaluation evaluate_fit(const FitConfig& cfg, const std::vector<DistData>& data,
                           const Tensor& w_all, const Tensor& r_all,
                           const BideOptions& eval_options) {
  const BideCode code = cfg.bide.code;
  const int64_t n_dist = int64_t(data.size()), k_all = int64_t(1) << code.bits;
  const std::vector<double> logp_all =
      bide_pattern_log_probs(w_all, r_all, eval_options).to_vector<double>();
  const BideMoments mom = bide_moments(w_all, r_all, eval_options);
  const std::vector<double> mean_fit = mom.mean.to_vector<double>(),
                            var_fit = mom.variance.to_vector<double>(),
                            nonfinite = mom.nonfinite_mass.to_vector<double>();
  ValueOrder vo;
  for (uint32_t key = 0; key < uint32_t(k_all); ++key) {
    const uint32_t k = code.from_order_key(key);
    if (!code.finite(k)) continue;
    vo.order.push_back(k);
    vo.values.push_back(code.value(k));
  }
  FitEvaluation out;
  for (int64_t d = 0; d < n_dist; ++d) {
    const DistData& dd = data[size_t(d)];
    FitRow row;
    row.name = cfg.dists[size_t(d)].name;
    row.range_lo = dd.full_support ? -INFINITY : dd.range_lo;
    row.range_hi = dd.full_support ? INFINITY : dd.range_hi;
    row.skipped = dd.skipped;
    row.nonfinite = nonfinite[size_t(d)];
    row.fit[0] = mean_fit[size_t(d)];
    row.fit[1] = std::sqrt(var_fit[size_t(d)]);
    std::vector<double> sorted_eval = dd.eval_values;
    std::sort(sorted_eval.begin(), sorted_eval.end());
    const std::vector<double> fit_mass =
        fill_row(code, vo, dd, logp_all.data() + d * k_all, sorted_eval, row);
    out.rows.push_back(row);
    out.curves.push_back(curve(vo, dd, fit_mass, sorted_eval, cfg.plot_bins));
  }
  return out;
}

}  // namespace bg
