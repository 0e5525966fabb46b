// test_series.cpp: data/series.h: the series files and their refusals (file:line), float16
// patterns (round to nearest even from the double, one zero, saturation, value order across
// -0/+0 and subnormals), the context scale, and training windows (weights by length, no target
// inside the scale prefix or past the training part, the same windows from the same stream).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "data/series.h"
#include "harness.h"
#include "kernels/bide_values.h"

using namespace bg;

namespace {

// The float16 input id before a series starts, and the finite patterns a target can be.
const int64_t kPad = value_code(ValueFormat::float16).pad();
const std::array<uint32_t, 4> kRanges = value_code(ValueFormat::float16).ranges();

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path =
      bg::test::scratch_path("series_" + name);
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::string& text) {
  const std::string path = write_temp("bad.csv", text);
  try {
    read_series(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("cpu: series files: long format by id, dates or steps, and plain values") {
  const SeriesSet set = read_series(write_temp(
      "long.csv",
      "unique_id,ds,y\na,2020-01-01,1.5\nb,2020-01-01,-2\na,2020-02-01,3\n\"b\",2020-02-01,4e2\n"));
  REQUIRE(set.series.size() == 2);
  CHECK(set.stamps == StampKind::date);
  CHECK(set.series[0].id == "a");
  CHECK(set.series[0].y == std::vector<double>{1.5, 3});
  CHECK(set.series[1].ds == std::vector<std::string>{"2020-01-01", "2020-02-01"});
  CHECK(set.series[1].y == std::vector<double>{-2, 400});
  // Columns in any order; integer steps.
  const SeriesSet steps =
      read_series(write_temp("steps.csv", "y,unique_id,ds\n5,s,1\n6,s,2\n7,s,10\n"));
  CHECK(steps.stamps == StampKind::step);
  CHECK(steps.series[0].y == std::vector<double>{5, 6, 7});
  // A byte-order mark (spreadsheet exports) and CRLF line ends.
  const SeriesSet bom =
      read_series(write_temp("bom.csv", "\xEF\xBB\xBFunique_id,ds,y\r\nz,1,2\r\nz,2,3\r\n"));
  CHECK(bom.series[0].y == std::vector<double>{2, 3});
  const SeriesSet plain = read_series(write_temp("plain.txt", "1\n2.5\n-3\n"));
  REQUIRE(plain.series.size() == 1);
  CHECK(plain.series[0].y == std::vector<double>{1, 2.5, -3});
}

TEST_CASE("cpu: series files: bad rows are refused naming file and line") {
  // Missing values are kept (a series of them alone is refused); infinities are not values.
  CHECK(error_of("unique_id,ds,y\na,1,\na,2,NA\n").find("series 'a' has no observed value") !=
        std::string::npos);
  CHECK(error_of("unique_id,ds,y\na,1,inf\n").find(":2: y 'inf' is not a finite number (a missing value is empty, NA or NaN)") != std::string::npos);
  CHECK(error_of("unique_id,ds,y\na,yesterday,1\n").find(":2: ds: 'yesterday' is neither") !=
        std::string::npos);
  CHECK(error_of("unique_id,ds,y\na,2,1\na,1,1\n").find(":3: ds 1 of series 'a' is not after") !=
        std::string::npos);
  CHECK(error_of("unique_id,ds,y\na,2020-01-01,1\na,7,1\n").find(":3: ds '7' mixes dates") !=
        std::string::npos);
  CHECK(error_of("unique_id,ds,y\na,1\n").find(":2: 2 fields, the header has 3") !=
        std::string::npos);
  CHECK(error_of("unique_id,ds,y,price\n").find(":1: column 'price'") != std::string::npos);
  CHECK(error_of("unique_id,y\n").find("no ds column") != std::string::npos);
  CHECK(error_of("unique_id,ds,y\n").find("a header and no rows") != std::string::npos);
  CHECK(error_of("").find("the file is empty") != std::string::npos);
  CHECK(error_of("1\n2\nx\n").find("bad.csv:3: 'x' is not a finite number") != std::string::npos);
  // Too short to leave context before its test window: names the series.
  const SeriesSet set = read_series(write_temp("short.csv", "unique_id,ds,y\nq,1,1\nq,2,2\n"));
  CHECK_THROWS_WITH(check_test_window(set, 2),
                    doctest::Contains("series 'q' has 2 points; a test window of 2 leaves it no context"));
}

// Gaps: an empty, NA or NaN y is a masked input (the pad pattern, as before a series' start),
// never a target, and no part of a window's scale.
TEST_CASE("cpu: missing values are masked inputs, never targets, and left out of the scale") {
  const SeriesSet set = read_series(write_temp(
      "gaps.csv", "unique_id,ds,y\na,1,2\na,2,\na,3,4\na,4,NA\na,5,6\na,6,NaN\na,7,8\nb,1,1\n"));
  REQUIRE(set.series.size() == 2);
  const Series& a = set.series[0];
  CHECK(a.y.size() == 7);
  CHECK((is_missing(a.y[1]) && is_missing(a.y[3]) && is_missing(a.y[5])));
  CHECK(a.y[6] == 8);
  const ValueCode& code = value_code(ValueFormat::float16);
  WindowSpec spec;
  spec.context = 6;
  spec.scale_len = 3;  // points 1..3 of the window: 2, (gap), 4: mean |x| 3
  std::vector<int64_t> x, y;
  const WindowScale ws = series_window(a, 6, 7, spec, x, y);  // inputs points 0..5
  CHECK(ws.scale == 3);
  CHECK(x == std::vector<int64_t>{code.pattern(2.0 / 3), code.pad(), code.pattern(4.0 / 3),
                                  code.pad(), code.pattern(2.0), code.pad()});
  // Targets: points 1..6; inside the prefix (points 1, 2) and the gaps (3, 5) none.
  CHECK(y == std::vector<int64_t>{kSeriesIgnore, kSeriesIgnore, kSeriesIgnore, code.pattern(2.0),
                                  kSeriesIgnore, code.pattern(8.0 / 3)});
}

// A series' own lag (model.seasonal_lag) replaces the model's in its windows' lag input.
TEST_CASE("cpu: a series' own lag drives its windows' lag input") {
  Series s;
  for (int t = 0; t < 30; ++t) s.y.push_back(1 + t);
  WindowSpec spec;
  spec.context = 4;
  spec.scale_len = 1;
  spec.lag = 2;
  const ValueCode& code = value_code(ValueFormat::float16);
  std::vector<int64_t> x, y, x7, y7;
  const WindowScale ws = series_window(s, 20, 30, spec, x, y);
  s.lag = 7;
  series_window(s, 20, 30, spec, x7, y7);
  CHECK(y == y7);
  for (int64_t p = 0; p < 4; ++p) {  // inputs points 16..19; lag channel point t + 1 - lag
    const int64_t t = 16 + p;
    CHECK(x[size_t(2 * p + 1)] == code.pattern(ws.scaled(s.y[size_t(t + 1 - 2)])));
    CHECK(x7[size_t(2 * p + 1)] == code.pattern(ws.scaled(s.y[size_t(t + 1 - 7)])));
  }
}

// model.scaling: running: each position scaled by the mean |x| of the last scale_len values up to
// it (the series' before the window too), its target by the same: no position sees a later value.
TEST_CASE("cpu: running scaling: a scale per position from the values up to it") {
  Series s;
  for (int t = 0; t < 20; ++t) s.y.push_back(10.0 * (t + 1));  // a trend: 10, 20, ..., 200
  s.y[12] = kMissingValue;
  WindowSpec spec;
  spec.context = 6;
  spec.scale_len = 3;
  spec.scaling = SeriesScaling::running;
  const ValueCode& code = value_code(ValueFormat::float16);
  std::vector<int64_t> x, y;
  const WindowScale last = series_window(s, 16, 20, spec, x, y);  // inputs points 10..15
  for (int64_t p = 0; p < 6; ++p) {
    const int64_t t = 10 + p;
    double sum = 0, n = 0;
    for (int64_t i = t - 2; i <= t; ++i)
      if (!is_missing(s.y[size_t(i)])) sum += s.y[size_t(i)], ++n;
    const double scale = sum / n;
    CHECK(running_scale(s.y, t, 3).scale == scale);
    CHECK(x[size_t(p)] == (is_missing(s.y[size_t(t)]) ? int64_t(code.pad())
                                                      : int64_t(code.pattern(s.y[size_t(t)] / scale))));
    // Targets after the window's first scale_len positions, each in its position's scale.
    const int64_t next = t + 1;
    const bool target = next >= 10 + 3 && !is_missing(s.y[size_t(next)]);
    CHECK(y[size_t(p)] == (target ? int64_t(code.pattern(s.y[size_t(next)] / scale)) : kSeriesIgnore));
  }
  CHECK(last.scale == running_scale(s.y, 15, 3).scale);
  // A window starting before the series pads; a trend stays near 1 in its own scale.
  std::vector<int64_t> xp, yp;
  series_window(s, 2, 20, spec, xp, yp);
  CHECK(xp[0] == int64_t(code.pad()));
  CHECK(code.value(uint16_t(x[5])) == doctest::Approx(160.0 / 150.0).epsilon(1e-3));
}

// A series too short for the validation split trains on what it has: all but its test window,
// not validated; a file where none can be validated is refused.
TEST_CASE("cpu: the training split keeps a short series as training data") {
  std::string text = "unique_id,ds,y\n";
  for (int t = 0; t < 40; ++t) text += "long," + std::to_string(t) + ",1\n";
  for (int t = 0; t < 12; ++t) text += "short," + std::to_string(t) + ",1\n";
  const SeriesSet set = read_series(write_temp("split.csv", text));
  const SeriesSplit split = split_series(set, 4, 9);
  CHECK(split.train_end == std::vector<int64_t>{32, 8});
  CHECK(split.validated == std::vector<size_t>{0});
  CHECK(split.short_series == std::vector<size_t>{1});
  CHECK_THROWS_WITH(split_series(set, 16, 9),
                    doctest::Contains("no series has the 41 points a validation split needs"));
}

TEST_CASE("cpu: float16 patterns: nearest even from the double, one zero, saturated range") {
  const BideCode f16{BideValueType::f16, 16};
  int finite = 0;
  for (uint32_t k = 0; k < 65536; ++k) {
    if (!f16.finite(k)) continue;
    ++finite;
    const double v = float16_value(uint16_t(k));
    CHECK(v == f16.value(k));
    CHECK(float16_pattern(v) == (k == 0x8000 ? 0u : k));  // -0 is +0
  }
  CHECK(finite == 63488);
  // Halfway between 1 and the next float16 (1 + 2^-10): ties go to the even mantissa.
  CHECK(float16_pattern(1.0 + std::ldexp(1.0, -11)) == 0x3C00);
  CHECK(float16_pattern(1.0 + 3 * std::ldexp(1.0, -11)) == 0x3C02);
  // From the double directly: just above the tie rounds up (a float would round to the tie).
  CHECK(float16_pattern(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)) == 0x3C01);
  // Subnormals: 2^-25 is a tie between 0 and 2^-24 (even: 0); 3 * 2^-26 rounds up.
  CHECK(float16_pattern(std::ldexp(1.0, -25)) == 0);
  CHECK(float16_pattern(-std::ldexp(1.0, -26)) == 0);  // rounds to -0, which is +0
  CHECK(float16_pattern(3 * std::ldexp(1.0, -26)) == 1);
  CHECK(float16_pattern(std::ldexp(1023.5, -24)) == 0x0400);  // up into the normals
  CHECK(float16_pattern(65504.0) == 0x7BFF);
  CHECK(float16_pattern(65519.9) == 0x7BFF);
  CHECK(float16_pattern(1e9) == 0x7BFF);
  CHECK(float16_pattern(-1e300) == 0xFBFF);
  // Value order (the CDF's) is monotone across the negatives, -0/+0 and the subnormals, and
  // kRanges hold exactly the patterns a target can be.
  double prev = -INFINITY;
  int in_ranges = 0;
  for (uint32_t key = 0; key < 65536; ++key) {
    const uint32_t k = f16.from_order_key(key);
    if (!f16.finite(k)) continue;
    CHECK(f16.value(k) >= prev);
    prev = f16.value(k);
  }
  for (uint32_t k = 0; k < 65536; ++k) {
    const bool in = (k >= kRanges[0] && k < kRanges[1]) || (k >= kRanges[2] && k < kRanges[3]);
    in_ranges += in;
    CHECK(in == (f16.finite(k) && k != 0x8000));
  }
  CHECK(in_ranges == 63487);
}

TEST_CASE("cpu: series scaling: the context's mean |x|, 1 for zeros, inverted by one multiply") {
  const double x[4] = {2, -6, 0, 4};
  CHECK(context_scale(x, 4) == 3.0);
  const double zeros[3] = {0, 0, 0};
  CHECK(context_scale(zeros, 3) == 1.0);
  CHECK(context_scale(x, 0) == 1.0);
  // A value scaled, stored as float16 and put back is within float16's half-ulp of it.
  for (double v : {123.456, -0.001234, 98765.0, 3.0}) {
    const double scale = 37.5;
    const double back = float16_value(float16_pattern(v / scale)) * scale;
    CHECK(std::fabs(back - v) <= std::fabs(v) * std::ldexp(1.0, -11) + 1e-12);
  }
}

TEST_CASE("cpu: standard scaling: the prefix's mean and deviation, inverted by one multiply-add") {
  const double x[4] = {2, -6, 0, 4};
  const WindowScale s = window_scale(x, 4, SeriesScaling::standard);
  CHECK(s.loc == 0.0);
  CHECK(s.scale == doctest::Approx(std::sqrt(14.0)).epsilon(1e-15));
  // A constant prefix has no deviation: mean_abs's scale; zeros scale by 1.
  const double level[3] = {350, 350, 350}, zeros[3] = {0, 0, 0};
  CHECK(window_scale(level, 3, SeriesScaling::standard).loc == 350.0);
  CHECK(window_scale(level, 3, SeriesScaling::standard).scale == 350.0);
  CHECK(window_scale(zeros, 3, SeriesScaling::standard).scale == 1.0);
  CHECK(window_scale(x, 4, SeriesScaling::mean_abs).loc == 0.0);
  // A level of 350 with swings of 3: standard scaling keeps the swing's steps float16 can tell
  // apart far finer than mean_abs (whose scaled values sit near 1.0, 2^-10 apart).
  const double co2[4] = {347, 350, 353, 350};
  const WindowScale st = window_scale(co2, 4, SeriesScaling::standard);
  for (double v : {351.37, 349.02, 356.6}) {
    const double back = st.value(float16_value(float16_pattern(st.scaled(v))));
    CHECK(std::fabs(back - v) <= std::fabs(st.scaled(v)) * st.scale * std::ldexp(1.0, -11) + 1e-12);
    CHECK(std::fabs(back - v) < 2e-3);
  }
  // A window's targets are its values scaled by its prefix's map.
  Series a{"a", {}, {}};
  for (int i = 0; i < 20; ++i) a.y.push_back(100 + 3 * i + (i % 2));
  std::vector<int64_t> wx, wy;
  const WindowScale ws = series_window(a, 12, 20, {8, 4, SeriesScaling::standard}, wx, wy);
  CHECK(ws.loc ==
        doctest::Approx((100 + 3 * 4 + 0 + 100 + 3 * 5 + 1 + 100 + 3 * 6 + 100 + 3 * 7 + 1) / 4.0));
  for (int64_t t = 4; t < 8; ++t)  // window points 4..11; targets after the 4-value prefix
    if (wy[size_t(t)] != kSeriesIgnore)
      CHECK(wy[size_t(t)] == float16_pattern(ws.scaled(a.y[size_t(4 + t + 1)])));
}

TEST_CASE(
    "cpu: series windows: weighted by length, targets after the scale prefix and before the "
    "split") {
  SeriesSet set;
  set.source = "test";
  Series a{"a", {}, {}}, b{"b", {}, {}};
  for (int i = 0; i < 40; ++i) a.y.push_back(1 + i);     // train part 40 - 2*4 = 32
  for (int i = 0; i < 16; ++i) b.y.push_back(-100 - i);  // train part 8
  set.series = {a, b};
  const int64_t horizon = 4, context = 6, scale_len = 3, batch = 3000;
  Generator gen(7);
  Tensor x, y;
  std::vector<WindowScale> sc;
  sample_series_windows(set, horizon, batch, {context, scale_len}, gen, Device::cpu(), &x, &y, &sc);
  const std::vector<int64_t> xs = x.to_vector<int64_t>(), ys = y.to_vector<int64_t>();
  REQUIRE(sc.size() == size_t(batch));
  int from_a = 0;
  for (int64_t w = 0; w < batch; ++w) {
    // The series by sign; each window has a target, every target is a training point of its
    // series past the scale prefix, and x and y agree where both are values.
    bool any_target = false, is_a = true;
    for (int64_t t = 0; t < context; ++t) {
      const int64_t xi = xs[size_t(w * context + t)], yi = ys[size_t(w * context + t)];
      if (xi != kPad) is_a = float16_value(uint16_t(xi)) > 0;
      if (yi == kSeriesIgnore) continue;
      any_target = true;
      const double value = sc[size_t(w)].value(float16_value(uint16_t(yi)));
      // Before the split (up to float16's rounding of the scaled value).
      CHECK((value > 0 ? value <= 32.0 * (1 + 1e-3) : value >= -107.0 * (1 + 1e-3)));
      if (t + 1 < context) CHECK(xs[size_t(w * context + t + 1)] == yi);
    }
    CHECK(any_target);
    from_a += is_a;
  }
  // Windows per series: a has 32 - 3 = 29, b 8 - 3 = 5: a drawn with probability 29/34.
  CHECK(std::fabs(double(from_a) / batch - 29.0 / 34.0) < 0.03);
  // The same stream position gives the same windows.
  Generator again(7);
  Tensor x2, y2;
  sample_series_windows(set, horizon, batch, {context, scale_len}, again, Device::cpu(), &x2, &y2);
  CHECK(x2.to_vector<int64_t>() == xs);
  CHECK(y2.to_vector<int64_t>() == ys);
  // A window of a short series is padded on the left, its scale from its first values.
  std::vector<int64_t> wx, wy;
  const WindowScale s = series_window(set.series[0], 2, 8, {context, scale_len}, wx, wy);
  CHECK(s.scale == 1.5);  // mean of 1, 2
  CHECK(s.loc == 0.0);
  CHECK(wx == std::vector<int64_t>{kPad, kPad, kPad, kPad, float16_pattern(1 / 1.5),
                                   float16_pattern(2 / 1.5)});
  CHECK(wy[5] == kSeriesIgnore);  // point 2 is inside the scale prefix (points 0..2)
}

TEST_CASE("cpu: the float16 grid: value order, contiguous buckets, each rounding to its value") {
  const ValueGrid& g = float16_grid();
  REQUIRE(g.values.size() == 63487);
  CHECK(g.values.front() == -65504.0);
  CHECK(g.values.back() == 65504.0);
  CHECK(g.lower.front() == -INFINITY);
  CHECK(g.upper.back() == INFINITY);
  for (size_t i = 0; i < g.values.size(); ++i) {
    CHECK(g.values[i] == float16_value(g.patterns[i]));
    if (i > 0) {
      CHECK(g.values[i] > g.values[i - 1]);
      CHECK(g.lower[i] == g.upper[i - 1]);
    }
    // Just inside either edge rounds to the bucket's own pattern.
    const double lo = std::isinf(g.lower[i]) ? g.values[i] - 1 : g.lower[i],
                 hi = std::isinf(g.upper[i]) ? g.values[i] + 1 : g.upper[i];
    const double in_lo = lo + (hi - lo) * 1e-6, in_hi = hi - (hi - lo) * 1e-6;
    CHECK(float16_pattern(in_lo) == g.patterns[i]);
    CHECK(float16_pattern(in_hi) == g.patterns[i]);
  }
}
