// forecast.h: probabilistic forecasts from a trained forecaster. Each series' context (its last
// values, padded on the left when shorter: forecast_window) is scaled as in training
// (data/series.h); then, through the KV cache, each of `samples` paths draws its next value by
// the head's inverse CDF at a uniform, feeds it back and draws again. When the block is full the
// window slides: each path re-reads its last values (the series' and its own draws), scaled
// afresh as training scales a window, so that every draw conditions on at least the context
// however far ahead the forecast goes. Uniforms come from
// the series' own Philox stream (keyed by the seed and the series' id; 53 random bits each, as
// 65,536 patterns need more than float32's 24), so a series' forecast does not depend on the
// other series in the call; under train.deterministic it is the same bits alone or in a batch.
// Quantiles: for one step, exactly off the head's law (the inverse CDF at each level); for
// more, those of the paths at each step.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "data/series.h"
#include "models/forecast/forecaster.h"

namespace bg {

struct ForecastSettings {
  int64_t horizon = 1, samples = 100;
  std::vector<double> levels = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  uint64_t seed = 0;
  // The fewest values a draw conditions on (--context; forecast_window): 0 takes half the
  // block and one.
  int64_t min_context = 0;
  // The most bytes one group of paths may hold (KV cache, prefill activations, the head's laws:
  // forecast_row_bytes a path): series' paths are forecast in groups under it, a series' paths
  // split across groups when they do not fit (at least one path a group). Memory, not numbers:
  // each path's draws are keyed by its series, step and index, so under train.deterministic a
  // series' forecast is the same bits in any grouping.
  int64_t max_group_bytes = int64_t(4) << 30;
};

struct SeriesForecast {
  WindowScale scale;  // the context's: a forecast's value is scale.value(its scaled value)
  // paths[j][t]: path j's value at step t; quantiles[i][t]: levels[i]'s; mean[t] over paths.
  std::vector<std::vector<double>> paths, quantiles;
  std::vector<double> mean;
};

// How a forecast of `horizon` steps walks the block (model.block_size positions): it reads the
// last `first` values (max(slide, block_size - horizon + 1), at most the block: a horizon the
// block holds keeps the longest context it leaves), feeds its draws through the KV cache until
// the block is full, then slides to the last `slide` values and goes on. `slide` is
// `min_context`, or half the block and one when 0; refused in one line unless it is more than
// model.scale_window and at most the block.
struct ForecastWindow {
  int64_t first = 0, slide = 0;
};
ForecastWindow forecast_window(const ForecasterConfig& cfg, int64_t horizon, int64_t min_context);

// The most values (samples x horizon) one series' forecast may hold: its paths are kept until
// its quantiles are taken (1 GiB of doubles).
inline constexpr int64_t kMaxForecastValues = int64_t(1) << 27;

// The bytes one path costs a group (see ForecastSettings::max_group_bytes).
int64_t forecast_row_bytes(const ForecasterConfig& cfg, int64_t horizon, int64_t min_context = 0);

// Forecasts of the points after each series' values (every value of `series` is context),
// handed to `sink` with the series' index as each is complete (in order), so that memory is
// bounded by one group and the series in it, not by the file. A value that is not a finite
// double is refused naming its series.
using ForecastSink = std::function<void(size_t, SeriesForecast&&)>;
void forecast_series(const Forecaster& model, const std::vector<Series>& series,
                     const ForecastSettings& settings, Device device, const ForecastSink& sink);
// The same, every series' forecast returned at once.
std::vector<SeriesForecast> forecast_series(const Forecaster& model,
                                            const std::vector<Series>& series,
                                            const ForecastSettings& settings, Device device);

}  // namespace bg
