#include "forecast.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdlib>

#include "kernels/philox.h"

namespace bg {
namespace {

// The series' own stream: FNV-1a of its id, mixed with the seed.
uint64_t series_key(const std::string& id, uint64_t seed) {
  uint64_t h = 1469598103934665603ULL;
  for (const unsigned char c : id) h = (h ^ c) * 1099511628211ULL;
  return h ^ (seed * 0x9E3779B97F4A7C15ULL);
}

// Path j's uniform at step t: strictly inside (0, 1) (a quantile at 0 is no value).
double path_uniform(uint64_t key, int64_t samples, int64_t step, int64_t path) {
  return philox_uniform53(key, uint64_t(step * samples + path)) + 0x1p-54;
}

// A group's share of one series: its paths [begin, end), and where they are gathered.
struct PathRange {
  size_t series = 0;
  int64_t begin = 0, end = 0;
  SeriesForecast* out = nullptr;
};

// One group of path ranges, every path in one batch: prefill, then a draw per step, the window
// sliding when the block is full. Each range's paths go to out->paths; a range that starts at
// path 0 also gives a one-step forecast's exact quantiles.
void forecast_group(const Forecaster& model, const std::vector<Series>& series,
                    const std::vector<PathRange>& group, const ForecastSettings& settings,
                    Device device);

// Path means and quantiles at each step, once every path of a series is drawn.
void finish_series(SeriesForecast& f, const Series& s, const ForecastSettings& settings);

}  // namespace

ForecastWindow forecast_window(const ForecasterConfig& cfg, int64_t horizon,
                               int64_t min_context) {
  BG_CHECK(horizon >= 1, "forecast", "the horizon must be at least 1, got ", horizon);
  const int64_t lo = cfg.scale_window + 1, hi = cfg.block_size;
  const int64_t slide = min_context > 0 ? min_context : std::max(lo, cfg.block_size / 2 + 1);
  BG_CHECK(slide >= lo && slide <= hi, "forecast", "--context ", slide, " is outside ", lo,
           "..", hi, " (more than model.scale_window ", cfg.scale_window,
           ", at most model.block_size ", cfg.block_size, ")");
  return {std::min(hi, std::max(slide, cfg.block_size - horizon + 1)), slide};
}

int64_t forecast_row_bytes(const ForecasterConfig& cfg, int64_t horizon, int64_t min_context) {
  const int64_t context = forecast_window(cfg, horizon, min_context).first;
  // A path's KV cache (keys and values of every layer over the block, f32 at most), the
  // prefill's activations (about 24 widths a position, and the attention scores), and its
  // head's law (a binned head's probabilities; the other heads' are a few numbers).
  const int64_t cache = cfg.block_size * cfg.n_layer * 2 * cfg.n_embd * 4;
  const int64_t prefill = context * (24 * cfg.n_embd + 2 * cfg.n_head * context) * 4;
  const int64_t head = cfg.head.kind == ForecastHeadKind::binned ? cfg.head.bins * 16 : 1024;
  return cache + prefill + head + horizon * 24;  // and the path's draws and values
}

void forecast_series(const Forecaster& model, const std::vector<Series>& series,
                     const ForecastSettings& settings, Device device, const ForecastSink& sink) {
  const int64_t h = settings.horizon, m = settings.samples;
  BG_CHECK(m >= 1, "forecast", "--samples must be at least 1");
  (void)forecast_window(model.config(), h, settings.min_context);  // refuses a bad --context
  BG_CHECK(m <= kMaxForecastValues / h, "forecast", "--samples ", m, " x --horizon ", h,
           " are ", m * h, " values for one series; at most ", kMaxForecastValues,
           " (fewer samples or a shorter horizon)");
  const int64_t rows = std::max<int64_t>(
      1, settings.max_group_bytes / forecast_row_bytes(model.config(), h, settings.min_context));
  // Groups of at most `rows` paths, series-major: a series' paths may span groups (each path's
  // draws are its own, keyed by series, step and path index: the same bits in any group).
  std::vector<SeriesForecast> open(series.size());
  std::vector<PathRange> group;
  int64_t in_group = 0;
  const auto run = [&] {
    if (group.empty()) return;
    forecast_group(model, series, group, settings, device);
    for (const PathRange& r : group)
      if (r.end == m) {
        finish_series(*r.out, series[r.series], settings);
        sink(r.series, std::move(*r.out));
        *r.out = SeriesForecast{};
      }
    group.clear();
    in_group = 0;
  };
  for (size_t i = 0; i < series.size(); ++i) {
    BG_CHECK(!series[i].y.empty(), "forecast", "series '", series[i].id, "' has no values");
    open[i].paths.assign(size_t(m), std::vector<double>(size_t(h)));
    for (int64_t j = 0; j < m;) {
      const int64_t take = std::min(m - j, rows - in_group);
      group.push_back({i, j, j + take, &open[i]});
      j += take;
      in_group += take;
      if (in_group == rows) run();
    }
  }
  run();
}

std::vector<SeriesForecast> forecast_series(const Forecaster& model,
                                            const std::vector<Series>& series,
                                            const ForecastSettings& settings, Device device) {
  std::vector<SeriesForecast> out(series.size());
  forecast_series(model, series, settings, device,
                  [&](size_t i, SeriesForecast&& f) { out[i] = std::move(f); });
  return out;
}

namespace {

// One step: each series' quantiles exactly, off the law at its context's end (the group that
// holds its path 0 gives them).
void one_step_quantiles(const Forecaster& model, const std::vector<PathRange>& group,
                        const std::vector<int64_t>& first_row, const Tensor& hidden,
                        const ForecastSettings& settings, Device device) {
  const ValueCode& code = value_code(model.config().head.values);
  std::vector<double> levels;
  std::vector<int64_t> repeat;
  std::vector<size_t> owners;
  for (size_t g = 0; g < group.size(); ++g) {
    if (group[g].begin != 0) continue;  // another group holds this series' path 0
    owners.push_back(g);
    levels.insert(levels.end(), settings.levels.begin(), settings.levels.end());
    for (size_t q = 0; q < settings.levels.size(); ++q) repeat.push_back(first_row[g]);
  }
  if (owners.empty()) return;
  const std::vector<uint16_t> q = model.head().inverse_cdf(
      embedding(hidden, from_vector(repeat, {int64_t(repeat.size())}, device)), levels);
  for (size_t o = 0; o < owners.size(); ++o) {
    SeriesForecast& f = *group[owners[o]].out;
    for (size_t l = 0; l < settings.levels.size(); ++l)
      f.quantiles.push_back({f.scale.value(code.value(q[o * settings.levels.size() + l]))});
  }
}

// The lag a series' windows use: its own (model.seasonal_lag), else the model's.
int64_t series_lag(const Series& s, int64_t model_lag) {
  return model_lag > 0 && s.lag > 0 ? s.lag : model_lag;
}

// The last `count` values of series `s` followed by a path's first `drawn` values: what a slid
// window (and its lag inputs) reads.
Series recent_history(const Series& s, const std::vector<double>& path, int64_t drawn,
                      int64_t count) {
  Series h;
  h.lag = s.lag;
  const int64_t len = int64_t(s.y.size()), total = len + drawn;
  for (int64_t i = std::max<int64_t>(0, total - count); i < total; ++i)
    h.y.push_back(i < len ? s.y[size_t(i)] : path[size_t(i - len)]);
  return h;
}

void forecast_group(const Forecaster& model, const std::vector<Series>& series,
                    const std::vector<PathRange>& group, const ForecastSettings& settings,
                    Device device) {
  NoGradGuard no_grad;
  const ForecasterConfig& cfg = model.config();
  const int64_t h = settings.horizon, m = settings.samples;
  const ForecastWindow window = forecast_window(cfg, h, settings.min_context);
  const int64_t lag = cfg.lag;
  const bool running = cfg.scaling == SeriesScaling::running;
  const ValueCode& code = value_code(cfg.head.values);
  // Every path starts from its series' context: rows range-major, path-minor.
  std::vector<int64_t> ys, rows, first_row;
  std::vector<uint64_t> keys;
  int64_t n_rows = 0;
  for (const PathRange& r : group) {
    const Series& s = series[r.series];
    std::vector<int64_t> x;
    r.out->scale = series_window(s, int64_t(s.y.size()), int64_t(s.y.size()),
                                 window_spec(cfg, window.first), x, ys);
    for (int64_t j = r.begin; j < r.end; ++j) rows.insert(rows.end(), x.begin(), x.end());
    keys.push_back(series_key(s.id, settings.seed));
    first_row.push_back(n_rows);
    n_rows += r.end - r.begin;
  }
  // Each path's scale: its series' context's, until a slide scales its new window afresh.
  std::vector<WindowScale> scale;
  for (size_t g = 0; g < group.size(); ++g) scale.resize(scale.size() + size_t(group[g].end - group[g].begin), group[g].out->scale);
  KVCache cache = model.new_cache(n_rows, device);
  Tensor hidden = model.forward_cached_hidden(
      from_vector(rows, series_input_shape(n_rows, window.first, lag), device), cache);
  std::vector<std::vector<uint16_t>> drawn(static_cast<size_t>(h));
  int64_t segment = 0;  // the step the current window's draws began at (0, or the last slide's)
  for (int64_t t = 0; t < h; ++t) {
    std::vector<double> u;
    u.reserve(size_t(n_rows));
    for (size_t g = 0; g < group.size(); ++g)
      for (int64_t j = group[g].begin; j < group[g].end; ++j)
        u.push_back(path_uniform(keys[g], m, t, j));
    drawn[size_t(t)] = model.head().inverse_cdf(hidden, u);
    for (size_t g = 0; g < group.size(); ++g)
      for (int64_t j = group[g].begin; j < group[g].end; ++j) {
        const size_t row = size_t(first_row[g] + j - group[g].begin);
        group[g].out->paths[size_t(j)][size_t(t)] =
            scale[row].value(code.value(drawn[size_t(t)][row]));
      }
    if (h == 1) one_step_quantiles(model, group, first_row, hidden, settings, device);
    if (t + 1 == h) break;
    if (cache.length == cfg.block_size) {
      // The block is full: its window slides to the last window.slide values, series' and
      // drawn, read and scaled as training reads a window.
      std::vector<int64_t> x;
      for (size_t g = 0; g < group.size(); ++g)
        for (int64_t j = group[g].begin; j < group[g].end; ++j) {
          const size_t row = size_t(first_row[g] + j - group[g].begin);
          const Series& s = series[group[g].series];
          const Series history =
              recent_history(s, group[g].out->paths[size_t(j)], t + 1,
                             window.slide + series_lag(s, lag) + cfg.scale_window);
          scale[row] = series_window(history, int64_t(history.y.size()),
                                     int64_t(history.y.size()), window_spec(cfg, window.slide), x,
                                     ys);
        }
      cache.length = 0;
      hidden = model.forward_cached_hidden(
          from_vector(x, series_input_shape(n_rows, window.slide, lag), device), cache);
      segment = t + 1;
      continue;
    }
    // The next input: the value just drawn (point len + t), and with a lag the value lag steps
    // before the next target (point len + t + 1 - lag): the series' own, or one this path drew,
    // in the path's current scale (a draw of this window as drawn). Under a running scale the
    // new position has its own scale, from the last scale_window values up to the draw.
    std::vector<int64_t> next;
    for (size_t g = 0; g < group.size(); ++g) {
      const Series& s = series[group[g].series];
      const int64_t len = int64_t(s.y.size()), back = len + t + 1 - series_lag(s, lag);
      for (int64_t j = group[g].begin; j < group[g].end; ++j) {
        const size_t row = size_t(first_row[g] + j - group[g].begin);
        const std::vector<double>& path = group[g].out->paths[size_t(j)];
        if (running) {
          const Series recent = recent_history(s, path, t + 1, cfg.scale_window);
          scale[row] = running_scale(recent.y, int64_t(recent.y.size()) - 1, cfg.scale_window);
          next.push_back(series_input(code, scale[row], path[size_t(t)]));
        } else {
          next.push_back(drawn[size_t(t)][row]);
        }
        if (lag == 0) continue;
        const bool own_draw = !running && back >= len && back - len >= segment;
        next.push_back(back < 0  ? code.pad()
                       : own_draw ? int64_t(drawn[size_t(back - len)][row])
                                  : series_input(code, scale[row],
                                                 back < len ? s.y[size_t(back)]
                                                            : path[size_t(back - len)]));
      }
    }
    hidden = model.forward_cached_hidden(
        from_vector(next, series_input_shape(n_rows, 1, lag), device), cache);
  }
}

void finish_series(SeriesForecast& f, const Series& s, const ForecastSettings& settings) {
  const size_t m = f.paths.size(), h = size_t(settings.horizon);
  f.mean.assign(h, 0.0);
  for (size_t j = 0; j < m; ++j)
    for (size_t t = 0; t < h; ++t) {
      const double v = f.paths[j][t];
      BG_CHECK(std::isfinite(v), "forecast", "series '", s.id, "': a forecast value (", v,
               ") is not a finite double");
      f.mean[t] += v / double(m);
    }
  if (h == 1) return;  // the exact quantiles are in
  f.quantiles.assign(settings.levels.size(), std::vector<double>(h));
  std::vector<double> col(m);
  for (size_t t = 0; t < h; ++t) {
    for (size_t j = 0; j < m; ++j) col[j] = f.paths[j][t];
    std::sort(col.begin(), col.end());
    for (size_t l = 0; l < settings.levels.size(); ++l)
      f.quantiles[l][t] = sample_quantile(col, settings.levels[l]);
  }
}

}  // namespace

}  // namespace bg
