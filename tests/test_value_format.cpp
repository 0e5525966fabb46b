// test_value_format.cpp: the float16 and bfloat16 codes a forecaster's values are rounded to
// (data/value_format.h): every finite pattern round-trips, rounding is to the nearest grid value
// with ties to the even pattern, -0 is +0, values past the range saturate, the grid and its
// buckets tile the line, and the pad id is a NaN of its format.
#include <algorithm>
#include <cmath>

#include "data/value_format.h"
#include "harness.h"

namespace bg::test {

TEST_CASE("cpu: value codes: round trips, nearest-even rounding, saturation, grid") {
  for (const ValueFormat format : {ValueFormat::float16, ValueFormat::bfloat16}) {
    CAPTURE(enum_name(format));
    const ValueCode& code = value_code(format);
    const ValueGrid& g = code.grid();
    const auto& r = code.ranges();
    // Every target pattern is its value's pattern, and the grid holds exactly them, ascending.
    CHECK(g.patterns.size() == size_t((r[1] - r[0]) + (r[3] - r[2])));
    CHECK(g.patterns.size() == (format == ValueFormat::float16 ? 63487u : 36607u));
    for (size_t i = 0; i < g.patterns.size(); ++i) {
      CHECK(code.pattern(g.values[i]) == g.patterns[i]);
      CHECK(code.grid_index()[g.patterns[i]] == int64_t(i));
      if (i > 0) CHECK(g.values[i] > g.values[i - 1]);
      if (i > 0) CHECK(g.lower[i] == g.upper[i - 1]);
    }
    CHECK(code.pattern(-0.0) == 0);
    CHECK(code.pattern(-1e-300) == 0);
    CHECK(std::isnan(code.value(uint16_t(code.pad()))));
    CHECK(code.pattern(1e300) == g.patterns.back());
    CHECK(code.pattern(-1e300) == g.patterns.front());
    // Random values over many magnitudes: the nearest grid value, ties to the even pattern.
    Generator gen(test_seed() + 41);
    const std::vector<double> z = randn({4000}, gen, 0, 1, DType::f64).to_vector<double>();
    for (size_t i = 0; i < z.size(); ++i) {
      const double v = z[i] * std::ldexp(1.0, int(i % 61) - 30);
      const uint16_t k = code.pattern(v);
      const auto above = std::lower_bound(g.values.begin(), g.values.end(), v);
      if (above == g.values.begin() || above == g.values.end()) continue;
      const double hi = *above, lo = *(above - 1);
      const double got = code.value(k);
      CHECK_MESSAGE((got == lo || got == hi), "v ", v);
      const double dlo = v - lo, dhi = hi - v;
      if (dlo != dhi) CHECK_MESSAGE(got == (dlo < dhi ? lo : hi), "v ", v);
    }
    // Exact ties between two neighbours go to the even pattern (mantissa's last bit 0).
    for (size_t i = 1000; i < g.values.size(); i += 997) {
      const double mid = 0.5 * (g.values[i - 1] + g.values[i]);
      if (g.values[i - 1] == 0 || g.values[i] == 0) continue;
      const uint16_t k = code.pattern(mid);
      CHECK((k == g.patterns[i - 1] || k == g.patterns[i]));
      CHECK((k & 1) == 0);
    }
    // Bucket widths: the spacing of the values around each (twice the distance to an edge).
    for (size_t i = 1; i + 1 < g.values.size(); i += 509)
      CHECK(std::exp(code.log_widths()[g.patterns[i]]) ==
            doctest::Approx(g.upper[i] - g.lower[i]).epsilon(1e-12));
  }
  // float16's ranges and pad id are the ones its checkpoints were trained with (the bit input
  // reads the pad's bits).
  const ValueCode& f16 = value_code(ValueFormat::float16);
  CHECK(f16.ranges() == std::array<uint32_t, 4>{0x0000, 0x7C00, 0x8001, 0xFC00});
  CHECK(f16.pad() == 0x7E00);
  CHECK(value_code(ValueFormat::bfloat16).ranges() ==
        std::array<uint32_t, 4>{0x0000, 0x4780, 0x8001, 0xC780});
  // bfloat16 keeps 8 bits of precision, far below float16's smallest values; its targets stop
  // at 65280, the largest bfloat16 inside float16's range (values past it saturate there).
  const ValueCode& bf = value_code(ValueFormat::bfloat16);
  CHECK(bf.value(bf.pattern(1.0 + 1.0 / 256)) == 1.0);  // a tie: to the even 1.0
  CHECK(bf.value(bf.pattern(65280)) == 65280);
  CHECK(bf.value(bf.pattern(65400)) == 65280);  // nearest is 65536: past the largest target
  CHECK(bf.value(bf.pattern(-3e30)) == -65280);
  CHECK(bf.value(bf.pattern(1e-40)) == doctest::Approx(1e-40).epsilon(0.01));  // subnormal
}

}  // namespace bg::test
