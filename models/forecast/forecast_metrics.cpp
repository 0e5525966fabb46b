#include "forecast_metrics.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "data/series.h"

namespace bg {

DiscreteDistribution on_grid(const ValueCode& code, const std::function<double(double)>& cdf,
                             const WindowScale& ws) {
  BG_CHECK(ws.scale > 0 && std::isfinite(ws.scale) && std::isfinite(ws.loc), "forecast", "scale ",
           ws.scale, " is not positive");
  const ValueGrid& g = code.grid();
  DiscreteDistribution d;
  d.values.reserve(g.values.size());
  d.probs.reserve(g.values.size());
  double below = 0;  // cdf at the current lower edge (-inf: 0)
  for (size_t i = 0; i < g.values.size(); ++i) {
    const double above = std::isinf(g.upper[i]) ? 1.0 : cdf(ws.value(g.upper[i]));
    d.values.push_back(ws.value(g.values[i]));
    d.probs.push_back(std::max(0.0, above - below));
    below = above;
  }
  return d;
}

double crps_exact(const DiscreteDistribution& d, double y) {
  const size_t n = d.values.size();
  BG_CHECK(n > 0 && d.probs.size() == n, "forecast", "a distribution needs as many probabilities (",
           d.probs.size(), ") as values (", n, "), at least one");
  // The breakpoints are the support points and y, merged in order. Between two of them F and
  // the step 1{x >= y} are constant, so each piece adds (F - step)^2 times its length; left of
  // the first both are 0 and right of the last both are 1.
  double total = 0, cdf = 0, step = 0, prev = std::min(d.values[0], y);
  size_t i = 0;
  bool y_taken = false;
  while (i < n || !y_taken) {
    const bool take_y = !y_taken && (i == n || y <= d.values[i]);
    const double x = take_y ? y : d.values[i];
    total += (cdf - step) * (cdf - step) * (x - prev);
    prev = x;
    if (take_y) {
      step = 1;
      y_taken = true;
    } else {
      cdf += d.probs[i++];
    }
  }
  return total;
}

double crps_fair(std::vector<double>& samples, double y) {
  const size_t m = samples.size();
  BG_CHECK(m >= 2, "forecast", "the fair CRPS needs at least 2 samples, got ", m);
  std::sort(samples.begin(), samples.end());
  double abs_err = 0, pair_sum = 0;
  // sum_{i<j} (x_j - x_i) over sorted samples: x_i appears with weight (2i - (m - 1)).
  for (size_t i = 0; i < m; ++i) {
    abs_err += std::fabs(samples[i] - y);
    pair_sum += samples[i] * (2.0 * double(i) - double(m - 1));
  }
  // sum over all ordered pairs is twice the unordered sum.
  return abs_err / double(m) - 2 * pair_sum / (2.0 * double(m) * double(m - 1));
}

double quantile(const DiscreteDistribution& d, double q) {
  BG_CHECK(q > 0 && q < 1, "forecast", "quantile level ", q, " is outside (0, 1)");
  double cdf = 0;
  for (size_t i = 0; i < d.values.size(); ++i) {
    cdf += d.probs[i];
    if (cdf >= q) return d.values[i];
  }
  return d.values.back();  // rounding left the total a hair below q
}

double sample_quantile(const std::vector<double>& sorted, double q) {
  BG_CHECK(!sorted.empty() && q > 0 && q < 1, "forecast", "sample quantile: level ", q, " of ",
           sorted.size(), " samples");
  const double rank = std::ceil(q * double(sorted.size()));
  return sorted[size_t(std::max(rank, 1.0)) - 1];
}

double pinball(double q, double pred, double y) {
  return ((y < pred ? 1.0 : 0.0) - q) * (pred - y);
}

double weighted_quantile_loss(const std::vector<double>& levels,
                              const std::vector<std::vector<double>>& pred,
                              const std::vector<double>& y) {
  BG_CHECK(!levels.empty() && pred.size() == levels.size(), "forecast",
           "one forecast row per quantile level");
  double denom = 0;
  for (double v : y) denom += std::fabs(v);
  BG_CHECK(denom > 0, "forecast", "the weighted quantile loss needs some y != 0");
  double total = 0;
  for (size_t l = 0; l < levels.size(); ++l) {
    BG_CHECK(pred[l].size() == y.size(), "forecast", "level ", levels[l], ": ", pred[l].size(),
             " forecasts for ", y.size(), " points");
    double s = 0;
    for (size_t t = 0; t < y.size(); ++t) s += pinball(levels[l], pred[l][t], y[t]);
    total += 2 * s / denom;
  }
  return total / double(levels.size());
}

double seasonal_naive_scale(const std::vector<double>& insample, int64_t season) {
  BG_CHECK(season >= 1, "forecast", "season must be at least 1, got ", season);
  const size_t m = size_t(season);
  if (insample.size() <= m) return 0;
  // Pairs with a missing value (NaN) have no error to count.
  double s = 0;
  size_t pairs = 0;
  for (size_t t = m; t < insample.size(); ++t) {
    const double d = std::fabs(insample[t] - insample[t - m]);
    if (d == d) s += d, ++pairs;
  }
  return pairs ? s / double(pairs) : 0;
}

double mase(const std::vector<double>& pred, const std::vector<double>& y, double scale) {
  BG_CHECK(pred.size() == y.size() && !y.empty(), "forecast", "MASE: ", pred.size(),
           " forecasts for ", y.size(), " points");
  BG_CHECK(scale > 0, "forecast",
           "MASE: the in-sample seasonal-naive error is 0 (a series "
           "constant at its season's lag has no scale)");
  double s = 0;
  for (size_t t = 0; t < y.size(); ++t) s += std::fabs(pred[t] - y[t]);
  return s / double(y.size()) / scale;
}

std::vector<double> seasonal_naive_forecast(const std::vector<double>& insample, int64_t season,
                                            int64_t h) {
  BG_CHECK(season >= 1 && int64_t(insample.size()) >= season, "forecast",
           "seasonal naive needs a season of history: ", insample.size(), " points, season ",
           season);
  std::vector<double> out;
  const int64_t n = int64_t(insample.size());
  for (int64_t i = 0; i < h; ++i) {
    // The value a season before, or where it is missing the one a whole season earlier still
    // (then the last observed value).
    int64_t at = n - season + i % season;
    while (at >= 0 && insample[size_t(at)] != insample[size_t(at)]) at -= season;
    if (at < 0)
      for (at = n - 1; at > 0 && insample[size_t(at)] != insample[size_t(at)];) --at;
    out.push_back(insample[size_t(at)]);
  }
  return out;
}

double coverage(const std::vector<double>& lo, const std::vector<double>& hi,
                const std::vector<double>& y) {
  BG_CHECK(lo.size() == y.size() && hi.size() == y.size() && !y.empty(), "forecast",
           "coverage: intervals and points differ in number");
  int64_t inside = 0;
  for (size_t t = 0; t < y.size(); ++t) inside += lo[t] <= y[t] && y[t] <= hi[t];
  return double(inside) / double(y.size());
}

double geometric_mean(const std::vector<double>& ratios) {
  BG_CHECK(!ratios.empty(), "forecast", "a geometric mean of no ratios");
  double s = 0;
  for (double r : ratios) {
    BG_CHECK(r > 0 && std::isfinite(r), "forecast", "a ratio of ", r,
             " has no logarithm (the baseline was exact, or the score is 0)");
    s += std::log(r);
  }
  return std::exp(s / double(ratios.size()));
}

}  // namespace bg
