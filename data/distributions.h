// distributions.h: the built-in distributions of `bitgrad fit-bide`: exact samplers driven by
// the shared counter-based RNG, and their true CDF, density (or mass) and moments, used to
// measure the fit (KS distance, mean/std) and to draw the "true" curves.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.h"

namespace bg {

// A host stream of uniforms/normals from Philox (seed, counter): reproducible everywhere.
class HostRng {
 public:
  explicit HostRng(uint64_t seed) : seed_(seed) {}
  double uniform();  // (0, 1)
  double normal();
  double gamma(double shape);  // Marsaglia-Tsang, scale 1

 private:
  uint64_t seed_, counter_ = 0;
};

class Distribution {
 public:
  virtual ~Distribution() = default;
  virtual double sample(HostRng& rng) const = 0;
  virtual double cdf(double x) const = 0;
  virtual double density(double x) const = 0;  // pdf, or pmf for discrete distributions
  virtual bool discrete() const { return false; }
  virtual double mean() const = 0;          // may be +inf
  virtual double stddev() const = 0;        // may be +inf
  virtual double quantile(double q) const;  // bisection on cdf by default
  const std::string& kind() const { return kind_; }

 protected:
  std::string kind_;
};

// kind: normal, gamma, mixture, pareto, poisson, binomial, lognormal, student_t, uniform,
// exponential, beta, laplace, weibull. params: named parameters (see make_distribution docs in
// the README); vectors for the mixture.
struct DistributionParams {
  std::string kind;
  double a = 0, b = 0;  // the two scalar parameters of the kind (see README)
  std::vector<double> weights, means, stds;
};
std::unique_ptr<Distribution> make_distribution(const DistributionParams& p);

// Special functions used by the CDFs (here and by the forecast heads' laws: one place for them).
double regularized_gamma_p(double a, double x);
double regularized_beta(double a, double b, double x);
// The standard normal's CDF, and its quantile (Acklam's rational approximation refined by one
// Halley step: relative error near 1e-15).
double normal_cdf(double z);
double normal_quantile(double p);
// Student's t with nu degrees of freedom: CDF (through the regularized incomplete beta) and
// quantile (Newton's method from the normal quantile, bisection if that fails to settle).
double student_t_cdf(double t, double nu);
double student_t_quantile(double u, double nu);

}  // namespace bg
