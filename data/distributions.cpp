#include "distributions.h"

#include <cmath>
#include <functional>
#include <limits>

#include "core/error.h"
#include "kernels/philox.h"

namespace bg {

double HostRng::uniform() {
  const Philox4 r = philox4x32(counter_++, seed_ ^ 0x5A17ULL);
  const uint64_t bits = (uint64_t(r.v[0]) << 21) ^ (uint64_t(r.v[1]) >> 11);
  return (double(bits & ((1ULL << 53) - 1)) + 0.5) / 9007199254740992.0;
}

double HostRng::normal() {
  const double u1 = uniform(), u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double HostRng::gamma(double shape) {
  if (shape < 1.0) return gamma(shape + 1.0) * std::pow(uniform(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = uniform();
    if (u < 1 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v;
  }
}

double Distribution::quantile(double q) const {
  double lo = -1.0, hi = 1.0;
  while (cdf(lo) > q) lo *= 2;
  while (cdf(hi) < q) hi *= 2;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (cdf(mid) < q ? lo : hi) = mid;
  }
  return hi;
}

// Series / continued fraction (Numerical Recipes 6.2).
double regularized_gamma_p(double a, double x) {
  if (x <= 0) return 0.0;
  const double gln = std::lgamma(a);
  if (x < a + 1) {
    double ap = a, sum = 1.0 / a, del = sum;
    for (int n = 0; n < 1000; ++n) {
      ap += 1;
      del *= x / ap;
      sum += del;
      if (std::fabs(del) < std::fabs(sum) * 1e-16) break;
    }
    return sum * std::exp(-x + a * std::log(x) - gln);
  }
  double b = x + 1 - a, c = 1.0 / 1e-300, d = 1.0 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-16) break;
  }
  return 1.0 - std::exp(-x + a * std::log(x) - gln) * h;
}

namespace {
double beta_cf(double a, double b, double x) {  // Numerical Recipes 6.4
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < 1e-300) d = 1e-300;
  d = 1 / d;
  double h = d;
  for (int m = 1; m < 1000; ++m) {
    const int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = 1 + aa / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = 1 + aa / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-16) break;
  }
  return h;
}
}  // namespace

double regularized_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double bt = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                             a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return bt * beta_cf(a, b, x) / a;
  return 1 - bt * beta_cf(b, a, 1 - x) / b;
}

namespace {

// u's quantile of a continuous CDF: bracket by doubling, then bisection to the last bit.
double continuous_quantile(const std::function<double(double)>& cdf, double u, double guess,
                           double spread) {
  double lo = guess - spread, hi = guess + spread;
  for (int i = 0; i < 2000 && cdf(lo) > u; ++i) lo = guess - (guess - lo) * 2;
  for (int i = 0; i < 2000 && cdf(hi) < u; ++i) hi = guess + (hi - guess) * 2;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;
    (cdf(mid) < u ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// Acklam's rational approximation of the standard normal quantile, refined by one Halley step
// (relative error near 1e-15).
double normal_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  double x;
  if (p < 0.02425) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p > 1 - 0.02425) {
    const double q = std::sqrt(-2 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double e = normal_cdf(x) - p, u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

double student_t_cdf(double t, double nu) {
  const double ib = regularized_beta(nu / 2, 0.5, nu / (nu + t * t));
  return t >= 0 ? 1 - 0.5 * ib : 0.5 * ib;
}

// The Student-t quantile by Newton's method from the normal quantile: |t_u| >= |z_u|, and the CDF
// is concave beyond the median (convex below), so the iterates approach the root from the
// median's side without overshooting; bisection only if that fails to settle.
double student_t_quantile(double u, double nu) {
  const double log_norm =
      std::lgamma((nu + 1) / 2) - std::lgamma(nu / 2) - 0.5 * std::log(nu * M_PI);
  double t = normal_quantile(u);
  for (int i = 0; i < 100; ++i) {
    const double pdf = std::exp(log_norm - (nu + 1) / 2 * std::log1p(t * t / nu));
    const double next = t - (student_t_cdf(t, nu) - u) / pdf;
    if (!std::isfinite(next)) break;
    if (std::fabs(next - t) <= 1e-14 * (1 + std::fabs(t))) return next;
    t = next;
  }
  return continuous_quantile([nu](double x) { return student_t_cdf(x, nu); }, u, normal_quantile(u),
                             1.0);
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
double phi(double z) { return normal_cdf(z); }
double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); }

struct Normal : Distribution {
  double mu, sigma;
  Normal(double m, double s) : mu(m), sigma(s) { kind_ = "normal"; }
  double sample(HostRng& r) const override { return mu + sigma * r.normal(); }
  double cdf(double x) const override { return phi((x - mu) / sigma); }
  double density(double x) const override { return normal_pdf((x - mu) / sigma) / sigma; }
  double mean() const override { return mu; }
  double stddev() const override { return sigma; }
};

struct Gamma : Distribution {  // shape alpha, rate beta
  double alpha, beta;
  Gamma(double a, double b) : alpha(a), beta(b) { kind_ = "gamma"; }
  double sample(HostRng& r) const override { return r.gamma(alpha) / beta; }
  double cdf(double x) const override { return regularized_gamma_p(alpha, beta * x); }
  double density(double x) const override {
    return x <= 0 ? 0.0
                  : std::exp(alpha * std::log(beta) + (alpha - 1) * std::log(x) - beta * x -
                             std::lgamma(alpha));
  }
  double mean() const override { return alpha / beta; }
  double stddev() const override { return std::sqrt(alpha) / beta; }
};

struct Mixture : Distribution {
  std::vector<double> w, mu, sd;
  Mixture(std::vector<double> ww, std::vector<double> mm, std::vector<double> ss)
      : w(ww), mu(mm), sd(ss) {
    kind_ = "mixture";
    double total = 0;
    for (double x : w) total += x;
    for (double& x : w) x /= total;
  }
  double sample(HostRng& r) const override {
    double u = r.uniform(), acc = 0;
    size_t k = 0;
    for (; k + 1 < w.size(); ++k)
      if ((acc += w[k]) > u) break;
    return mu[k] + sd[k] * r.normal();
  }
  double cdf(double x) const override {
    double c = 0;
    for (size_t k = 0; k < w.size(); ++k) c += w[k] * phi((x - mu[k]) / sd[k]);
    return c;
  }
  double density(double x) const override {
    double d = 0;
    for (size_t k = 0; k < w.size(); ++k) d += w[k] * normal_pdf((x - mu[k]) / sd[k]) / sd[k];
    return d;
  }
  double mean() const override {
    double m = 0;
    for (size_t k = 0; k < w.size(); ++k) m += w[k] * mu[k];
    return m;
  }
  double stddev() const override {
    double m2 = 0, m = mean();
    for (size_t k = 0; k < w.size(); ++k) m2 += w[k] * (sd[k] * sd[k] + mu[k] * mu[k]);
    return std::sqrt(m2 - m * m);
  }
};

struct Pareto : Distribution {
  double xm, alpha;
  Pareto(double x, double a) : xm(x), alpha(a) { kind_ = "pareto"; }
  double sample(HostRng& r) const override { return xm / std::pow(r.uniform(), 1.0 / alpha); }
  double cdf(double x) const override { return x < xm ? 0.0 : 1.0 - std::pow(xm / x, alpha); }
  double density(double x) const override {
    return x < xm ? 0.0 : alpha * std::pow(xm, alpha) / std::pow(x, alpha + 1);
  }
  double mean() const override { return alpha <= 1 ? kInf : alpha * xm / (alpha - 1); }
  double stddev() const override {
    return alpha <= 2 ? kInf : xm / (alpha - 1) * std::sqrt(alpha / (alpha - 2));
  }
};

struct Poisson : Distribution {
  double lambda;
  explicit Poisson(double l) : lambda(l) { kind_ = "poisson"; }
  bool discrete() const override { return true; }
  double sample(HostRng& r) const override {  // inversion from the mode outward is exact
    const double u = r.uniform();
    double k = 0, p = std::exp(-lambda), c = p;
    if (lambda > 500) {  // start near the mean to keep the walk short
      k = std::floor(lambda);
      c = cdf(k);
      p = density(k);
      if (u <= c) {
        while (k > 0 && u <= c - p) {
          c -= p;
          p *= k / lambda;
          k -= 1;
        }
        return k;
      }
    }
    while (u > c) {
      k += 1;
      p *= lambda / k;
      c += p;
    }
    return k;
  }
  double cdf(double x) const override {
    return x < 0 ? 0.0 : 1.0 - regularized_gamma_p(std::floor(x) + 1, lambda);
  }
  double density(double x) const override {
    if (x < 0 || x != std::floor(x)) return 0;
    return std::exp(x * std::log(lambda) - lambda - std::lgamma(x + 1));
  }
  double mean() const override { return lambda; }
  double stddev() const override { return std::sqrt(lambda); }
};

struct Binomial : Distribution {
  double n, p;
  Binomial(double nn, double pp) : n(nn), p(pp) { kind_ = "binomial"; }
  bool discrete() const override { return true; }
  double sample(HostRng& r) const override {
    const double u = r.uniform();
    double k = 0, c = density(0);
    while (u > c && k < n) c += density(++k);
    return k;
  }
  double cdf(double x) const override {
    if (x < 0) return 0;
    if (x >= n) return 1;
    const double k = std::floor(x);
    return 1.0 - regularized_beta(k + 1, n - k, p);
  }
  double density(double x) const override {
    if (x < 0 || x > n || x != std::floor(x)) return 0;
    if (p == 0) return x == 0;
    if (p == 1) return x == n;
    return std::exp(std::lgamma(n + 1) - std::lgamma(x + 1) - std::lgamma(n - x + 1) +
                    x * std::log(p) + (n - x) * std::log1p(-p));
  }
  double mean() const override { return n * p; }
  double stddev() const override { return std::sqrt(n * p * (1 - p)); }
};

struct LogNormal : Distribution {
  double mu, sigma;
  LogNormal(double m, double s) : mu(m), sigma(s) { kind_ = "lognormal"; }
  double sample(HostRng& r) const override { return std::exp(mu + sigma * r.normal()); }
  double cdf(double x) const override { return x <= 0 ? 0.0 : phi((std::log(x) - mu) / sigma); }
  double density(double x) const override {
    return x <= 0 ? 0.0 : normal_pdf((std::log(x) - mu) / sigma) / (sigma * x);
  }
  double mean() const override { return std::exp(mu + sigma * sigma / 2); }
  double stddev() const override {
    return std::sqrt((std::exp(sigma * sigma) - 1) * std::exp(2 * mu + sigma * sigma));
  }
};

struct StudentT : Distribution {
  double nu, scale;
  StudentT(double n, double s) : nu(n), scale(s) { kind_ = "student_t"; }
  double sample(HostRng& r) const override {
    return scale * r.normal() / std::sqrt(2.0 * r.gamma(nu / 2) / nu);
  }
  double cdf(double x) const override {
    return student_t_cdf(x / scale, nu);
  }
  double density(double x) const override {
    const double t = x / scale;
    return std::exp(std::lgamma((nu + 1) / 2) - std::lgamma(nu / 2) - 0.5 * std::log(nu * M_PI) -
                    (nu + 1) / 2 * std::log1p(t * t / nu)) /
           scale;
  }
  double mean() const override { return nu > 1 ? 0.0 : std::numeric_limits<double>::quiet_NaN(); }
  double stddev() const override { return nu > 2 ? scale * std::sqrt(nu / (nu - 2)) : kInf; }
};

struct Uniform : Distribution {
  double lo, hi;
  Uniform(double a, double b) : lo(a), hi(b) { kind_ = "uniform"; }
  double sample(HostRng& r) const override { return lo + (hi - lo) * r.uniform(); }
  double cdf(double x) const override { return x <= lo ? 0 : (x >= hi ? 1 : (x - lo) / (hi - lo)); }
  double density(double x) const override { return x < lo || x > hi ? 0 : 1 / (hi - lo); }
  double mean() const override { return 0.5 * (lo + hi); }
  double stddev() const override { return (hi - lo) / std::sqrt(12.0); }
};

struct Exponential : Distribution {
  double rate;
  explicit Exponential(double r) : rate(r) { kind_ = "exponential"; }
  double sample(HostRng& r) const override { return -std::log(r.uniform()) / rate; }
  double cdf(double x) const override { return x <= 0 ? 0 : -std::expm1(-rate * x); }
  double density(double x) const override { return x < 0 ? 0 : rate * std::exp(-rate * x); }
  double mean() const override { return 1 / rate; }
  double stddev() const override { return 1 / rate; }
};

struct Beta : Distribution {
  double a, b;
  Beta(double x, double y) : a(x), b(y) { kind_ = "beta"; }
  double sample(HostRng& r) const override {
    const double x = r.gamma(a), y = r.gamma(b);
    return x / (x + y);
  }
  double cdf(double x) const override { return regularized_beta(a, b, x); }
  double density(double x) const override {
    if (x <= 0 || x >= 1) return 0;
    return std::exp((a - 1) * std::log(x) + (b - 1) * std::log1p(-x) + std::lgamma(a + b) -
                    std::lgamma(a) - std::lgamma(b));
  }
  double mean() const override { return a / (a + b); }
  double stddev() const override { return std::sqrt(a * b / ((a + b) * (a + b) * (a + b + 1))); }
};

struct Laplace : Distribution {
  double mu, bscale;
  Laplace(double m, double s) : mu(m), bscale(s) { kind_ = "laplace"; }
  double sample(HostRng& r) const override {
    const double u = r.uniform() - 0.5;
    return mu - bscale * (u < 0 ? -1.0 : 1.0) * std::log(1 - 2 * std::fabs(u));
  }
  double cdf(double x) const override {
    return x < mu ? 0.5 * std::exp((x - mu) / bscale) : 1 - 0.5 * std::exp(-(x - mu) / bscale);
  }
  double density(double x) const override {
    return std::exp(-std::fabs(x - mu) / bscale) / (2 * bscale);
  }
  double mean() const override { return mu; }
  double stddev() const override { return std::sqrt(2.0) * bscale; }
};

struct Weibull : Distribution {
  double k, lambda;
  Weibull(double kk, double l) : k(kk), lambda(l) { kind_ = "weibull"; }
  double sample(HostRng& r) const override {
    return lambda * std::pow(-std::log(r.uniform()), 1 / k);
  }
  double cdf(double x) const override { return x <= 0 ? 0 : -std::expm1(-std::pow(x / lambda, k)); }
  double density(double x) const override {
    return x < 0 ? 0
                 : k / lambda * std::pow(x / lambda, k - 1) * std::exp(-std::pow(x / lambda, k));
  }
  double mean() const override { return lambda * std::tgamma(1 + 1 / k); }
  double stddev() const override {
    const double g1 = std::tgamma(1 + 1 / k), g2 = std::tgamma(1 + 2 / k);
    return lambda * std::sqrt(g2 - g1 * g1);
  }
};

}  // namespace

std::unique_ptr<Distribution> make_distribution(const DistributionParams& p) {
  const std::string& k = p.kind;
  if (k == "normal") return std::make_unique<Normal>(p.a, p.b);
  if (k == "gamma") return std::make_unique<Gamma>(p.a, p.b);
  if (k == "mixture") return std::make_unique<Mixture>(p.weights, p.means, p.stds);
  if (k == "pareto") return std::make_unique<Pareto>(p.a, p.b);
  if (k == "poisson") return std::make_unique<Poisson>(p.a);
  if (k == "binomial") return std::make_unique<Binomial>(p.a, p.b);
  if (k == "lognormal") return std::make_unique<LogNormal>(p.a, p.b);
  if (k == "student_t") return std::make_unique<StudentT>(p.a, p.b);
  if (k == "uniform") return std::make_unique<Uniform>(p.a, p.b);
  if (k == "exponential") return std::make_unique<Exponential>(p.a);
  if (k == "beta") return std::make_unique<Beta>(p.a, p.b);
  if (k == "laplace") return std::make_unique<Laplace>(p.a, p.b);
  if (k == "weibull") return std::make_unique<Weibull>(p.a, p.b);
  fail("distribution", "unknown kind '", k, "'");
}

}  // namespace bg
