// series.h: real-valued time series for forecasting. Files: long-format CSV with a header naming
// unique_id, ds and y (the statsforecast/neuralforecast convention; ds a date or an integer
// step), or one value a line (one series). The time split holds out each series' last `horizon`
// points (the test window) and the `horizon` points before them (the validation window); the
// model trains on the rest. A window is put on a common scale from its first values (by their
// mean |x|, Chronos' scaling, or by their mean and standard deviation), so a forecast is put
// back by one multiply-add, and each scaled value becomes its float16 bit pattern: the ids a
// BIDE head predicts exactly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "data/calendar.h"
#include "data/value_format.h"
#include "kernels/enum_names.h"

namespace bg {

// A missing value (an empty y, NA, NaN, null, None in a file): a masked input (the format's pad
// pattern, as before a series' start), never a target, left out of a window's scale.
inline constexpr double kMissingValue = __builtin_nan("");
inline bool is_missing(double v) { return v != v; }

struct Series {
  std::string id;               // unique_id ("" for a plain file)
  std::vector<std::string> ds;  // the timestamps as written (plain file: 0, 1, ...)
  std::vector<double> y;        // kMissingValue where the file has none
  // The lag input's distance for this series' windows, where it has its own (model.seasonal_lag:
  // its cadence's season, assign_seasonal_lags); 0: the model's model.lag.
  int64_t lag = 0;
};


struct SeriesSet {
  std::string source;
  StampKind stamps = StampKind::step;
  std::vector<Series> series;  // in the order of each id's first row
};

// Reads `path` (CSV as data/csv.h reads it; unique_id may be left out for one series). Refused
// in one line naming file:line: a row with another number of fields than the header, an unknown
// column, a y that is not a number (inf, 1.5x; empty, NA, NaN, null and None are missing values,
// kept as kMissingValue), a series with no observed value, a y of magnitude past 1e300 or non-zero
// under 1e-300 (a window's scale and its forecasts must stay finite doubles), a ds that is no
// stamp (data/calendar.h: an impossible date, a step past int64), ds not increasing within a
// series (compared as instants), dates mixed with steps; and a file with no values.
SeriesSet read_series(const std::string& path);

// Each series' stamps as instants (data/calendar.h; every ds was read by parse_stamp).
std::vector<Stamp> series_stamps(const Series& s);
// The cadence of each series of `set`: its own (data/calendar.h), or for a series of one stamp
// the cadence most series of the file share (unknown when none has two).
std::vector<Cadence> series_cadences(const SeriesSet& set);
// model.seasonal_lag: each series' lag is its cadence's season (data/calendar.h cadence_season),
// where its stamps give one; the others keep the model's lag (Series::lag 0).
void assign_seasonal_lags(SeriesSet& set);

// The `horizon` stamps after a series' last at `cadence`, in its own style (steps count on by
// the step; dates keep their form: a date, a date and time, seconds).
std::vector<std::string> future_stamps(const Series& s, const Cadence& cadence, int64_t horizon);

// The time split: the first train_length(n, h) points of a series of n train the model, the next
// h validate, the last h test.
inline int64_t train_length(int64_t n, int64_t horizon) { return n - 2 * horizon; }

// eval's split: each series' last `horizon` points are scored, the rest is context. Refused in
// one line naming the series when none is left as context or a scored point is missing.
void check_test_window(const SeriesSet& set, int64_t horizon);

// A training run's split of every series: a series long enough (2 horizons and min_train
// points) is split as above and validated; a shorter one trains on all but its test window (its
// first n - horizon points, of which those past the scale prefix are targets) and is not
// validated. train_end[i] ends series i's training points. Refused in one line when no series
// can be validated.
struct SeriesSplit {
  std::vector<int64_t> train_end;
  std::vector<size_t> validated, short_series;  // indices into the set
};
SeriesSplit split_series(const SeriesSet& set, int64_t horizon, int64_t min_train);

// Chronos' scale of a context: mean |x| over its values (summed in units of the largest, so
// values near the double's limit do not overflow it); 1 for a context of zeros (which keeps
// exact zeros).
double context_scale(const double* x, int64_t n);

// How a window is scaled (model.scaling): mean_abs divides by the mean |x| of its scale prefix
// (Chronos; zero stays exactly zero, a level of 350 with swings of 3 stays near 1.0, where
// float16 holds 1,024 values per octave); standard subtracts the prefix's mean and divides by
// its standard deviation (the instance normalisation of RevIN and TimesFM), so the swings fill
// the values around 0, where float16 is finest; running scales each position by the mean |x| of
// the last scale_len values up to it (its own included, the series' before the window too), and
// its target by the same, so a trending series stays near 1 however long the window (a causal
// running scale: no position sees a later value).
#define BG_SERIES_SCALINGS(X) \
  X(mean_abs, "mean_abs") X(standard, "standard") X(running, "running")
BG_NAMED_ENUM(SeriesScaling, BG_SERIES_SCALINGS)

// A window's map to the model's units: scaled = (x - loc) / scale, and back.
struct WindowScale {
  double loc = 0.0, scale = 1.0;
  double scaled(double x) const { return (x - loc) / scale; }
  double value(double z) const { return loc + scale * z; }
};
// The map from a window's first n values. standard: their mean and population standard
// deviation (in units of the largest |x| where the squares would overflow); a constant prefix
// (deviation 0 or not normal) falls back to mean_abs's scale; mean_abs and running: their mean
// |x|.
WindowScale window_scale(const double* x, int64_t n, SeriesScaling how);
// running: the scale at point t of `y`, the mean |x| of its observed values among points
// t - scale_len + 1 .. t (those of them that exist).
WindowScale running_scale(const std::vector<double>& y, int64_t t, int64_t scale_len);

// A value's input pattern in a window of scale `ws`: its pattern, or the format's pad id for a
// missing value.
inline int64_t series_input(const ValueCode& code, const WindowScale& ws, double v) {
  return is_missing(v) ? code.pad() : int64_t(code.pattern(ws.scaled(v)));
}

// The float16 code's pattern and value of a scaled value (data/value_format.h).
inline uint16_t float16_pattern(double v) { return value_code(ValueFormat::float16).pattern(v); }
inline double float16_value(uint16_t k) { return value_code(ValueFormat::float16).value(k); }
inline const ValueGrid& float16_grid() { return value_code(ValueFormat::float16).grid(); }
// The target of a position that has none to predict (inside the scale prefix, past the split;
// a padded position before a series' first value, whose input is its format's ValueCode::pad).
inline constexpr int64_t kSeriesIgnore = -100;

// How a forecaster cuts its windows: `context` positions, the scale from the first `scale_len`
// values by `scaling`, the lag input (0: none), the values' format.
struct WindowSpec {
  int64_t context = 0, scale_len = 0;
  SeriesScaling scaling = SeriesScaling::mean_abs;
  int64_t lag = 0;
  ValueFormat values = ValueFormat::float16;
};

// The scale and the targets never look ahead of each other: a window's scale comes from
// its first `scale_len` values (its scale prefix; the series' first values where the window
// starts before them), and only values after the prefix are targets. (Scaling by the whole
// window would tell each position about the values it is to predict: their mean |x| is fixed.)
// A forecast reads a context the same way: the scale from its first scale_len values.
//
// One window of series `s` whose inputs end at point `end` (exclusive): inputs
// [end - context, end), padded on the left with the format's pad id; targets one step later,
// scaled, or kSeriesIgnore inside the scale prefix and at and past point `limit` (what the
// window may not see). With a lag each position's input is two patterns, its value and the value
// `lag` steps before its target (point t + 1 - lag for the input at point t: always already
// seen; the pad id before the series), interleaved in xs. Appended to xs and ys; returns the
// window's scale (under running scaling each position has its own, and the last position's,
// which scales the value after the window, is returned).
WindowScale series_window(const Series& s, int64_t end, int64_t limit, const WindowSpec& spec,
                          std::vector<int64_t>& xs, std::vector<int64_t>& ys);
// The input channels of a position: its value, and the lagged value when lag > 0.
inline int64_t series_channels(int64_t lag) { return lag > 0 ? 2 : 1; }
// x's shape for `rows` windows of `context` positions: (rows, context), or (rows, context, 2)
// with a lag.
Shape series_input_shape(int64_t rows, int64_t context, int64_t lag);

// `batch` training windows: a series drawn with probability proportional to its number of
// windows (longer series weigh more), then one of them uniformly: windows whose last target is a
// training point past the scale prefix. x (series_input_shape) and y (B, T) the patterns as
// series_window makes them, on `device`, and each window's scale when `scales` is given. Draws
// only from `gen`'s stream.
void sample_series_windows(const SeriesSet& set, int64_t horizon, int64_t batch,
                           const WindowSpec& spec, Generator& gen, Device device, Tensor* x,
                           Tensor* y, std::vector<WindowScale>* scales = nullptr);
// The same over each series' own training end (SeriesSplit::train_end): a short series' windows
// run up to its test window.
void sample_series_windows(const SeriesSet& set, const std::vector<int64_t>& train_end,
                           int64_t batch, const WindowSpec& spec, Generator& gen, Device device,
                           Tensor* x, Tensor* y, std::vector<WindowScale>* scales = nullptr);

}  // namespace bg
