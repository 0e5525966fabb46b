// test_forecast_metrics.cpp: models/forecast/forecast_metrics.h against independent computations: the
// exact CRPS against a numeric integral and the empirical identity, the fair estimator's
// expectation over every sample set, the Gaussian closed form, quantiles, the weighted quantile
// loss, MASE with seasonal naive, coverage and the geometric mean.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "harness.h"
#include "models/forecast/forecast_metrics.h"
#include "data/forecast_truth.h"

using namespace bg;

namespace {

// The CRPS integral by the midpoint rule on a fine grid.
double crps_numeric(const DiscreteDistribution& d, double y) {
  const double lo = std::min(d.values.front(), y) - 1, hi = std::max(d.values.back(), y) + 1;
  const int steps = 400000;
  const double dx = (hi - lo) / steps;
  double total = 0;
  for (int k = 0; k < steps; ++k) {
    const double x = lo + (k + 0.5) * dx;
    double f = 0;
    for (size_t i = 0; i < d.values.size(); ++i)
      if (d.values[i] <= x) f += d.probs[i];
    const double step = x >= y ? 1.0 : 0.0;
    total += (f - step) * (f - step) * dx;
  }
  return total;
}

}  // namespace

TEST_CASE("cpu: forecast CRPS: exact over a discrete law, equal to the integral") {
  // Ties (as -0 and +0 are) and uneven gaps.
  const DiscreteDistribution d{{-2.0, -0.5, 0.0, 0.0, 1.25, 4.0}, {0.1, 0.2, 0.05, 0.15, 0.3, 0.2}};
  for (double y : {-3.0, -2.0, -1.0, 0.0, 0.7, 1.25, 3.9, 4.0, 6.5})
    CHECK(crps_exact(d, y) == doctest::Approx(crps_numeric(d, y)).epsilon(1e-4));
  // A point mass scores |v - y|.
  const DiscreteDistribution point{{2.5}, {1.0}};
  CHECK(crps_exact(point, -1.0) == doctest::Approx(3.5));
  CHECK(crps_exact(point, 2.5) == 0.0);
}

TEST_CASE("cpu: forecast CRPS: the fair estimator is unbiased and relates to the empirical law") {
  // Every sample set of size 3 from {0 w.p. 1/2, 1 w.p. 1/2}: the estimator's mean is the CRPS.
  const DiscreteDistribution coin{{0.0, 1.0}, {0.5, 0.5}};
  for (double y : {-0.5, 0.3, 1.0}) {
    double mean = 0;
    for (int mask = 0; mask < 8; ++mask) {
      std::vector<double> s = {double(mask & 1), double((mask >> 1) & 1), double((mask >> 2) & 1)};
      mean += crps_fair(s, y) / 8;
    }
    CHECK(mean == doctest::Approx(crps_exact(coin, y)).epsilon(1e-12));
  }
  // On m samples: fair = exact(empirical) + sum_ij |Xi - Xj| (1/(2m^2) - 1/(2m(m-1))).
  std::vector<double> s = {0.3, -1.2, 2.2, 0.3, 5.0};
  const double m = double(s.size());
  double pairs = 0;
  for (double a : s)
    for (double b : s) pairs += std::fabs(a - b);
  DiscreteDistribution emp{{-1.2, 0.3, 0.3, 2.2, 5.0}, {0.2, 0.2, 0.2, 0.2, 0.2}};
  const double y = 1.0;
  CHECK(crps_fair(s, y) == doctest::Approx(crps_exact(emp, y) + pairs / (2 * m * m) -
                                           pairs / (2 * m * (m - 1))));
  // Many N(0, 1) samples against the closed form z (2 Phi(z) - 1) + 2 phi(z) - 1 / sqrt(pi).
  std::mt19937_64 gen(5);
  std::normal_distribution<double> normal;
  std::vector<double> g(40000);
  for (double& v : g) v = normal(gen);
  const double z = 0.7;
  const double closed = z * std::erf(z / std::sqrt(2.0)) +
                        2 * std::exp(-z * z / 2) / std::sqrt(2 * M_PI) - 1 / std::sqrt(M_PI);
  CHECK(crps_fair(g, z) == doctest::Approx(closed).epsilon(0.01));
  CHECK_THROWS_WITH(crps_fair(s = {1.0}, 0.0), doctest::Contains("at least 2 samples"));
}

TEST_CASE("cpu: forecast quantiles, pinball and weighted quantile loss") {
  const DiscreteDistribution d{{1, 2, 3}, {0.2, 0.5, 0.3}};
  CHECK(quantile(d, 0.1) == 1);
  CHECK(quantile(d, 0.2) == 1);
  CHECK(quantile(d, 0.5) == 2);
  CHECK(quantile(d, 0.7) == 2);
  CHECK(quantile(d, 0.71) == 3);
  double prev = -1;
  for (double q = 0.01; q < 1; q += 0.01) {  // monotone at any level
    CHECK(quantile(d, q) >= prev);
    prev = quantile(d, q);
  }
  CHECK_THROWS_WITH(quantile(d, 1.0), doctest::Contains("outside (0, 1)"));
  CHECK(sample_quantile({1, 2, 3, 4}, 0.5) == 2);
  CHECK(sample_quantile({1, 2, 3, 4}, 0.51) == 3);
  CHECK(pinball(0.9, 5, 3) == doctest::Approx(0.2));  // over-forecast: (1 - 0.9) * 2
  CHECK(pinball(0.9, 3, 5) == doctest::Approx(1.8));  // under: 0.9 * 2
  // Two levels, two points: mean over levels of 2 sum pinball / sum |y|.
  const double wql = weighted_quantile_loss({0.1, 0.9}, {{1, 1}, {4, 6}}, {2, 4});
  const double l1 = 2 * (pinball(0.1, 1, 2) + pinball(0.1, 1, 4)) / 6;
  const double l9 = 2 * (pinball(0.9, 4, 2) + pinball(0.9, 6, 4)) / 6;
  CHECK(wql == doctest::Approx((l1 + l9) / 2));
}

TEST_CASE("cpu: forecast MASE with seasonal naive, coverage, geometric mean") {
  const std::vector<double> x = {1, 5, 2, 6, 3, 7};  // season 2: |2-1|, |6-5|, |3-2|, |7-6| = 1
  CHECK(seasonal_naive_scale(x, 2) == 1.0);
  CHECK(seasonal_naive_forecast(x, 2, 3) == std::vector<double>{3, 7, 3});
  CHECK(mase({3, 7, 3}, {4, 8, 4}, seasonal_naive_scale(x, 2)) == 1.0);
  CHECK(seasonal_naive_scale({1, 2, 1, 2}, 2) == 0.0);
  CHECK_THROWS_WITH(mase({1}, {1}, 0.0), doctest::Contains("seasonal-naive error is 0"));
  CHECK(coverage({0, 0, 0, 0}, {1, 1, 1, 1}, {0.5, 1.0, 1.5, -0.1}) == 0.5);
  CHECK(geometric_mean({2, 8}) == doctest::Approx(4.0));
  CHECK_THROWS_WITH(geometric_mean({1, 0}), doctest::Contains("has no logarithm"));
}

TEST_CASE("cpu: a continuous law on the float16 grid sums to 1 and keeps its CRPS") {
  // N(mu, sigma) in series units, scaled by 20: its grid law's CRPS is the closed form's up to
  // float16's rounding of the values (relative 2^-11).
  const double mu = 30, sigma = 8, scale = 20;
  auto cdf = [&](double x) { return 0.5 * std::erfc(-(x - mu) / (sigma * std::sqrt(2.0))); };
  const DiscreteDistribution d = on_float16_grid(cdf, scale);
  double total = 0;
  for (double p : d.probs) total += p;
  CHECK(total == doctest::Approx(1.0).epsilon(1e-12));
  for (double y : {12.0, 30.0, 41.5}) {
    const double z = (y - mu) / sigma;
    const double closed = sigma * (z * std::erf(z / std::sqrt(2.0)) +
                                   2 * std::exp(-z * z / 2) / std::sqrt(2 * M_PI) -
                                   1 / std::sqrt(M_PI));
    CHECK(crps_exact(d, y) == doctest::Approx(closed).epsilon(2e-3));
  }
  CHECK_THROWS_WITH(on_float16_grid(cdf, 0.0), doctest::Contains("is not positive"));
}

TEST_CASE("cpu: a synthetic series' truth file reads into its laws") {
  const std::string path =
      bg::test::scratch_path("bitgrad_truth.csv");
  std::ofstream(path)
      << "unique_id,ds,zero_mass,w1,kind1,loc1,scale1,df1,w2,kind2,loc2,scale2,df2\n"
      << "a,1,0.0,0.5,normal,-3.0,1.0,0.0,0.5,normal,3.0,1.0,0.0\n"
      << "a,2,0.0,1.0,student_t,1.0,2.0,3.0,0.0,normal,0.0,1.0,0.0\n"
      << "b,1,0.25,0.75,normal_pos,0.5,1.0,0.0,0.0,normal,0.0,1.0,0.0\n"
      << "c,1,0.7,0.3,lognormal,0.0,1.0,0.0,0.0,normal,0.0,1.0,0.0\n";
  const auto laws = read_truth(path);
  REQUIRE(laws.size() == 4);
  const TruthLaw& bimodal = laws.at({"a", "1"});
  CHECK(bimodal.cdf(0.0) == doctest::Approx(0.5));
  CHECK(bimodal.cdf(3.0) == doctest::Approx(0.5 * 0.5 * std::erfc(-6 / std::sqrt(2.0)) + 0.25));
  // Student-t(3) at 1 is 0.8044988905...; here at loc + scale * 1.
  CHECK(laws.at({"a", "2"}).cdf(3.0) == doctest::Approx(0.8044988905).epsilon(1e-8));
  // Censored at 0: 0.25 at zero, continuous above with its conditioned normal.
  const TruthLaw& floor = laws.at({"b", "1"});
  CHECK(floor.cdf(-1e-9) == 0.0);
  CHECK(floor.cdf(0.0) == 0.25);
  CHECK(floor.cdf(1e9) == doctest::Approx(1.0));
  const double phi0 = 0.5 * std::erfc(0.5 / std::sqrt(2.0));  // P(N(0.5, 1) < 0)
  const double at1 = 0.5 * std::erfc(-0.5 / std::sqrt(2.0));  // P(N(0.5, 1) < 1)
  CHECK(floor.cdf(1.0) == doctest::Approx(0.25 + 0.75 * (at1 - phi0) / (1 - phi0)));
  const TruthLaw& zeros = laws.at({"c", "1"});
  CHECK(zeros.cdf(1.0) == doctest::Approx(0.7 + 0.3 * 0.5));
  // The floor's grid law: its mass at zero stays there.
  const DiscreteDistribution d = on_float16_grid([&](double x) { return zeros.cdf(x); }, 1.0);
  double at_zero = 0;
  for (size_t i = 0; i < d.values.size(); ++i)
    if (d.values[i] == 0) at_zero = d.probs[i];
  CHECK(at_zero == doctest::Approx(0.7).epsilon(1e-6));
  // Refusals name file and line.
  std::ofstream(path) << "unique_id,ds,zero_mass,w1,kind1,loc1,scale1,df1,w2,kind2,loc2,scale2,df2\n"
                      << "a,1,0.0,0.5,gumbel,0,1,0,0.5,normal,0,1,0\n";
  CHECK_THROWS_WITH(read_truth(path), doctest::Contains("bitgrad_truth.csv:2: kind 'gumbel'"));
  std::ofstream(path) << "unique_id,ds,zero_mass,w1,kind1,loc1,scale1,df1,w2,kind2,loc2,scale2,df2\n"
                      << "a,1,0.1,0.5,normal,0,1,0,0.5,normal,0,1,0\n";
  CHECK_THROWS_WITH(read_truth(path), doctest::Contains(":2: zero_mass and the weights sum to 1.1"));
}
