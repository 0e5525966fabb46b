// value_format.h: the 16-bit float formats a forecaster's scaled values are rounded to
// (model.values): float16 (5 exponent bits, 10 mantissa bits: 1,024 values an octave, |v| up to
// 65504) and bfloat16 (8 and 7: 128 values an octave, down to 1e-40; its targets stop at 65280,
// inside float16's range). A target is one of the format's values, rounded to nearest (ties to
// even) from the double directly. Zero is one pattern, +0: -0 and values that round to it map
// there, so -0 never is a target. Beyond the largest target a value saturates there: no target
// is Inf or NaN.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/bide_values.h"
#include "kernels/enum_names.h"

namespace bg {

#define BG_VALUE_FORMATS(X) X(float16, "float16") X(bfloat16, "bfloat16")
BG_NAMED_ENUM(ValueFormat, BG_VALUE_FORMATS)

// The values a target can take, ascending (float16: -65504 .. 65504 with one zero, 63,487
// values; bfloat16: -65280 .. 65280, 36,607), with their patterns and buckets: the values that round to
// each (edges midway to the neighbours; the two end buckets reach -inf and +inf, as values beyond
// saturate there). A continuous law becomes a law over the patterns by its CDF at the edges, so
// every head's and the true process's forecasts are distributions over the same values.
struct ValueGrid {
  std::vector<uint16_t> patterns;
  std::vector<double> values, lower, upper;
};

class ValueCode {
 public:
  explicit ValueCode(ValueFormat format);
  ValueFormat format() const { return format_; }
  uint16_t pattern(double v) const;
  double value(uint16_t k) const { return code_.value(k); }
  // The patterns a target can be, as two ranges [lo, hi): +0 and the positives up to the
  // largest target, then the negatives (NaN and Inf patterns and -0 excluded).
  const std::array<uint32_t, 4>& ranges() const { return ranges_; }
  // The input id before a series' first value: a NaN pattern, never a value.
  int64_t pad() const { return pad_; }
  const ValueGrid& grid() const { return grid_; }
  // log of each pattern's bucket width (0 for patterns that are no target); the end buckets,
  // which reach +-inf, take the spacing there.
  const std::vector<double>& log_widths() const { return log_widths_; }
  // Each pattern's place in grid() (-1 for patterns that are no target).
  const std::vector<int64_t>& grid_index() const { return grid_index_; }
  BideValueType bide_type() const { return code_.type; }

 private:
  ValueFormat format_;
  BideCode code_;
  int exponent_bits_, mantissa_bits_;
  uint32_t top_;  // the largest target's pattern
  std::array<uint32_t, 4> ranges_;
  int64_t pad_;
  ValueGrid grid_;
  std::vector<double> log_widths_;
  std::vector<int64_t> grid_index_;
};

// The format's code, made once.
const ValueCode& value_code(ValueFormat format);

}  // namespace bg
