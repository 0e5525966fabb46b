// forecast_heads.h: what a forecaster says about a series' next scaled value, given the trunk's
// features h (N, n_embd) of N positions. Four heads, the ones the forecasting field uses, each a
// law over the same float16 values (data/series.h's grid) so that they compare exactly:
//   bide       the exact distribution over the value's finite float16 patterns (the SICK BIDE
//              paper's head, normalised over both sign halves by SICK; -0 and NaN/Inf excluded);
//   gaussian   N(mu, sigma) (DeepAR's Gaussian likelihood);
//   student_t  mu + sigma t_nu with learned nu > 2 (DeepAR, Lag-Llama);
//   binned     a softmax over `bins` uniform bins on [-limit, limit], uniform inside a bin
//              (Chronos: 4,094 bins on [-15, 15]; values beyond the ends fall in the end bins);
//   quantile   `levels` quantiles at i / (levels + 1) (9: 0.1, ..., 0.9; Chronos-Bolt, TimesFM,
//              TiRex), non-crossing by construction (the first plus positive gaps), trained by
//              the pinball loss; its law is the quantile function through them, linear between
//              levels and extended linearly past the end ones (what draws paths).
// Every other head trains by its exact NLL of the target's float16 value as a density: a BIDE
// pattern's probability divided by the width of the values that round to it (its bucket), a
// bin's by the bin's width, the continuous heads' density at the value. So the losses of those
// four are in the same units (nats per target, as a density of the scaled value); the quantile
// head's is its mean pinball loss over the levels, in scaled units.
#pragma once
#include <memory>
#include <vector>

#include "core/bide.h"
#include "core/settings.h"
#include "layers/layers.h"
#include "models/forecast/forecast_metrics.h"

namespace bg {

#define BG_FORECAST_HEAD_KINDS(X)                                                      \
  X(bide, "bide") X(gaussian, "gaussian") X(student_t, "student_t") X(binned, "binned") \
      X(quantile, "quantile")
BG_NAMED_ENUM(ForecastHeadKind, BG_FORECAST_HEAD_KINDS)

struct ForecastHeadSpec {
  ForecastHeadKind kind = ForecastHeadKind::bide;
  int64_t bide_hidden = 32;  // head.bide.hidden: the SICK paper's H
  SickPrecision precision = SickPrecision::fp32;
  SickVariant variant = SickVariant::automatic;
  int64_t bins = 4094;  // head.binned.bins (Chronos' 4,094)
  double limit = 15;    // head.binned.limit: the bins cover [-limit, limit] (Chronos' 15)
  int64_t levels = 9;   // head.quantile.levels: quantiles at i / (levels + 1)
  ValueFormat values = ValueFormat::float16;  // model.values: the format every head's law is over
};
// Its declared fields: model.head, head.bide.*, head.binned.* (core/settings.h).
const Settings<ForecastHeadSpec>& forecast_head_settings();

// One position's law of the next scaled value, on the host, in double: what evaluation and the
// forecast's quantiles read. The BIDE's W (H, B) and r (H); the continuous heads' parameters.
struct HeadLaw {
  ForecastHeadKind kind = ForecastHeadKind::bide;
  std::vector<double> w, r;  // bide: W row-major (H, 16), r (H)
  double mu = 0, sigma = 1, nu = 0;  // gaussian, student_t
  std::vector<double> bin_probs;     // binned
  double limit = 15;                 // binned
  std::vector<double> q, levels;     // quantile: ascending values at ascending levels
  ValueFormat values = ValueFormat::float16;  // the grid the law is over
  // P(X <= x) of the continuous heads (not bide: its law is the grid's).
  double cdf(double x) const;
  // The law over the float16 grid's values (scaled units, ascending): the BIDE's probabilities
  // of the finite patterns exactly; the others' masses of the buckets.
  DiscreteDistribution on_grid() const;
  // The smallest grid value whose CDF reaches u, u in (0, 1): a draw from the law when u is
  // uniform, and its exact u-quantile. As a float16 pattern.
  uint16_t inverse_cdf(double u) const;
};

class ForecastHead : public Module {
 public:
  virtual ForecastHeadKind kind() const = 0;
  // The NLL (nats, as a density of the scaled value) of targets given by their float16
  // patterns (N) i64, per row (N), differentiable in h.
  virtual Tensor nll(const Tensor& h, const Tensor& patterns) const = 0;
  // The raw outputs that fix each row's law (W and r; the continuous heads' parameters).
  virtual Tensor outputs(const Tensor& h) const = 0;
  // Each row's law on the host.
  virtual std::vector<HeadLaw> laws(const Tensor& h) const = 0;
  // Row i's u[i]-quantile as a float16 pattern (a draw when u[i] is uniform): the BIDE on the
  // device (one SICK pass per row, batch-invariant under train.deterministic), the others on
  // the host from their parameters.
  virtual std::vector<uint16_t> inverse_cdf(const Tensor& h, const std::vector<double>& u) const;
  // Whether nll is a log density (every head but the quantile head, whose loss is pinball).
  virtual bool loss_is_nll() const { return true; }
};

// The quantile head's levels, i / (levels + 1) for i = 1..levels.
std::vector<double> quantile_head_levels(int64_t levels);
// Its quantile function through (levels[i], q[i]): linear between levels, extended linearly past
// the end ones with the end segments' slopes; and its inverse (the CDF, clamped to [0, 1]).
double quantile_function(const std::vector<double>& levels, const std::vector<double>& q,
                         double u);
double quantile_function_cdf(const std::vector<double>& levels, const std::vector<double>& q,
                             double x);

// The head of `spec` on n_embd features. Under a deterministic compute mode (set_compute_mode)
// the BIDE's SICK passes are batch-invariant.
std::shared_ptr<ForecastHead> make_forecast_head(const ForecastHeadSpec& spec, int64_t n_embd,
                                                 Generator& init);

// log of the width of each float16 pattern's bucket (65,536 entries; 0 outside the grid): a
// pattern's probability minus this is its log density.

}  // namespace bg
