// test_forecast_lag.cpp: model.lag, the value a season before each target beside each input:
// the windows that carry it, a forecaster that learns to copy last season through it, forecasts
// whose steps past the lag read the values their own path drew, and batch invariance with it.
#include <cmath>

#include "core/compute_mode.h"
#include "core/optim.h"
#include "data/series.h"
#include "harness.h"
#include "models/forecast/forecast.h"
#include "models/forecast/forecast_run.h"

namespace bg::test {

// The float16 input id before a series starts.
const int64_t kPad = value_code(ValueFormat::float16).pad();
namespace {

constexpr int64_t kPeriod = 6;

// Series repeating a pattern of kPeriod values of their own (plus a little noise): last season's
// value is the next one's.
SeriesSet seasonal_set(int64_t count, int64_t length, uint64_t seed) {
  Generator gen(seed);
  SeriesSet set;
  set.source = "seasonal";
  for (int64_t i = 0; i < count; ++i) {
    Series s;
    s.id = "s" + std::to_string(i);
    const std::vector<double> pattern = randn({kPeriod}, gen, 0, 3, DType::f64).to_vector<double>();
    const std::vector<double> z = randn({length}, gen, 0, 0.05, DType::f64).to_vector<double>();
    for (int64_t t = 0; t < length; ++t) {
      s.ds.push_back(std::to_string(t));
      s.y.push_back(20 + pattern[size_t(t % kPeriod)] + z[size_t(t)]);
    }
    set.series.push_back(std::move(s));
  }
  return set;
}

ForecasterConfig lag_config(int64_t lag) {
  ForecasterConfig c;
  c.block_size = 24;
  c.scale_window = 6;
  c.scaling = SeriesScaling::standard;
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 16;
  c.lag = lag;
  c.head.kind = ForecastHeadKind::gaussian;
  return c;
}

}  // namespace

TEST_CASE("cpu: lagged windows: each input also holds the value lag steps before its target") {
  Series s{"a", {}, {}};
  for (int i = 0; i < 30; ++i) s.y.push_back(1 + i);
  std::vector<int64_t> xs, ys;
  // Inputs at points 12..19 (end 20), the lag 5: position t holds point t and point t + 1 - 5.
  const WindowScale ws = series_window(s, 20, 30, {8, 3, SeriesScaling::mean_abs, 5}, xs, ys);
  REQUIRE(xs.size() == 16);
  for (int64_t p = 0; p < 8; ++p) {
    const int64_t t = 12 + p;
    CHECK(xs[size_t(2 * p)] == float16_pattern(ws.scaled(s.y[size_t(t)])));
    CHECK(xs[size_t(2 * p + 1)] == float16_pattern(ws.scaled(s.y[size_t(t + 1 - 5)])));
  }
  // Before the series: the padding id, in both channels.
  std::vector<int64_t> xp, yp;
  series_window(s, 2, 30, {4, 1, SeriesScaling::mean_abs, 3}, xp, yp);
  CHECK(xp == std::vector<int64_t>{kPad, kPad, kPad, kPad, float16_pattern(1.0), kPad,
                                   float16_pattern(2.0), kPad});
  CHECK(series_input_shape(7, 8, 0) == Shape{7, 8});
  CHECK(series_input_shape(7, 8, 12) == Shape{7, 8, 2});
  // A model with a lag refuses windows without it, and the other way round.
  Generator init(1);
  const Forecaster lagged(lag_config(kPeriod), init), plain(lag_config(0), init);
  Generator unused;
  CHECK_THROWS_WITH(lagged.hidden(zeros({2, 8}, DType::i64), unused),
                    doctest::Contains("expected (B, T, 2)"));
  CHECK_THROWS_WITH(plain.hidden(zeros({2, 8, 2}, DType::i64), unused),
                    doctest::Contains("expected (B, T)"));
}

TEST_CASE("cpu: with model.lag a forecaster copies last season, past the lag from its own path") {
  const SeriesSet set = seasonal_set(8, 80, 3);
  const int64_t horizon = 2 * kPeriod;  // steps kPeriod.. read values the path drew
  double error[2] = {0, 0};
  for (int lagged = 0; lagged < 2; ++lagged) {
    CAPTURE(lagged);
    Generator init(1), data(2), drop(3);
    Forecaster model(lag_config(lagged ? kPeriod : 0), init);
    FlatParameters params(model.named_parameters(), Device::cpu());
    AdamW adam(params, AdamWConfig());
    for (int step = 0; step < 150; ++step) {
      Tensor x, y;
      sample_series_windows(set, horizon, 16, window_spec(model.config(), 24), data, Device::cpu(),
                            &x, &y);
      params.zero_grad();
      model.loss(x, y, drop).backward();
      adam.step(1e-2);
    }
    model.train(false);
    // Forecast each series' last `horizon` points from the context before them.
    std::vector<Series> contexts;
    for (Series s : set.series) {
      s.y.resize(s.y.size() - size_t(horizon));
      s.ds.resize(s.y.size());
      contexts.push_back(std::move(s));
    }
    ForecastSettings fs;
    fs.horizon = horizon;
    fs.samples = 8;
    const std::vector<SeriesForecast> f = forecast_series(model, contexts, fs, Device::cpu());
    for (size_t i = 0; i < f.size(); ++i)
      for (int64_t t = 0; t < horizon; ++t) {
        const double truth = set.series[i].y[set.series[i].y.size() - size_t(horizon - t)];
        error[lagged] += std::fabs(f[i].mean[size_t(t)] - truth) / double(f.size() * horizon);
      }
  }
  MESSAGE("mean absolute error without the lag ", error[0], ", with it ", error[1]);
  // The pattern's values spread by 3: copying last season through the lag input gets within a
  // fraction of that, past the lag too; without it the same steps leave the model far off.
  CHECK(error[1] < 0.5);
  CHECK(error[1] < 0.5 * error[0]);
}

TEST_CASE("cpu: a lagged forecast is the same bits alone and in a batch (deterministic mode)") {
  const SeriesSet set = seasonal_set(5, 50, 4);
  Generator init(9);
  Forecaster model(lag_config(3), init);
  model.set_compute_mode(ComputeMode::deterministic_mode(MatmulPrecision::fp32).on(Device::cpu()));
  model.train(false);
  ForecastSettings s;
  s.horizon = 7;  // past the lag: the lag channel reads drawn values
  s.samples = 5;
  s.seed = 3;
  const auto batch = forecast_series(model, set.series, s, Device::cpu());
  const auto alone = forecast_series(model, {set.series[2]}, s, Device::cpu());
  CHECK(alone[0].paths == batch[2].paths);
  CHECK(alone[0].quantiles == batch[2].quantiles);
}

}  // namespace bg::test
