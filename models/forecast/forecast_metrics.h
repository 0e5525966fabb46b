// forecast_metrics.h: the scores a probabilistic forecast is judged by, as the forecasting field
// computes them (GluonTS, Chronos, GIFT-Eval): CRPS, exact for a distribution over finitely many
// values and the fair estimator over sample paths; quantiles read off a CDF; the weighted
// quantile loss; MASE against the in-sample seasonal-naive error; interval coverage; and the
// geometric mean of per-series ratios to a baseline. Pure arithmetic in double, on the host.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "data/series.h"

namespace bg {

// A distribution over finitely many values: `values` ascending (ties allowed: -0 and +0), `probs`
// their probabilities (summing to 1 up to rounding; the CDF is their running sum).
struct DiscreteDistribution {
  std::vector<double> values, probs;
};

// A continuous law, given by its CDF in a series' units, as a law over a format's grid
// (data/value_format.h) of values mapped back by the window's scale: grid value i becomes
// ws.value(values[i]), with probability cdf(ws.value(upper_i)) - cdf(ws.value(lower_i)). What
// the Gaussian, Student-t and binned heads and the true process forecast, on the support the
// BIDE head has.
DiscreteDistribution on_grid(const ValueCode& code, const std::function<double(double)>& cdf,
                             const WindowScale& ws);
// The float16 grid scaled by `scale` (what the tests check the mapping with).
inline DiscreteDistribution on_float16_grid(const std::function<double(double)>& cdf,
                                            double scale) {
  return on_grid(value_code(ValueFormat::float16), cdf, WindowScale{0.0, scale});
}

// CRPS(F, y) = integral over x of (F(x) - 1{x >= y})^2, exactly, for the step CDF F of `d`: a sum
// over the intervals between consecutive support points (and y), each where F is constant.
double crps_exact(const DiscreteDistribution& d, double y);

// The fair (unbiased) CRPS estimator over m >= 2 samples X_i of the forecast:
//   mean_i |X_i - y| - sum_{i,j} |X_i - X_j| / (2 m (m - 1)),
// whose expectation over the samples is the forecast distribution's CRPS (Ferro 2014; the
// estimator GIFT-Eval uses for sample paths). O(m log m): `samples` is sorted in place.
double crps_fair(std::vector<double>& samples, double y);

// The q-quantile of `d`: its smallest value whose CDF reaches q (q in (0, 1)). Monotone in q by
// construction.
double quantile(const DiscreteDistribution& d, double q);
// The q-quantile of samples (sorted): the ceil(q m)-th smallest (the inverse empirical CDF).
double sample_quantile(const std::vector<double>& sorted, double q);

// The pinball loss of quantile forecast `pred` at level q: (1{y < pred} - q) (pred - y), >= 0.
double pinball(double q, double pred, double y);

// Over every forecast point t of every series, levels `levels`: the weighted quantile loss
//   mean over q of 2 sum_t pinball(q, pred[q][t], y[t]) / sum_t |y[t]|
// (GluonTS's mean_wQuantileLoss). pred[i] holds level i's forecasts, aligned with y.
double weighted_quantile_loss(const std::vector<double>& levels,
                              const std::vector<std::vector<double>>& pred,
                              const std::vector<double>& y);

// The in-sample seasonal-naive scale: mean over t >= m of |x[t] - x[t - m]| (season m >= 1), the
// denominator of MASE. 0 when x is shorter than m + 1 or constant at that lag.
double seasonal_naive_scale(const std::vector<double>& insample, int64_t season);
// MASE of point forecasts `pred` of `y`: mean |pred - y| / scale.
double mase(const std::vector<double>& pred, const std::vector<double>& y, double scale);
// Seasonal naive's forecast of the h points after `insample`: each the value one season earlier.
std::vector<double> seasonal_naive_forecast(const std::vector<double>& insample, int64_t season,
                                            int64_t h);

// The fraction of y inside [lo, hi] (ends included).
double coverage(const std::vector<double>& lo, const std::vector<double>& hi,
                const std::vector<double>& y);

// exp(mean log r) over ratios r > 0: the geometric mean GIFT-Eval and Chronos aggregate
// per-series ratios to a baseline with. A ratio of 0 or below (or not finite) is refused.
double geometric_mean(const std::vector<double>& ratios);

}  // namespace bg
