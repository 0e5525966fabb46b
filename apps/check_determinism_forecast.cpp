// check_determinism_forecast.cpp: check-determinism's model checks for a forecaster (the
// language models' are in check_determinism.cpp), on run 1's checkpoint and the run's series:
//  - batch invariance: each series' sample paths forecast alone equal its paths forecast with
//    every series of the file, and with each path in a group of its own (the forecast's groups:
//    models/forecast/forecast.h), at the first, middle and last series;
//  - sampler = trainer: the head outputs of a window fed one value at a time through the KV cache
//    (as forecast draws), and prefilled whole, equal the training forward's at every position
//    of that window inside a batch of 16.
#include <algorithm>
#include <cstring>

#include "check_determinism_checks.h"
#include "core/error.h"
#include "models/forecast/forecast.h"
#include "models/forecast/forecast_run.h"

namespace bg::cli {
namespace {

std::vector<float> host_floats(const Tensor& t) {
  return t.detach().to(DType::f32).to(Device::cpu()).contiguous().to_vector<float>();
}

bool same_bits(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() ||
        std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(double)) != 0)
      return false;
  return true;
}

DeterminismRow check_forecast_batches(const Forecaster& model, const SeriesSet& set,
                                      int64_t horizon, Device device) {
  ForecastSettings s;
  s.horizon = horizon;
  s.samples = 8;
  s.seed = 7;
  const std::vector<SeriesForecast> all = forecast_series(model, set.series, s, device);
  ForecastSettings single = s;
  single.max_group_bytes = 1;  // each path a group of its own
  const std::vector<SeriesForecast> split = forecast_series(model, set.series, single, device);
  const size_t n = set.series.size();
  std::vector<size_t> picks = {0, n / 2, n - 1};
  picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  for (const size_t i : picks) {
    const SeriesForecast alone = forecast_series(model, {set.series[i]}, s, device)[0];
    if (!same_bits(alone.paths, all[i].paths) || !same_bits(alone.quantiles, all[i].quantiles))
      return {"batch invariance", "DIFFER",
              str_cat("series '", set.series[i].id, "' forecast alone vs with all ", n,
                      " series: other paths or quantiles")};
  }
  for (size_t i = 0; i < n; ++i)
    if (!same_bits(split[i].paths, all[i].paths))
      return {"batch invariance", "DIFFER",
              str_cat("series '", set.series[i].id,
                      "': paths drawn one a group vs all in one group differ")};
  return {"batch invariance", "equal",
          str_cat("sample paths of ", picks.size(), " series alone = with all ", n,
                  " series = one path a group (", s.samples, " paths x ", horizon, " steps)")};
}

DeterminismRow check_forecast_sampler(const Forecaster& model, const SeriesSet& set,
                                      Device device) {
  const ForecasterConfig& cfg = model.config();
  const int64_t t = cfg.block_size, ch = series_channels(cfg.lag), big = 16, at = 9;
  const WindowSpec spec = window_spec(cfg, t);
  // Row `at` is the longest series' last window; the others cycle through the file.
  size_t probe = 0;
  for (size_t i = 0; i < set.series.size(); ++i)
    if (set.series[i].y.size() > set.series[probe].y.size()) probe = i;
  std::vector<int64_t> xs, window, ys;
  for (int64_t b = 0; b < big; ++b) {
    const Series& s = set.series[b == at ? probe : size_t(b) % set.series.size()];
    std::vector<int64_t> x;
    series_window(s, int64_t(s.y.size()), int64_t(s.y.size()), spec, x, ys);
    if (b == at) window = x;
    xs.insert(xs.end(), x.begin(), x.end());
  }
  Generator gen(0);
  const Tensor rows = model.hidden(from_vector(xs, series_input_shape(big, t, cfg.lag), device), gen);
  const std::vector<float> trained =
      host_floats(model.head().outputs(rows.slice(0, at * t, (at + 1) * t)));
  const int64_t d = int64_t(trained.size()) / t;
  KVCache cache = model.new_cache(1, device);
  for (int64_t pos = 0; pos < t; ++pos) {
    const std::vector<int64_t> one(window.begin() + pos * ch, window.begin() + (pos + 1) * ch);
    const std::vector<float> got = host_floats(model.head().outputs(
        model.forward_cached_hidden(from_vector(one, series_input_shape(1, 1, cfg.lag), device),
                                    cache)));
    if (std::memcmp(got.data(), trained.data() + pos * d, size_t(d) * sizeof(float)) != 0)
      return {"sampler = trainer", "DIFFER",
              str_cat("KV-cached head outputs at position ", pos,
                      " vs the training forward (row ", at, " of ", big, ")")};
  }
  KVCache prefill = model.new_cache(1, device);
  const std::vector<float> whole = host_floats(model.head().outputs(model.forward_cached_hidden(
      from_vector(window, series_input_shape(1, t, cfg.lag), device), prefill)));
  if (std::memcmp(whole.data(), trained.data() + (t - 1) * d, size_t(d) * sizeof(float)) != 0)
    return {"sampler = trainer", "DIFFER",
            str_cat("the prefilled window's last head outputs vs the training forward")};
  return {"sampler = trainer", "equal",
          str_cat("KV-cached head outputs (one value at a time, and prefilled) = training forward "
                  "in a batch of ", big, " at all ", t, " positions")};
}

}  // namespace

void forecaster_checks(const std::string& checkpoint, Device device,
                       std::vector<DeterminismRow>* rows) {
  const auto ck = load_forecaster_checkpoint(checkpoint, device);
  const SeriesSet set = read_forecaster_series(ck->data_path, ck->model->config());
  rows->push_back(check_forecast_batches(*ck->model, set, ck->horizon, device));
  rows->push_back(check_forecast_sampler(*ck->model, set, device));
}

}  // namespace bg::cli
