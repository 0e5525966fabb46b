#include "forecast_heads.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "data/distributions.h"
#include "data/series.h"

namespace bg {
namespace {

// The continuous heads' scale floor (scaled units; a window's values are O(1)): without one, a
// run of exactly repeated values (intermittent zeros) drives sigma to 0 and the density to
// infinity. The BIDE and the binned head put mass on a value instead.
constexpr double kMinSigma = 1e-3;
// The Student-t head's degrees of freedom are 2 + softplus(.): a finite variance, as Lag-Llama.
constexpr double kMinDf = 2.0;

// The binned head's CDF from its running sums (cum[k] = P(bin < k)).
double binned_cdf(const std::vector<double>& cum, double limit, double x) {
  const int64_t n = int64_t(cum.size()) - 1;
  if (x <= -limit) return 0;
  if (x >= limit) return 1;
  const double width = 2 * limit / double(n), pos = (x + limit) / width;
  const int64_t k = std::min<int64_t>(int64_t(pos), n - 1);
  return cum[size_t(k)] + (cum[size_t(k + 1)] - cum[size_t(k)]) * (pos - double(k));
}

}  // namespace

const Settings<ForecastHeadSpec>& forecast_head_settings() {
  static const Settings<ForecastHeadSpec> s = [] {
    Settings<ForecastHeadSpec> s("forecaster");
    s.choice("model.head", [](auto& h) -> auto& { return h.kind; },
             "bide (the exact distribution over the next value's 16-bit patterns), gaussian, "
             "student_t (learned degrees of freedom), binned (Chronos' uniform bins) or quantile "
             "(fixed levels, pinball loss)",
             kArchitecture);
    s.choice("model.values", [](auto& h) -> auto& { return h.values; },
             "float16 or bfloat16: the format a scaled value is rounded to, every head's law over "
             "its values (bfloat16's up to 65280, inside float16's range)",
             kArchitecture);
    const auto head_is = [](const ForecastHeadSpec& h) {
      return "model.head is " + std::string(enum_name(h.kind));
    };
    s.when([](const ForecastHeadSpec& h) { return h.kind == ForecastHeadKind::bide; }, head_is);
    s.integer("head.bide.hidden", [](auto& h) -> auto& { return h.bide_hidden; }, 1,
              kMaxSickHidden, "hidden units H of the BIDE over float16 patterns", kArchitecture);
    s.choice("head.bide.sick.dtype", [](auto& h) -> auto& { return h.precision; },
             "the CUDA SICK pass's precision of W and r (fp32 or fp16)");
    s.choice("head.bide.sick.variant", [](auto& h) -> auto& { return h.variant; },
             "auto, bruteforce or precomputed (H <= 64)");
    s.when([](const ForecastHeadSpec& h) { return h.kind == ForecastHeadKind::binned; }, head_is);
    s.integer("head.binned.bins", [](auto& h) -> auto& { return h.bins; }, 2, 1 << 20,
              "uniform bins of the binned head (Chronos: 4094)", kArchitecture);
    s.number("head.binned.limit", [](auto& h) -> auto& { return h.limit; }, 1e-3, 6e4,
             "the bins cover [-limit, limit] of the scaled value (Chronos: 15)", kArchitecture);
    s.when([](const ForecastHeadSpec& h) { return h.kind == ForecastHeadKind::quantile; }, head_is);
    s.integer("head.quantile.levels", [](auto& h) -> auto& { return h.levels; }, 2, 99,
              "quantiles at i / (levels + 1), i = 1..levels (9: 0.1, ..., 0.9)",
              kArchitecture | kOptional);
    return s;
  }();
  return s;
}

double HeadLaw::cdf(double x) const {
  switch (kind) {
    case ForecastHeadKind::gaussian:
      return normal_cdf((x - mu) / sigma);
    case ForecastHeadKind::student_t:
      return student_t_cdf((x - mu) / sigma, nu);
    case ForecastHeadKind::binned: {
      std::vector<double> cum(bin_probs.size() + 1, 0.0);
      for (size_t k = 0; k < bin_probs.size(); ++k) cum[k + 1] = cum[k] + bin_probs[k];
      return binned_cdf(cum, limit, x);
    }
    case ForecastHeadKind::quantile:
      return quantile_function_cdf(levels, q, x);
    case ForecastHeadKind::bide:
      break;
  }
  fail("forecast", "the BIDE head's law is its grid's (on_grid)");
}

DiscreteDistribution HeadLaw::on_grid() const {
  if (kind == ForecastHeadKind::binned) {
    std::vector<double> cum(bin_probs.size() + 1, 0.0);
    for (size_t k = 0; k < bin_probs.size(); ++k) cum[k + 1] = cum[k] + bin_probs[k];
    return bg::on_grid(value_code(values), [&](double x) { return binned_cdf(cum, limit, x); }, {});
  }
  if (kind != ForecastHeadKind::bide)
    return bg::on_grid(value_code(values), [this](double x) { return cdf(x); }, {});
  // l_k = r . relu(W b_k) for all 65,536 patterns: each hidden unit's W b_k by doubling (pattern
  // k | 2^j adds 2 W_j to pattern k's sum), so a row costs 2^16 H adds, not 2^16 H B.
  const int64_t hidden = int64_t(r.size()), bits = 16;
  std::vector<double> logit(65536, 0.0), s(65536);
  for (int64_t h = 0; h < hidden; ++h) {
    const double* wh = &w[size_t(h * bits)];
    s[0] = 0;
    for (int64_t j = 0; j < bits; ++j) s[0] -= wh[j];
    for (int64_t j = 0; j < bits; ++j)
      for (uint32_t k = 0; k < (1u << j); ++k) s[k | (1u << j)] = s[k] + 2 * wh[j];
    for (size_t k = 0; k < s.size(); ++k) logit[k] += r[size_t(h)] * std::max(0.0, s[k]);
  }
  const ValueGrid& g = value_code(values).grid();
  double top = -INFINITY, total = 0;
  for (const uint16_t k : g.patterns) top = std::max(top, logit[k]);
  for (const uint16_t k : g.patterns) total += std::exp(logit[k] - top);
  DiscreteDistribution d;
  d.values = g.values;
  d.probs.reserve(g.patterns.size());
  for (const uint16_t k : g.patterns) d.probs.push_back(std::exp(logit[k] - top) / total);
  return d;
}

uint16_t HeadLaw::inverse_cdf(double u) const {
  const ValueCode& code = value_code(values);
  switch (kind) {
    case ForecastHeadKind::gaussian:
      return code.pattern(mu + sigma * normal_quantile(u));
    case ForecastHeadKind::student_t:
      return code.pattern(mu + sigma * student_t_quantile(u, nu));
    case ForecastHeadKind::binned: {
      // The bin where the running sum reaches u, then u's place inside it (uniform there).
      const double width = 2 * limit / double(bin_probs.size());
      double below = 0;
      for (size_t k = 0; k < bin_probs.size(); ++k) {
        if (below + bin_probs[k] >= u && bin_probs[k] > 0)
          return code.pattern(-limit + width * (double(k) + (u - below) / bin_probs[k]));
        below += bin_probs[k];
      }
      return code.pattern(limit);
    }
    case ForecastHeadKind::quantile:
      return code.pattern(quantile_function(levels, q, u));
    case ForecastHeadKind::bide: {
      const DiscreteDistribution d = on_grid();
      return code.pattern(quantile(d, u));
    }
  }
  return 0;
}

std::vector<double> quantile_head_levels(int64_t levels) {
  std::vector<double> out;
  for (int64_t i = 1; i <= levels; ++i) out.push_back(double(i) / double(levels + 1));
  return out;
}

namespace {
// The segment of the piecewise-linear quantile function that holds level u (or value x): i with
// the line through (levels[i], q[i]) and (levels[i + 1], q[i + 1]); the end segments extend.
size_t segment_of(const std::vector<double>& at, double v) {
  size_t i = 0;
  while (i + 2 < at.size() && v > at[i + 1]) ++i;
  return i;
}
}  // namespace

double quantile_function(const std::vector<double>& levels, const std::vector<double>& q,
                         double u) {
  const size_t i = segment_of(levels, u);
  return q[i] + (u - levels[i]) * (q[i + 1] - q[i]) / (levels[i + 1] - levels[i]);
}

double quantile_function_cdf(const std::vector<double>& levels, const std::vector<double>& q,
                             double x) {
  const size_t i = segment_of(q, x);
  const double dq = q[i + 1] - q[i];
  const double u = dq > 0 ? levels[i] + (x - q[i]) * (levels[i + 1] - levels[i]) / dq
                          : (x < q[i] ? 0.0 : 1.0);
  return std::clamp(u, 0.0, 1.0);
}

std::vector<uint16_t> ForecastHead::inverse_cdf(const Tensor& h, const std::vector<double>& u) const {
  const std::vector<HeadLaw> rows = laws(h);
  std::vector<uint16_t> out;
  out.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) out.push_back(rows[i].inverse_cdf(u.at(i)));
  return out;
}

namespace {

// A value per float16 pattern (a 65,536 x 1 f32 table, uploaded once per device) gathered at the
// targets' patterns on their device: what a head reads of each target, without a trip through
// the host on every training step.
class PatternColumn {
 public:
  explicit PatternColumn(const std::function<double(uint16_t)>& f) : host_(65536) {
    for (uint32_t k = 0; k < 65536; ++k) host_[k] = float(f(uint16_t(k)));
  }
  Tensor at(const Tensor& patterns) const {
    if (!table_.defined() || table_.device() != patterns.device())
      table_ = from_vector(host_, {65536, 1}, patterns.device());
    return embedding(table_, patterns).reshape({patterns.size(0)});
  }

 private:
  std::vector<float> host_;
  mutable Tensor table_;
};

// A target's value in `format` (0 for the NaN patterns, which are never targets): what the
// continuous and quantile heads read of each target.
PatternColumn target_values(ValueFormat format) {
  return PatternColumn([format](uint16_t k) {
    const double v = value_code(format).value(k);
    return std::isfinite(v) ? v : 0.0;
  });
}

// The BIDE over the format's finite patterns.
class BideForecastHead : public ForecastHead {
 public:
  BideForecastHead(const ForecastHeadSpec& spec, int64_t n_embd, Generator& init)
      : values_(spec.values),
        log_width_([format = spec.values](uint16_t k) { return value_code(format).log_widths()[k]; }) {
    BideOptions opt;
    opt.code = BideCode{value_code(spec.values).bide_type(), 16};
    opt.precision = spec.precision;
    opt.variant = spec.variant;
    bide_ = register_module("bide", std::make_shared<BideHead>(n_embd, spec.bide_hidden, opt, init));
    const auto& ranges = value_code(spec.values).ranges();
    bide_->set_row_support({ranges[0], ranges[1], ranges[2], ranges[3]});
  }
  ForecastHeadKind kind() const override { return ForecastHeadKind::bide; }
  Tensor nll(const Tensor& h, const Tensor& patterns) const override {
    // -log density = -log p(pattern) + log(its bucket's width).
    return bide_->nll(h, patterns, "none") + log_width_.at(patterns);
  }
  Tensor outputs(const Tensor& h) const override {
    const BideHead::Distribution d = bide_->distribution(h);
    const int64_t n = h.size(0);
    return concat({d.w.reshape({n, -1}), d.r}, 1);
  }
  std::vector<HeadLaw> laws(const Tensor& h) const override {
    const BideHead::Distribution d = bide_->distribution(h);
    const int64_t n = h.size(0), hw = d.w.size(1) * d.w.size(2), hr = d.r.size(1);
    const std::vector<double> w = d.w.detach().to(Device::cpu()).to(DType::f64).to_vector<double>();
    const std::vector<double> r = d.r.detach().to(Device::cpu()).to(DType::f64).to_vector<double>();
    std::vector<HeadLaw> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      out[size_t(i)].kind = ForecastHeadKind::bide;
      out[size_t(i)].values = values_;
      out[size_t(i)].w.assign(w.begin() + i * hw, w.begin() + (i + 1) * hw);
      out[size_t(i)].r.assign(r.begin() + i * hr, r.begin() + (i + 1) * hr);
    }
    return out;
  }
  std::vector<uint16_t> inverse_cdf(const Tensor& h, const std::vector<double>& u) const override {
    // The exact inverse CDF on the device: one SICK pass a row.
    const Tensor q = from_vector(u, {int64_t(u.size())}, h.device());
    const std::vector<int64_t> k = bide_->quantile(h, q).to(Device::cpu()).to_vector<int64_t>();
    return std::vector<uint16_t>(k.begin(), k.end());
  }

 private:
  ValueFormat values_;
  PatternColumn log_width_;
  std::shared_ptr<BideHead> bide_;
};

// Gaussian and Student-t: a linear layer to (mu, raw scale[, raw df]).
class ParametricForecastHead : public ForecastHead {
 public:
  ParametricForecastHead(const ForecastHeadSpec& spec, int64_t n_embd, Generator& init)
      : kind_(spec.kind), values_(spec.values), value_(target_values(spec.values)) {
    params_ = register_module("params", make_linear(LinearSpec(), n_embd, width(), true, init, 0.02));
  }
  ForecastHeadKind kind() const override { return kind_; }
  Tensor nll(const Tensor& h, const Tensor& patterns) const override {
    const int64_t n = h.size(0);
    const std::vector<Tensor> p = split(params_->forward(h), std::vector<int64_t>(size_t(width()), 1), 1);
    const Tensor mu = p[0].reshape({n}), sigma = softplus(p[1].reshape({n})) + kMinSigma;
    const Tensor z = (value_.at(patterns) - mu) / sigma;
    if (kind_ == ForecastHeadKind::gaussian)  // log sigma + z^2 / 2 + log(2 pi) / 2
      return log(sigma) + z * z * 0.5 + 0.5 * std::log(2 * M_PI);
    const Tensor nu = softplus(p[2].reshape({n})) + kMinDf;
    // -log t_nu(z) / sigma = lgamma(nu/2) - lgamma((nu+1)/2) + log(nu pi)/2 + log sigma
    //                        + (nu+1)/2 log(1 + z^2 / nu)
    return lgamma(nu * 0.5) - lgamma((nu + 1.0) * 0.5) + log(nu * M_PI) * 0.5 + log(sigma) +
           (nu + 1.0) * 0.5 * log(z * z / nu + 1.0);
  }
  Tensor outputs(const Tensor& h) const override { return params_->forward(h); }
  std::vector<HeadLaw> laws(const Tensor& h) const override {
    const int64_t n = h.size(0), k = width();
    const std::vector<double> p =
        params_->forward(h).detach().to(Device::cpu()).to(DType::f64).to_vector<double>();
    const auto softplus_of = [](double x) { return x > 20 ? x : std::log1p(std::exp(x)); };
    std::vector<HeadLaw> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      HeadLaw& law = out[size_t(i)];
      law.kind = kind_;
      law.values = values_;
      law.mu = p[size_t(i * k)];
      law.sigma = softplus_of(p[size_t(i * k + 1)]) + kMinSigma;
      if (kind_ == ForecastHeadKind::student_t) law.nu = softplus_of(p[size_t(i * k + 2)]) + kMinDf;
    }
    return out;
  }

 private:
  int64_t width() const { return kind_ == ForecastHeadKind::gaussian ? 2 : 3; }
  ForecastHeadKind kind_;
  ValueFormat values_;
  PatternColumn value_;  // a target's value
  std::shared_ptr<LinearLayer> params_;
};

// Chronos' head: a softmax over uniform bins of the scaled value.
class BinnedForecastHead : public ForecastHead {
 public:
  BinnedForecastHead(const ForecastHeadSpec& spec, int64_t n_embd, Generator& init)
      : bins_(spec.bins), limit_(spec.limit), values_(spec.values) {
    logits_ = register_module("logits", make_linear(LinearSpec(), n_embd, bins_, true, init, 0.02));
  }
  ForecastHeadKind kind() const override { return ForecastHeadKind::binned; }
  Tensor nll(const Tensor& h, const Tensor& patterns) const override {
    const double width = 2 * limit_ / double(bins_);
    std::vector<int64_t> bin;
    for (const int64_t k : patterns.to(Device::cpu()).to_vector<int64_t>()) {
      const double pos = (value_code(values_).value(uint16_t(k)) + limit_) / width;
      bin.push_back(std::clamp<int64_t>(int64_t(std::floor(pos)), 0, bins_ - 1));
    }
    const Tensor target = from_vector(bin, {int64_t(bin.size())}, h.device());
    return cross_entropy(logits_->forward(h), target, -100, "none") + std::log(width);
  }
  Tensor outputs(const Tensor& h) const override { return logits_->forward(h); }
  std::vector<HeadLaw> laws(const Tensor& h) const override {
    const int64_t n = h.size(0);
    const std::vector<double> p =
        softmax(logits_->forward(h).detach().to(Device::cpu()).to(DType::f64), 1).to_vector<double>();
    std::vector<HeadLaw> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      out[size_t(i)].kind = ForecastHeadKind::binned;
      out[size_t(i)].values = values_;
      out[size_t(i)].limit = limit_;
      out[size_t(i)].bin_probs.assign(p.begin() + i * bins_, p.begin() + (i + 1) * bins_);
    }
    return out;
  }

 private:
  int64_t bins_;
  double limit_;
  ValueFormat values_;
  std::shared_ptr<LinearLayer> logits_;
};

// Quantiles at fixed levels (Chronos-Bolt, TimesFM, TiRex): the first output is the lowest
// quantile, the others positive gaps above the one before (softplus), so they never cross; the
// loss is the mean pinball loss over the levels.
class QuantileForecastHead : public ForecastHead {
 public:
  QuantileForecastHead(const ForecastHeadSpec& spec, int64_t n_embd, Generator& init)
      : levels_(quantile_head_levels(spec.levels)), values_(spec.values),
        value_(target_values(spec.values)) {
    params_ = register_module("params", make_linear(LinearSpec(), n_embd, spec.levels, true, init, 0.02));
  }
  ForecastHeadKind kind() const override { return ForecastHeadKind::quantile; }
  bool loss_is_nll() const override { return false; }
  Tensor nll(const Tensor& h, const Tensor& patterns) const override {
    const Tensor q = quantiles(h);
    const Tensor u = value_.at(patterns).reshape({h.size(0), 1}) - q;  // (N, levels)
    // rho_tau(u) = |u| / 2 + (tau - 1/2) u, averaged over the levels.
    std::vector<float> half_off;
    for (const double t : levels_) half_off.push_back(float(t - 0.5));
    const Tensor tau = from_vector(half_off, {1, int64_t(levels_.size())}, h.device());
    return mean(abs(u) * 0.5 + u * tau, {1});
  }
  Tensor outputs(const Tensor& h) const override { return quantiles(h); }
  std::vector<HeadLaw> laws(const Tensor& h) const override {
    const int64_t n = h.size(0), k = int64_t(levels_.size());
    const std::vector<double> q =
        quantiles(h).detach().to(Device::cpu()).to(DType::f64).to_vector<double>();
    std::vector<HeadLaw> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      HeadLaw& law = out[size_t(i)];
      law.kind = ForecastHeadKind::quantile;
      law.values = values_;
      law.levels = levels_;
      law.q.assign(q.begin() + i * k, q.begin() + (i + 1) * k);
    }
    return out;
  }

 private:
  // (N, levels): the first output, then the running sum of positive gaps.
  Tensor quantiles(const Tensor& h) const {
    const int64_t k = int64_t(levels_.size());
    const std::vector<Tensor> p = split(params_->forward(h), {1, k - 1}, 1);
    const Tensor steps = concat({p[0], softplus(p[1]) + kMinGap}, 1);
    if (!cumulative_.defined() || cumulative_.device() != h.device()) {
      std::vector<float> upper(size_t(k * k), 0.f);  // [j][i] = 1 for j <= i: a running sum
      for (int64_t j = 0; j < k; ++j)
        for (int64_t i = j; i < k; ++i) upper[size_t(j * k + i)] = 1.f;
      cumulative_ = from_vector(upper, {k, k}, h.device());
    }
    return matmul(steps, cumulative_, compute_mode());
  }
  static constexpr double kMinGap = 1e-4;  // the least gap between two levels' quantiles
  std::vector<double> levels_;
  ValueFormat values_;
  PatternColumn value_;
  std::shared_ptr<LinearLayer> params_;
  mutable Tensor cumulative_;
};

}  // namespace

std::shared_ptr<ForecastHead> make_forecast_head(const ForecastHeadSpec& spec, int64_t n_embd,
                                                 Generator& init) {
  switch (spec.kind) {
    case ForecastHeadKind::bide:
      return std::make_shared<BideForecastHead>(spec, n_embd, init);
    case ForecastHeadKind::gaussian:
    case ForecastHeadKind::student_t:
      return std::make_shared<ParametricForecastHead>(spec, n_embd, init);
    case ForecastHeadKind::binned:
      return std::make_shared<BinnedForecastHead>(spec, n_embd, init);
    case ForecastHeadKind::quantile:
      return std::make_shared<QuantileForecastHead>(spec, n_embd, init);
  }
  return nullptr;
}

}  // namespace bg
