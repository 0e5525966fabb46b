// bench_forecast.cpp: `bitgrad bench forecast`: the forecaster of configs/forecast_synthetic.yaml
// (block 128, scale window 32, 4 layers, 4 heads, 128 wide) on the GPU, in the default fp32 mode
// and under train.deterministic:
//   - a training step per head (64 windows: forward, backward, AdamW), median ms, and its peak
//     memory above the model and optimizer state;
//   - the BIDE head's forecast of 64 series x 100 paths x 64 steps (prefill, then 64 draws
//     through the KV cache, each an exact inverse CDF on the GPU), median ms, and one step's
//     draw alone (the inverse CDF of 6,400 rows);
//   - the BIDE forecast's floor: its 64 steps' SICK passes alone (one exact normaliser over the
//     63,487 finite float16 patterns for each of the 6,400 paths, H = 32), median ms x 64;
//   - what the draw is made of: a pass over a 32-pattern range per path (a pass's fixed cost),
//     and the quantile op alone on 6,400 laws.
// Series: AR(1) made here (the timing does not depend on the values). JSON with the GPU named.
#include <cstdio>

#include "bench_common.h"
#include "core/allocator.h"
#include "core/optim.h"
#include "kernels/cuda/device_runtime.h"
#include "models/forecast/forecast.h"

namespace bg::cli {
namespace {

ForecasterConfig bench_config(ForecastHeadKind head) {
  ForecasterConfig c;
  c.block_size = 128;
  c.scale_window = 32;
  c.n_layer = 4;
  c.n_head = 4;
  c.n_embd = 128;
  c.head.kind = head;
  c.fused_attention = false;  // fp32: the composed attention (the fused kernel is bf16)
  return c;
}

SeriesSet bench_series(int64_t count, int64_t length) {
  Generator gen(7);
  SeriesSet set;
  for (int64_t i = 0; i < count; ++i) {
    Series s;
    s.id = "s" + std::to_string(i);
    const std::vector<double> z = randn({length}, gen, 0, 1, DType::f64).to_vector<double>();
    double x = 0;
    for (int64_t t = 0; t < length; ++t) {
      x = 0.8 * x + z[size_t(t)];
      s.ds.push_back(std::to_string(t));
      s.y.push_back(5 + x);
    }
    set.series.push_back(std::move(s));
  }
  return set;
}

}  // namespace

int run_bench_forecast(const Args& args) {
  args.allow_only({"out", "reps"});
  BG_CHECK(args.positional.size() == 1, "bench",
           "usage: bitgrad bench forecast [--out FILE] [--reps N]");
  BG_CHECK(cuda_available(), "bench", "no CUDA device: the forecast benchmark times GPU work");
  const int reps = int(parse_integer(args.option("reps", "3"), "--reps", 1, 100000));
  const Device dev = Device::cuda(0);
  const cuda::DeviceInfo info = cuda::device_info(0);
  const SeriesSet set = bench_series(64, 400);
  BenchReport report("forecast", info.name);
  report.settings()
      .add("reps", reps)
      .add("model", "block 128, 4 x 128, scale window 32")
      .add("forecast", "64 series x 100 paths x 64 steps");
  std::printf("%-14s %-10s %14s %14s\n", "mode", "head", "train_step_ms", "forecast_ms");
  for (const bool deterministic : {false, true}) {
    const ComputeMode mode =
        (deterministic ? ComputeMode::deterministic_mode(MatmulPrecision::fp32) : ComputeMode())
            .on(dev);
    for (const ForecastHeadKind kind :
         {ForecastHeadKind::bide, ForecastHeadKind::gaussian, ForecastHeadKind::student_t,
          ForecastHeadKind::binned, ForecastHeadKind::quantile}) {
      Generator init(1), data(2), drop(3);
      Forecaster model(bench_config(kind), init);
      model.set_compute_mode(mode);
      FlatParameters params(model.named_parameters(), dev);
      AdamW adam(params, AdamWConfig());
      std::vector<double> train_ms;
      // Memory: the peak bytes allocated above what is held before the step (the model, its
      // gradients and AdamW's state after the first step), in MiB.
      double train_peak_mib = 0;
      for (int r = 0; r < reps + 2; ++r) {
        if (r == 1) cuda_reset_peak(0);
        const size_t held = cuda_allocator_stats(0).allocated;
        Tensor x, y;
        sample_series_windows(set, 8, 64, window_spec(model.config(), 128), data, dev, &x, &y);
        const double ms = bench_time_ms(dev, [&] {
          params.zero_grad();
          model.loss(x, y, drop).backward();
          adam.step(1e-3);
        });
        if (r >= 2) train_ms.push_back(ms);  // two warm-up steps
        if (r == 1)
          train_peak_mib = double(cuda_allocator_stats(0).peak_allocated - held) / (1 << 20);
      }
      model.train(false);
      // The other heads draw on the host from their parameters (their laws copied off the GPU
      // every step: 6,400 x 4,094 probabilities for the binned head): only the BIDE's forecast,
      // which runs on the GPU, is timed here.
      if (kind != ForecastHeadKind::bide) {
        const double t = median(train_ms);
        const char* mode_name = deterministic ? "deterministic" : "fp32";
        std::printf("%-14s %-10s %14.3f %14s\n", mode_name, enum_name(kind), t, "-");
        report.row(JsonObject()
                       .add("mode", mode_name)
                       .add("head", enum_name(kind))
                       .add("train_step_ms", t)
                       .add("train_step_peak_mib", train_peak_mib));
        std::fflush(stdout);
        continue;
      }
      ForecastSettings fs;
      fs.horizon = 64;
      fs.samples = 100;
      std::vector<double> forecast_ms;
      double forecast_peak_mib = 0;
      for (int r = 0; r < reps + 1; ++r) {
        cuda_reset_peak(0);
        const size_t held = cuda_allocator_stats(0).allocated;
        const double ms =
            bench_time_ms(dev, [&] { (void)forecast_series(model, set.series, fs, dev); });
        if (r >= 1) forecast_ms.push_back(ms);
        forecast_peak_mib = double(cuda_allocator_stats(0).peak_allocated - held) / (1 << 20);
      }
      // One step's inverse CDF alone (6,400 rows of trunk features): the forecast's share spent
      // drawing, the rest is the trunk, the KV cache and the host.
      std::vector<double> draw_ms;
      {
        NoGradGuard no_grad;
        Generator hg(5);
        const Tensor hidden = randn({6400, 128}, hg, 0, 1, DType::f32, dev);
        std::vector<double> u(6400);
        for (size_t i = 0; i < u.size(); ++i) u[i] = (double(i) + 0.5) / double(u.size());
        for (int r = 0; r < 4 * reps + 1; ++r) {
          const double ms = bench_time_ms(dev, [&] { (void)model.head().inverse_cdf(hidden, u); });
          if (r >= 1) draw_ms.push_back(ms);
        }
      }
      const double t = median(train_ms), f = median(forecast_ms), d = median(draw_ms);
      const char* mode_name = deterministic ? "deterministic" : "fp32";
      std::printf("%-14s %-10s %14.3f %14.1f   (one step's draw %.2f ms; peak MiB: step %.0f, forecast %.0f)\n",
                  mode_name, enum_name(kind), t, f, d, train_peak_mib, forecast_peak_mib);
      std::fflush(stdout);
      report.row(JsonObject()
                     .add("mode", mode_name)
                     .add("head", enum_name(kind))
                     .add("train_step_ms", t)
                     .add("forecast_ms", f)
                     .add("draw_step_ms", d)
                     .add("train_step_peak_mib", train_peak_mib)
                     .add("forecast_peak_mib", forecast_peak_mib));
    }
  }
  // The floor: one SICK normaliser over the finite float16 patterns per path and step.
  Generator gen(4);
  BideOptions opt;
  opt.code = BideCode{BideValueType::f16, 16};
  std::vector<double> pass_ms;
  const Tensor w = randn({6400, 32, 16}, gen, 0, 0.35, DType::f32, dev);
  const Tensor r = randn({6400, 32}, gen, 0, 0.18, DType::f32, dev);
  BideOptions one = opt;
  one.support_lo = value_code(ValueFormat::float16).ranges()[0];
  one.support_hi = value_code(ValueFormat::float16).ranges()[1];
  for (int i = 0; i < reps + 1; ++i) {
    NoGradGuard no_grad;
    // Two ranges are two passes over half the patterns each: one pass over all 2^16 is the same
    // work, so the floor times the positive half twice.
    const double ms = bench_time_ms(dev, [&] {
      (void)bide_log_normalizer(w, r, one);
      (void)bide_log_normalizer(w, r, one);
    });
    if (i >= 1) pass_ms.push_back(ms);
  }
  const double floor = 64 * median(pass_ms);
  std::printf("floor: 64 steps x one SICK pass over 6,400 paths: %.1f ms\n", floor);
  // What a pass costs beyond its patterns: the mass of one 32-pattern tile per path (a
  // bisection's last levels), host ranges in and masses out as the quantile's passes do.
  std::vector<double> tile_ms;
  {
    NoGradGuard no_grad;
    const Tensor lo = full({6400}, 15360.0, DType::i64), hi = full({6400}, 15392.0, DType::i64);
    for (int i = 0; i < 4 * reps + 1; ++i) {
      const double ms = bench_time_ms(dev, [&] {
        (void)bide_range_log_mass(w, r, lo.to(dev), hi.to(dev), one).to_vector<float>();
      });
      if (i >= 1) tile_ms.push_back(ms);
    }
  }
  std::printf("one pass over a 32-pattern range per path (its fixed cost): %.3f ms\n",
              median(tile_ms));
  // The quantile op alone on the same laws (the forecaster's support: finite float16 values,
  // -0 left out): one step's draw less the head's projection and the copies around it.
  std::vector<double> quantile_ms;
  {
    NoGradGuard no_grad;
    BideOptions two = opt;
    const auto ranges = value_code(ValueFormat::float16).ranges();
    std::vector<int64_t> table;
    for (int j = 0; j < 4; ++j) table.insert(table.end(), 6400, ranges[size_t(j)]);
    bide_set_support(two, from_vector(table, {4, 6400}), dev);
    std::vector<double> u(6400);
    for (size_t i = 0; i < u.size(); ++i) u[i] = (double(i) + 0.5) / double(u.size());
    const Tensor q = from_vector(u, {6400}, dev);
    for (int i = 0; i < 4 * reps + 1; ++i) {
      const double ms = bench_time_ms(dev, [&] { (void)bide_quantile(w, r, q, two).to_vector<int64_t>(); });
      if (i >= 1) quantile_ms.push_back(ms);
    }
  }
  std::printf("the quantile op alone over 6,400 paths: %.3f ms\n", median(quantile_ms));
  report.summary()
      .add("sick_floor_ms", floor)
      .add("sick_pass_ms", median(pass_ms))
      .add("small_range_pass_ms", median(tile_ms))
      .add("quantile_op_ms", median(quantile_ms));
  report.write(args);
  return 0;
}

}  // namespace bg::cli
