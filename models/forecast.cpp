#include "forecast.h"

#include <algorithm>
#include <cstdio>
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

// Days since 1970-01-01 of a civil date, and back (H. Hinnant's algorithms).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}
void civil_from_days(int64_t z, int64_t* y, int64_t* m, int64_t* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097, doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp + (mp < 10 ? 3 : -9);
  *y = yoe + era * 400 + (*m <= 2);
}

std::string date_text(int64_t y, int64_t m, int64_t d) {
  char buf[64];  // three 64-bit integers' widest text: no truncation for any date
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lld", (long long)y, (long long)m, (long long)d);
  return buf;
}

// One group of series, every path in one batch: prefill, then a draw per step.
std::vector<SeriesForecast> forecast_group(const Forecaster& model,
                                           const std::vector<Series>& series,
                                           const ForecastSettings& settings, Device device);

}  // namespace

int64_t forecast_context(const ForecasterConfig& cfg, int64_t horizon) {
  const int64_t context = cfg.block_size - horizon + 1;
  BG_CHECK(horizon >= 1 && context > cfg.scale_window, "forecast", "a horizon of ", horizon,
           " leaves a context of ", context, " values in model.block_size ", cfg.block_size,
           ", none after the scale window of ", cfg.scale_window, " (use a horizon of at most ",
           cfg.block_size - cfg.scale_window, ")");
  return context;
}

std::vector<SeriesForecast> forecast_series(const Forecaster& model,
                                            const std::vector<Series>& series,
                                            const ForecastSettings& settings, Device device) {
  BG_CHECK(settings.samples >= 1, "forecast", "--samples must be at least 1");
  (void)forecast_context(model.config(), settings.horizon);  // refuses a horizon too long
  // A path's cache: keys and values of every layer over the block, f32 at most.
  const ForecasterConfig& cfg = model.config();
  const int64_t path_bytes = cfg.block_size * cfg.n_layer * 2 * cfg.n_embd * int64_t(sizeof(float));
  const int64_t per_group =
      std::max<int64_t>(1, settings.max_cache_bytes / (path_bytes * settings.samples));
  std::vector<SeriesForecast> out;
  for (size_t first = 0; first < series.size(); first += size_t(per_group)) {
    const size_t last = std::min(series.size(), first + size_t(per_group));
    const std::vector<Series> group(series.begin() + std::ptrdiff_t(first),
                                    series.begin() + std::ptrdiff_t(last));
    for (SeriesForecast& f : forecast_group(model, group, settings, device))
      out.push_back(std::move(f));
  }
  return out;
}

namespace {

std::vector<SeriesForecast> forecast_group(const Forecaster& model,
                                           const std::vector<Series>& series,
                                           const ForecastSettings& settings, Device device) {
  NoGradGuard no_grad;
  const int64_t h = settings.horizon, m = settings.samples, n = int64_t(series.size());
  const int64_t context = forecast_context(model.config(), h);
  const int64_t lag = model.config().lag;
  const ValueCode& code = value_code(model.config().head.values);
  std::vector<SeriesForecast> out(static_cast<size_t>(n));
  // Every path starts from its series' context: rows series-major, path-minor.
  std::vector<int64_t> xs, ys, rows;
  for (int64_t i = 0; i < n; ++i) {
    const Series& s = series[size_t(i)];
    BG_CHECK(!s.y.empty(), "forecast", "series '", s.id, "' has no values");
    std::vector<int64_t> x;
    out[size_t(i)].scale = series_window(s, int64_t(s.y.size()), int64_t(s.y.size()),
                                         window_spec(model.config(), context), x, ys);
    for (int64_t j = 0; j < m; ++j) rows.insert(rows.end(), x.begin(), x.end());
  }
  std::vector<uint64_t> keys;
  for (const Series& s : series) keys.push_back(series_key(s.id, settings.seed));
  KVCache cache = model.new_cache(n * m, device);
  Tensor hidden =
      model.forward_cached_hidden(from_vector(rows, series_input_shape(n * m, context, lag), device),
                                  cache);
  std::vector<std::vector<uint16_t>> drawn(static_cast<size_t>(h));
  for (int64_t t = 0; t < h; ++t) {
    std::vector<double> u(size_t(n * m));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) u[size_t(i * m + j)] = path_uniform(keys[size_t(i)], m, t, j);
    drawn[size_t(t)] = model.head().inverse_cdf(hidden, u);
    if (h == 1) {  // one step: the quantiles exactly, off the law at the context's end
      std::vector<double> levels;
      for (int64_t i = 0; i < n; ++i)
        levels.insert(levels.end(), settings.levels.begin(), settings.levels.end());
      std::vector<int64_t> repeat;
      for (int64_t i = 0; i < n; ++i)
        for (size_t q = 0; q < settings.levels.size(); ++q) repeat.push_back(i * m);
      const std::vector<uint16_t> q = model.head().inverse_cdf(
          embedding(hidden, from_vector(repeat, {int64_t(repeat.size())}, device)), levels);
      for (int64_t i = 0; i < n; ++i) {
        SeriesForecast& f = out[size_t(i)];
        for (size_t l = 0; l < settings.levels.size(); ++l)
          f.quantiles.push_back(
              {f.scale.value(code.value(q[size_t(i) * settings.levels.size() + l]))});
      }
    }
    if (t + 1 == h) break;
    // The next input: the value just drawn (point len + t), and with a lag the value lag steps
    // before the next target (point len + t + 1 - lag): the series' own, or one this path drew.
    std::vector<int64_t> next;
    for (int64_t i = 0; i < n; ++i) {
      const Series& s = series[size_t(i)];
      const int64_t len = int64_t(s.y.size()), back = len + t + 1 - lag;
      for (int64_t j = 0; j < m; ++j) {
        next.push_back(drawn[size_t(t)][size_t(i * m + j)]);
        if (lag == 0) continue;
        next.push_back(back < 0     ? code.pad()
                       : back < len ? int64_t(code.pattern(out[size_t(i)].scale.scaled(
                                          s.y[size_t(back)])))
                                    : int64_t(drawn[size_t(back - len)][size_t(i * m + j)]));
      }
    }
    hidden = model.forward_cached_hidden(from_vector(next, series_input_shape(n * m, 1, lag), device),
                                         cache);
  }
  for (int64_t i = 0; i < n; ++i) {
    SeriesForecast& f = out[size_t(i)];
    f.paths.assign(size_t(m), std::vector<double>(size_t(h)));
    f.mean.assign(size_t(h), 0.0);
    for (int64_t j = 0; j < m; ++j)
      for (int64_t t = 0; t < h; ++t) {
        const double v = f.scale.value(code.value(drawn[size_t(t)][size_t(i * m + j)]));
        f.paths[size_t(j)][size_t(t)] = v;
        f.mean[size_t(t)] += v / double(m);
      }
    if (h == 1) continue;
    f.quantiles.assign(settings.levels.size(), std::vector<double>(size_t(h)));
    for (int64_t t = 0; t < h; ++t) {
      std::vector<double> col;
      for (int64_t j = 0; j < m; ++j) col.push_back(f.paths[size_t(j)][size_t(t)]);
      std::sort(col.begin(), col.end());
      for (size_t l = 0; l < settings.levels.size(); ++l)
        f.quantiles[l][size_t(t)] = sample_quantile(col, settings.levels[l]);
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> future_stamps(const Series& s, StampKind kind, int64_t horizon) {
  std::vector<std::string> out;
  const size_t n = s.ds.size();
  if (kind == StampKind::step) {
    const long long last = std::atoll(s.ds.back().c_str());
    const long long step = n >= 2 ? last - std::atoll(s.ds[n - 2].c_str()) : 1;
    for (int64_t t = 1; t <= horizon; ++t) out.push_back(std::to_string(last + step * t));
    return out;
  }
  // Dates (a time of day, if written, is dropped: the series' cadence is in whole days here).
  const auto parse = [](const std::string& d, int64_t* y, int64_t* m, int64_t* day) {
    *y = std::atoll(d.substr(0, 4).c_str());
    *m = std::atoll(d.substr(5, 2).c_str());
    *day = std::atoll(d.substr(8, 2).c_str());
  };
  int64_t y, m, d, py = 0, pm = 0, pd = 0;
  parse(s.ds.back(), &y, &m, &d);
  if (n >= 2) parse(s.ds[n - 2], &py, &pm, &pd);
  if (n < 2 || pd == d) {  // whole months (monthly, quarterly, yearly); one month when unknown
    const int64_t months = n >= 2 ? (y - py) * 12 + (m - pm) : 1;
    for (int64_t t = 1; t <= horizon; ++t) {
      const int64_t total = y * 12 + (m - 1) + months * t;
      out.push_back(date_text(total / 12, total % 12 + 1, d));
    }
    return out;
  }
  const int64_t today = days_from_civil(y, m, d), step = today - days_from_civil(py, pm, pd);
  for (int64_t t = 1; t <= horizon; ++t) {
    int64_t fy, fm, fd;
    civil_from_days(today + step * t, &fy, &fm, &fd);
    out.push_back(date_text(fy, fm, fd));
  }
  return out;
}

}  // namespace bg
