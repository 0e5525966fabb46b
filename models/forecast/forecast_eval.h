// forecast_eval.h: a forecaster scored on each series' test window (its last `horizon` points,
// the context everything before), as the forecasting field scores (models/forecast/forecast_metrics.h):
// CRPS (exact off the head's law for one step, the fair estimator over sample paths for more),
// the weighted quantile loss over levels 0.1..0.9, MASE of the median against the in-sample
// seasonal-naive scale, 80% interval coverage, the teacher-forced one-step NLL; and each against
// seasonal naive: per-series ratios, aggregated by their geometric mean. With a synthetic file's
// truth (data/forecast_truth.h) and a one-step horizon, the true law's CRPS and NLL on the same
// grid: the floor.
#pragma once
#include <string>
#include <vector>

#include "data/series.h"
#include "models/forecast/forecast.h"
#include "models/forecast/forecast_metrics.h"
#include "models/forecast/forecaster.h"

namespace bg {

struct ForecastEvalSettings {
  int64_t horizon = 1, season = 1, samples = 100;
  uint64_t seed = 0;
  std::string truth_path;  // optional
};

struct SeriesScore {
  std::string id;
  double crps = 0, naive_crps = 0;  // mean over the window's points, series units
  double mase = 0, naive_mase = 0;  // NaN when the in-sample seasonal-naive scale is 0
  double truth_crps = NAN;          // with a truth file
};

struct ForecastEvaluation {
  int64_t series = 0, points = 0;
  double nll = 0, truth_nll = NAN;  // mean per test point, nats (density of the scaled value)
  double crps = 0, naive_crps = 0, truth_crps = NAN;  // mean over series
  double crps_ratio = 0, mase_ratio = 0;  // geometric means of per-series ratios to naive
  int64_t ratio_series = 0;               // series whose naive error is not 0
  double mase = 0, naive_mase = 0;        // mean over series with a scale
  double wql = 0, naive_wql = 0;
  double coverage80 = 0;
  std::vector<SeriesScore> per_series;
};

ForecastEvaluation evaluate_forecaster(const Forecaster& model, const SeriesSet& set,
                                       const ForecastEvalSettings& settings, Device device);

// The same scores for forecasts made elsewhere: `forecasts` aligned with set.series (paths and
// quantiles of each test window), `laws` (optional: each series' one-step law on the format's
// grid, for the exact CRPS) and `nll` (NaN when unknown); a truth file's laws are put on the
// grid of `values`, the format the forecasts' values lie on.
ForecastEvaluation score_forecasts(const SeriesSet& set, const std::vector<SeriesForecast>& forecasts,
                                   const std::vector<DiscreteDistribution>& laws,
                                   const ForecastEvalSettings& settings,
                                   ValueFormat values = ValueFormat::float16);

// Sample paths of each series' test window from a CSV unique_id,ds,path,y (what `bitgrad forecast
// --paths` and scripts/forecast_baselines.py write), checked against `set`: every series, its
// test window's timestamps, the same number of paths (at least 2) for every point, finite values.
// The quantiles at levels 0.1..0.9 are the paths'. Refusals name file:line.
std::vector<SeriesForecast> read_forecast_paths(const std::string& path, const SeriesSet& set,
                                                int64_t horizon);

// The evaluation as JSON (one object; per-series scores under "series").
std::string forecast_evaluation_json(const ForecastEvaluation& e, const std::string& checkpoint,
                                     const std::string& data, const ForecastEvalSettings& s);

}  // namespace bg
