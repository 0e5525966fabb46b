// test_forecaster.cpp: the forecaster (models/forecast/forecaster.h), its four heads
// (models/forecast/forecast_heads.h) and forecasting (models/forecast/forecast.h): each head's training NLL equals
// its host law's density at the target, in float64 (the law evaluation and the forecast's
// quantiles read the same law training fits); inverse CDFs are monotone and agree with the grid;
// a small forecaster learns; a series' forecast is the same bits alone and in a batch under the
// deterministic mode, on the CPU and on CUDA; timestamps step on.
#include <cmath>

#include "data/series.h"
#include "harness.h"
#include "models/forecast/forecast.h"
#include "models/forecast/forecast_run.h"

namespace bg::test {
namespace {

ForecasterConfig small_config(ForecastHeadKind head, SeriesInput input = SeriesInput::value) {
  ForecasterConfig c;
  c.block_size = 24;
  c.scale_window = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.input = input;
  c.head.kind = head;
  c.head.bide_hidden = 8;
  c.head.bins = 101;
  c.head.limit = 6;
  return c;
}

// Series of an AR(1) with unit Gaussian noise around a level, each with its own id.
SeriesSet ar1_set(int64_t count, int64_t length, uint64_t seed) {
  Generator gen(seed);
  SeriesSet set;
  set.source = "ar1";
  for (int64_t i = 0; i < count; ++i) {
    Series s;
    s.id = "s" + std::to_string(i);
    const std::vector<double> z = randn({length}, gen, 0, 1, DType::f64).to_vector<double>();
    double x = 0;
    for (int64_t t = 0; t < length; ++t) {
      x = 0.8 * x + z[size_t(t)];
      s.ds.push_back(std::to_string(t));
      s.y.push_back(10 + double(i) + x);
    }
    set.series.push_back(std::move(s));
  }
  return set;
}

const ForecastHeadKind kHeads[] = {ForecastHeadKind::bide, ForecastHeadKind::gaussian,
                                   ForecastHeadKind::student_t, ForecastHeadKind::binned};

// 60 AdamW steps of `model` (its parameters `params`, on `dev`) on windows of `set` (4 series
// a batch, 24 values each); the mean loss of the first five steps minus that of the last five.
double loss_drop(Forecaster& model, FlatParameters& params, const SeriesSet& set, Device dev,
                 Generator& data, Generator& drop) {
  AdamW adam(params, AdamWConfig());
  std::vector<double> losses;
  for (int step = 0; step < 60; ++step) {
    Tensor x, y;
    sample_series_windows(set, 4, 8, window_spec(model.config(), 24), data, dev, &x, &y);
    params.zero_grad();
    const Tensor loss = model.loss(x, y, drop);
    loss.backward();
    adam.step(3e-3);
    losses.push_back(loss.item());
  }
  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) {
    first += losses[size_t(i)] / 5;
    last += losses[losses.size() - 1 - size_t(i)] / 5;
  }
  return first - last;
}

}  // namespace

TEST_CASE("cpu: each forecast head's NLL is its host law's log density at the target") {
  for (const ValueFormat format : {ValueFormat::float16, ValueFormat::bfloat16})
    for (const ForecastHeadKind kind : kHeads) {
      const std::string label = std::string(enum_name(kind)) + " over " + enum_name(format);
      INFO(label);
      const ValueCode& code = value_code(format);
      Generator init(5), data(6);
      ForecasterConfig cfg = small_config(kind);
      cfg.head.values = format;
      const auto head = make_forecast_head(cfg.head, 7, init);
      const Tensor h = randn({5, 7}, data, 0, 1, DType::f32);
      std::vector<int64_t> ys;
      // bfloat16's bucket at 0 is 1e-40 wide: a CDF difference near 0.5 cannot resolve its mass
      // (the host law's grid has 0 there), so that format's targets leave zero out.
      for (const double v : {-1.5, format == ValueFormat::float16 ? 0.0 : 0.375, 0.25, 2.0, 0.7})
        ys.push_back(code.pattern(v));
      const std::vector<double> nll =
          head->nll(h, from_vector(ys, {5})).to(DType::f64).to_vector<double>();
      const std::vector<HeadLaw> laws = head->laws(h);
      for (size_t i = 0; i < ys.size(); ++i) {
        const uint16_t k = uint16_t(ys[i]);
        const double v = code.value(k);
        double want = 0;
        if (kind == ForecastHeadKind::bide || kind == ForecastHeadKind::binned) {
          // The grid law's mass of the target's bucket over the bucket's width; for the binned
          // head (uniform inside a bin) the same as the bin's mass over the bin's width.
          const DiscreteDistribution d = laws[i].on_grid();
          const ValueGrid& g = code.grid();
          size_t at = 0;
          while (g.patterns[at] != k) ++at;
          want = -std::log(d.probs[at]) + code.log_widths()[k];
        } else {
          const double eps = 1e-4;  // the density by the CDF's central difference
          want = -std::log((laws[i].cdf(v + eps) - laws[i].cdf(v - eps)) / (2 * eps));
        }
        CHECK(nll[i] == doctest::Approx(want).epsilon(2e-4));
      }
    }
}

// The quantile head (Chronos-Bolt's, TimesFM's): its loss is the pinball loss of closed form, its
// quantiles never cross, and its law is the quantile function through them, linear between
// levels and extended past the ends, whose CDF inverts it.
TEST_CASE("cpu: the quantile head: pinball loss, non-crossing levels, an interpolated law") {
  CHECK(quantile_head_levels(9) ==
        std::vector<double>{1 / 10., 2 / 10., 3 / 10., 4 / 10., 5 / 10., 6 / 10., 7 / 10., 8 / 10., 9 / 10.});
  const std::vector<double> lv = {0.25, 0.5, 0.75}, q = {-1.0, 0.0, 3.0};
  CHECK(quantile_function(lv, q, 0.5) == 0.0);
  CHECK(quantile_function(lv, q, 0.625) == 1.5);
  CHECK(quantile_function(lv, q, 0.125) == -1.5);  // past the lowest level: the first slope
  CHECK(quantile_function(lv, q, 0.875) == 4.5);   // past the highest: the last one
  CHECK(quantile_function_cdf(lv, q, 1.5) == 0.625);
  CHECK(quantile_function_cdf(lv, q, -1.5) == 0.125);
  CHECK(quantile_function_cdf(lv, q, -9.0) == 0.0);
  CHECK(quantile_function_cdf(lv, q, 99.0) == 1.0);
  for (double u = 0.01; u < 1; u += 0.01)
    CHECK(quantile_function_cdf(lv, q, quantile_function(lv, q, u)) == doctest::Approx(u));

  Generator init(5), data(6);
  ForecasterConfig cfg = small_config(ForecastHeadKind::quantile);
  const auto head = make_forecast_head(cfg.head, 7, init);
  CHECK(!head->loss_is_nll());
  const Tensor h = randn({6, 7}, data, 0, 3, DType::f32);
  const ValueCode& code = value_code(cfg.head.values);
  std::vector<int64_t> ys;
  for (const double v : {-1.5, 0.0, 0.25, 2.0, 0.7, -30.0}) ys.push_back(code.pattern(v));
  const std::vector<double> loss =
      head->nll(h, from_vector(ys, {6})).to(DType::f64).to_vector<double>();
  const std::vector<HeadLaw> laws = head->laws(h);
  const std::vector<double> levels = quantile_head_levels(cfg.head.levels);
  for (size_t i = 0; i < ys.size(); ++i) {
    const HeadLaw& law = laws[i];
    REQUIRE(law.q.size() == levels.size());
    for (size_t l = 1; l < law.q.size(); ++l) CHECK(law.q[l] > law.q[l - 1]);  // never cross
    const double y = code.value(uint16_t(ys[i]));
    double pinball = 0;
    for (size_t l = 0; l < levels.size(); ++l) {
      const double u = y - law.q[l];
      pinball += std::max(levels[l] * u, (levels[l] - 1) * u) / double(levels.size());
    }
    CHECK(loss[i] == doctest::Approx(pinball).epsilon(1e-5));
    // Draws follow the quantile function: at a level, its quantile's pattern.
    CHECK(law.inverse_cdf(levels[3]) == code.pattern(law.q[3]));
    CHECK(law.inverse_cdf(0.99) == code.pattern(quantile_function(levels, law.q, 0.99)));
  }
}

TEST_CASE("cpu: a forecaster learns an AR(1) with the quantile head; its median tracks the mean") {
  const SeriesSet set = ar1_set(4, 120, 11);
  Generator init(1), data(2), drop(3);
  Forecaster model(small_config(ForecastHeadKind::quantile), init);
  FlatParameters params(model.named_parameters(), Device::cpu());
  CHECK(loss_drop(model, params, set, Device::cpu(), data, drop) > 0.1);
  model.train(false);
  ForecastSettings s;
  s.horizon = 1;
  s.samples = 64;
  const auto f = forecast_series(model, set.series, s, Device::cpu());
  for (size_t i = 0; i < f.size(); ++i) {
    // Series i's level is 10 + i; its median one step ahead lies within a few units of it.
    CHECK(std::fabs(f[i].quantiles[4][0] - (10.0 + double(i))) < 4.0);
    for (size_t l = 1; l < f[i].quantiles.size(); ++l)
      CHECK(f[i].quantiles[l][0] >= f[i].quantiles[l - 1][0]);
  }
}

TEST_CASE("cpu: head laws: inverse CDFs are monotone and sit on their grid's quantiles") {
  for (const ValueFormat format : {ValueFormat::float16, ValueFormat::bfloat16})
    for (const ForecastHeadKind kind : kHeads) {
      const std::string label = std::string(enum_name(kind)) + " over " + enum_name(format);
      INFO(label);
      const ValueCode& code = value_code(format);
      Generator init(7), data(8);
      ForecastHeadSpec spec = small_config(kind).head;
      spec.values = format;
      const auto head = make_forecast_head(spec, 4, init);
      const Tensor h = randn({1, 4}, data, 0, 1, DType::f32);
      const HeadLaw law = head->laws(h)[0];
      const DiscreteDistribution d = law.on_grid();
      double total = 0;
      for (const double p : d.probs) total += p;
      CHECK(total == doctest::Approx(1.0).epsilon(1e-9));
      double last = -INFINITY;
      for (const double u : {1e-6, 0.01, 0.1, 0.37, 0.5, 0.9, 0.999}) {
        const double v = code.value(law.inverse_cdf(u));
        CHECK(v >= last);
        last = v;
        // The grid's u-quantile, or its neighbour where u falls within rounding of a step.
        const double q = quantile(d, u);
        const auto& values = code.grid().values;
        const auto at = std::lower_bound(values.begin(), values.end(), q) - values.begin();
        const auto got = std::lower_bound(values.begin(), values.end(), v) - values.begin();
        CHECK(std::abs(at - got) <= 1);
      }
      // The device path (the BIDE's SICK quantile) gives the host law's quantiles.
      const std::vector<uint16_t> dev = head->inverse_cdf(h, {0.25});
      const double v = code.value(dev[0]), want = code.value(law.inverse_cdf(0.25));
      const auto& values = code.grid().values;
      CHECK(std::abs(std::lower_bound(values.begin(), values.end(), v) -
                     std::lower_bound(values.begin(), values.end(), want)) <= 1);
    }
}

TEST_CASE("cpu: a small forecaster learns an AR(1) (every head, both inputs)") {
  const SeriesSet set = ar1_set(4, 120, 11);
  for (const ForecastHeadKind kind : kHeads)
    for (const SeriesInput input : {SeriesInput::value, SeriesInput::bits}) {
      CAPTURE(enum_name(kind));
      CAPTURE(enum_name(input));
      Generator init(1), data(2), drop(3);
      Forecaster model(small_config(kind, input), init);
      FlatParameters params(model.named_parameters(), Device::cpu());
      CHECK(loss_drop(model, params, set, Device::cpu(), data, drop) > 0.3);
    }
}

// Under a running scale every position has its own scale, so each draw is fed back in the scale
// of its new position: the model learns, and a forecast far past the block (sliding, with a lag
// crossing the slides) stays finite and the same bits alone and in a batch.
TEST_CASE("cpu: a forecaster with a running scale learns and forecasts past the block") {
  const SeriesSet set = ar1_set(4, 120, 23);
  Generator init(1), data(2), drop(3);
  ForecasterConfig cfg = small_config(ForecastHeadKind::student_t);
  cfg.scaling = SeriesScaling::running;
  cfg.lag = 3;
  Forecaster model(cfg, init);
  FlatParameters params(model.named_parameters(), Device::cpu());
  CHECK(loss_drop(model, params, set, Device::cpu(), data, drop) > 0.3);
  model.set_compute_mode(ComputeMode::deterministic_mode(MatmulPrecision::fp32).on(Device::cpu()));
  model.train(false);
  ForecastSettings s;
  s.samples = 4;
  s.horizon = 70;
  const auto batch = forecast_series(model, set.series, s, Device::cpu());
  const auto alone = forecast_series(model, {set.series[2]}, s, Device::cpu());
  CHECK(alone[0].paths == batch[2].paths);
  for (const auto& f : batch)
    for (const auto& path : f.paths)
      for (const double v : path) CHECK(std::isfinite(v));
  // Its one-step median sits near the series' level (10 + i).
  s.horizon = 1;
  const auto one = forecast_series(model, set.series, s, Device::cpu());
  for (size_t i = 0; i < one.size(); ++i)
    CHECK(std::fabs(one[i].quantiles[4][0] - (10.0 + double(i))) < 4.0);
}

TEST_CASE("cpu: a series' forecast is the same bits alone and in a batch (deterministic mode)") {
  const SeriesSet set = ar1_set(5, 60, 12);
  for (const ForecastHeadKind kind : {ForecastHeadKind::bide, ForecastHeadKind::student_t}) {
    CAPTURE(enum_name(kind));
    Generator init(9);
    Forecaster model(small_config(kind), init);
    model.set_compute_mode(
        ComputeMode::deterministic_mode(MatmulPrecision::fp32).on(Device::cpu()));
    model.train(false);
    for (const int64_t horizon : {1, 4}) {
      ForecastSettings s;
      s.horizon = horizon;
      s.samples = 6;
      s.seed = 3;
      const auto batch = forecast_series(model, set.series, s, Device::cpu());
      const auto alone = forecast_series(model, {set.series[3]}, s, Device::cpu());
      CHECK(alone[0].paths == batch[3].paths);
      CHECK(alone[0].quantiles == batch[3].quantiles);
      // A budget below one path: every path its own group, the same bits.
      ForecastSettings grouped = s;
      grouped.max_group_bytes = 1;
      const auto one_by_one = forecast_series(model, set.series, grouped, Device::cpu());
      REQUIRE(one_by_one.size() == batch.size());
      for (size_t i = 0; i < batch.size(); ++i) {
        CHECK(one_by_one[i].paths == batch[i].paths);
        CHECK(one_by_one[i].quantiles == batch[i].quantiles);
      }
      for (size_t l = 1; l < batch[3].quantiles.size(); ++l)
        for (int64_t t = 0; t < horizon; ++t)
          CHECK(batch[3].quantiles[l][size_t(t)] >= batch[3].quantiles[l - 1][size_t(t)]);
      // Another seed draws other paths.
      s.seed = 4;
      CHECK(forecast_series(model, {set.series[3]}, s, Device::cpu())[0].paths != alone[0].paths);
    }
  }
}

// A horizon never shortens the context: past the block the window slides, so any two horizons
// that start from the same window draw the same first steps, bit for bit, and a path far past
// the block stays the same bits alone and in a batch (deterministic mode, with and without a
// lag input, whose lagged values cross the slides).
TEST_CASE("cpu: forecasts past the block slide their window; the horizon never shortens the context") {
  const SeriesSet set = ar1_set(3, 60, 17);
  for (const int64_t lag : {int64_t(0), int64_t(5)}) {
    CAPTURE(lag);
    Generator init(19);
    ForecasterConfig cfg = small_config(ForecastHeadKind::student_t);
    cfg.lag = lag;
    Forecaster model(cfg, init);
    model.set_compute_mode(
        ComputeMode::deterministic_mode(MatmulPrecision::fp32).on(Device::cpu()));
    model.train(false);
    // block 24: the default slide is 13 values, so every horizon from 12 on starts from them.
    CHECK(forecast_window(cfg, 1, 0).first == 24);
    CHECK(forecast_window(cfg, 5, 0).first == 20);
    CHECK(forecast_window(cfg, 12, 0).first == 13);
    CHECK(forecast_window(cfg, 700, 0).first == 13);
    CHECK(forecast_window(cfg, 700, 0).slide == 13);
    CHECK(forecast_window(cfg, 700, 24).first == 24);
    CHECK_THROWS_WITH(forecast_window(cfg, 10, 8), doctest::Contains("--context 8 is outside 9..24"));
    CHECK_THROWS_WITH(forecast_window(cfg, 10, 25), doctest::Contains("--context 25 is outside"));
    ForecastSettings s;
    s.samples = 5;
    s.seed = 2;
    s.horizon = 12;
    const auto short_run = forecast_series(model, set.series, s, Device::cpu());
    s.horizon = 90;  // six slides of the 24-position block
    const auto long_run = forecast_series(model, set.series, s, Device::cpu());
    const auto alone = forecast_series(model, {set.series[1]}, s, Device::cpu());
    for (size_t i = 0; i < set.series.size(); ++i)
      for (size_t j = 0; j < 5; ++j) {
        CHECK(std::vector<double>(long_run[i].paths[j].begin(), long_run[i].paths[j].begin() + 12) ==
              short_run[i].paths[j]);
        for (const double v : long_run[i].paths[j]) CHECK(std::isfinite(v));
      }
    CHECK(alone[0].paths == long_run[1].paths);
    CHECK(alone[0].quantiles == long_run[1].quantiles);
    // The same paths whatever the grouping: every path its own group.
    ForecastSettings grouped = s;
    grouped.max_group_bytes = 1;
    CHECK(forecast_series(model, set.series, grouped, Device::cpu())[2].paths == long_run[2].paths);
  }
}

TEST_CASE("cuda: a series' forecast is the same bits alone and in a batch of 64 (deterministic)") {
  BG_REQUIRE_CUDA();
  const SeriesSet set = ar1_set(64, 80, 13);
  Generator init(10);
  ForecasterConfig cfg = small_config(ForecastHeadKind::bide);
  cfg.fused_attention = false;
  Forecaster model(cfg, init);
  FlatParameters params(model.named_parameters(), Device::cuda(0));
  model.set_compute_mode(
      ComputeMode::deterministic_mode(MatmulPrecision::fp32).on(Device::cuda(0)));
  model.train(false);
  for (const int64_t horizon : {1, 6, 40}) {  // 40: past the 24-value block, sliding
    ForecastSettings s;
    s.horizon = horizon;
    s.samples = 16;
    const auto batch = forecast_series(model, set.series, s, Device::cuda(0));
    for (const size_t i : {size_t(0), size_t(37)}) {
      const auto alone = forecast_series(model, {set.series[i]}, s, Device::cuda(0));
      CHECK(alone[0].paths == batch[i].paths);
      CHECK(alone[0].quantiles == batch[i].quantiles);
    }
  }
}

// The forecaster stands on the GPT's trunk, so it takes the bf16 residual stream too: it learns,
// and (deterministic) one value at a time through the KV cache gives the rows of the training
// forward bit for bit, so a forecast draws from the law training fitted.
TEST_CASE("cuda: a forecaster on the bf16 residual stream learns; its cached forward is training's") {
  BG_REQUIRE_CUDA();
  const Device dev = Device::cuda(0);
  const SeriesSet set = ar1_set(8, 120, 21);
  for (const ForecastHeadKind kind : {ForecastHeadKind::bide, ForecastHeadKind::student_t}) {
    CAPTURE(enum_name(kind));
    Generator init(12), data(13), drop(14);
    ForecasterConfig cfg = small_config(kind);
    cfg.fused_attention = false;
    Forecaster model(cfg, init);
    FlatParameters params(model.named_parameters(), dev);
    ComputeMode mode = ComputeMode::deterministic_mode(MatmulPrecision::bf16);
    mode.activations = ActivationDtype::bf16;
    model.set_compute_mode(mode.on(dev));
    CHECK(loss_drop(model, params, set, dev, data, drop) > 0.3);  // false for a NaN too
    model.train(false);
    Tensor x, y;
    sample_series_windows(set, 4, 1, window_spec(cfg, 24), data, dev, &x, &y);
    Generator unused;
    const Tensor trained = model.hidden(x, unused).to(DType::f32).to(Device::cpu());
    KVCache cache = model.new_cache(1, dev);
    for (int64_t pos = 0; pos < x.size(1); ++pos) {
      // ln_f's row as the head's bf16 matmuls read it: rounded to bf16 (training stores it so).
      const Tensor row = model.forward_cached_hidden(x.slice(1, pos, pos + 1), cache);
      CHECK(row.to(DType::bf16).to(DType::f32).to(Device::cpu()).to_vector<float>() ==
            trained.slice(0, pos, pos + 1).contiguous().reshape({-1}).to_vector<float>());
    }
  }
}

TEST_CASE("cpu: held-out windows target only the held-out points; stamps step on") {
  const SeriesSet set = ar1_set(2, 40, 14);
  Tensor x, y;
  ForecasterConfig cfg;
  cfg.block_size = 16;
  cfg.scale_window = 4;
  held_out_windows(set, 8, 4, cfg, Device::cpu(), &x, &y);
  const std::vector<int64_t> ys = y.to_vector<int64_t>();
  for (int64_t r = 0; r < 2; ++r) {
    int64_t targets = 0;
    for (int64_t p = 0; p < 16; ++p) {
      const int64_t k = ys[size_t(r * 16 + p)];
      if (k == kSeriesIgnore) continue;
      ++targets;
      // inputs [19, 35) (scaled by points 19..22); position p targets point 20 + p: 32..35 count
      const int64_t point = 36 - 16 + p;
      CHECK(point >= 32);
      CHECK(point < 36);
      CHECK(k == float16_pattern(set.series[size_t(r)].y[size_t(point)] /
                                 context_scale(set.series[size_t(r)].y.data() + 19, 4)));
    }
    CHECK(targets == 4);
  }
}

}  // namespace bg::test
