#include "series.h"

#include <cmath>
#include <cstdlib>
#include <map>

#include "core/error.h"
#include "data/calendar.h"
#include "data/csv.h"
#include "kernels/philox.h"

namespace bg {
namespace {

// The largest magnitude a series value may have, and the smallest non-zero one: a window's scale
// and its forecast's values (up to float16's 65,504 scaled units) stay finite and normal doubles.
constexpr double kMaxValue = 1e300, kMinValue = 1e-300;

// Whether `text` is a series value: a finite number written whole (not "inf" or "1.5x"), of a
// magnitude within the bounds above; or a missing one (kMissingTexts: NaN, a masked input).
enum class ValueCheck { ok, missing, not_a_number, out_of_bounds };
const char* const kMissingTexts[] = {"", "NA", "N/A", "NaN", "nan", "NAN", "null", "None"};
ValueCheck parse_value(const std::string& text, double* v) {
  for (const char* m : kMissingTexts)
    if (text == m) {
      *v = kMissingValue;
      return ValueCheck::missing;
    }
  char* end = nullptr;
  *v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(*v))
    return ValueCheck::not_a_number;
  if (std::fabs(*v) > kMaxValue || (*v != 0 && std::fabs(*v) < kMinValue))
    return ValueCheck::out_of_bounds;
  return ValueCheck::ok;
}
const char* kOutOfBounds =
    "is outside the magnitudes a series may hold (0, or 1e-300 to 1e300): rescale the series";

// A series needs an observed value: its scale and its forecast start from them.
void check_observed(const SeriesSet& set) {
  for (const Series& s : set.series) {
    bool any = false;
    for (const double v : s.y) any |= !is_missing(v);
    BG_CHECK(any, "series", set.source, ": series '", s.id,
             "' has no observed value (every y is missing)");
  }
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

SeriesSet read_plain(LineReader& in, std::string first) {
  SeriesSet set;
  set.source = in.path();
  set.series.emplace_back();
  Series& s = set.series.back();
  std::string line = std::move(first);
  do {
    const std::string t = trim(line);
    double v;
    const ValueCheck check = parse_value(t, &v);
    BG_CHECK(check == ValueCheck::ok || check == ValueCheck::missing, "series", in.where(), ": '", t, "' ",
             check == ValueCheck::out_of_bounds ? kOutOfBounds : "is not a finite number",
             " (a plain series file holds one value a line)");
    s.ds.push_back(std::to_string(s.y.size()));
    s.y.push_back(v);
  } while (in.next(&line));
  check_observed(set);
  return set;
}

}  // namespace

SeriesSet read_series(const std::string& path) {
  LineReader in(path, "series", "series file");
  std::string header;
  BG_CHECK(in.next(&header) && !trim(header).empty(), "series", path,
           ": the file is empty (its first line is blank)");
  const std::vector<std::string> names = csv_fields(header, in.path(), in.line_no());
  bool long_format = false;
  for (const std::string& n : names) long_format |= n == "unique_id" || n == "ds" || n == "y";
  if (!long_format) return read_plain(in, header);
  int col_id = -1, col_ds = -1, col_y = -1;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& n = names[i];
    int* col = n == "unique_id" ? &col_id : n == "ds" ? &col_ds : n == "y" ? &col_y : nullptr;
    BG_CHECK(col != nullptr, "series", path, ":1: column '", n,
             "': a series file has the columns unique_id, ds and y");
    BG_CHECK(*col < 0, "series", path, ":1: column '", n, "' twice");
    *col = int(i);
  }
  BG_CHECK(col_ds >= 0 && col_y >= 0, "series", path, ":1: the header names ",
           col_ds < 0 ? "no ds column" : "no y column", " (unique_id, ds, y)");
  SeriesSet set;
  set.source = path;
  std::map<std::string, size_t> index;
  std::vector<int64_t> last_at;  // each series' last instant
  std::string line;
  bool kind_known = false;
  while (in.next(&line)) {
    if (trim(line).empty()) continue;
    // in.where() names the line in a message only: not built for every row.
    const std::vector<std::string> f = csv_fields(line, in.path(), in.line_no());
    BG_CHECK(f.size() == names.size(), "series", in.where(), ": ", f.size(),
             " fields, the header has ", names.size());
    const std::string id = col_id >= 0 ? f[size_t(col_id)] : "", ds = f[size_t(col_ds)],
                      ytext = f[size_t(col_y)];
    double y;
    const ValueCheck check = parse_value(ytext, &y);
    BG_CHECK(check == ValueCheck::ok || check == ValueCheck::missing, "series", in.where(),
             ": y '", ytext, "' ",
             check == ValueCheck::out_of_bounds
                 ? kOutOfBounds
                 : "is not a finite number (a missing value is empty, NA or NaN)");
    Stamp stamp;
    std::string why;
    BG_CHECK(parse_stamp(ds, &stamp, &why), "series", in.where(), ": ds: ", why);
    BG_CHECK(!kind_known || stamp.kind == set.stamps, "series", in.where(), ": ds '", ds,
             "' mixes dates and steps");
    set.stamps = stamp.kind;
    kind_known = true;
    auto [it, added] = index.emplace(id, set.series.size());
    if (added) {
      set.series.push_back({id, {}, {}});
      last_at.push_back(0);
    }
    Series& s = set.series[it->second];
    BG_CHECK(s.ds.empty() || stamp.at > last_at[it->second], "series", in.where(), ": ds ", ds,
             " of series '", id, "' is not after its previous row's ", s.ds.back(),
             " (sort each series by ds; a stamp may appear once)");
    last_at[it->second] = stamp.at;
    s.ds.push_back(ds);
    s.y.push_back(y);
  }
  BG_CHECK(!set.series.empty(), "series", path, ": the file holds a header and no rows");
  check_observed(set);
  return set;
}

std::vector<Stamp> series_stamps(const Series& s) {
  std::vector<Stamp> out(s.ds.size());
  std::string why;
  for (size_t i = 0; i < s.ds.size(); ++i)
    BG_CHECK(parse_stamp(s.ds[i], &out[i], &why), "series", "series '", s.id, "': ds: ", why);
  return out;
}

std::vector<Cadence> series_cadences(const SeriesSet& set) {
  std::vector<Cadence> out;
  std::map<std::pair<int, std::pair<int64_t, bool>>, int64_t> votes;
  for (const Series& s : set.series) {
    out.push_back(series_cadence(series_stamps(s)));
    const Cadence& c = out.back();
    if (c.kind != Cadence::Kind::unknown) ++votes[{int(c.kind), {c.step, c.month_end}}];
  }
  Cadence common;
  int64_t best = 0;
  for (const auto& [key, count] : votes)
    if (count > best) {
      best = count;
      common.kind = Cadence::Kind(key.first);
      common.step = key.second.first;
      common.month_end = key.second.second;
    }
  if (set.stamps == StampKind::step && common.kind == Cadence::Kind::unknown) {
    common.kind = Cadence::Kind::fixed;  // steps of one series of one point: count on by 1
    common.step = 1;
  }
  for (Cadence& c : out)
    if (c.kind == Cadence::Kind::unknown) c = common;
  return out;
}

void assign_seasonal_lags(SeriesSet& set) {
  const std::vector<Cadence> cadences = series_cadences(set);
  for (size_t i = 0; i < set.series.size(); ++i)
    set.series[i].lag = cadence_season(cadences[i], set.stamps);
}

std::vector<std::string> future_stamps(const Series& s, const Cadence& cadence, int64_t horizon) {
  BG_CHECK(!s.ds.empty(), "series", "series '", s.id, "' has no stamps");
  Stamp last;
  std::string why;
  BG_CHECK(parse_stamp(s.ds.back(), &last, &why), "series", "series '", s.id, "': ds: ", why);
  return stamps_after(last, cadence, horizon, "series '" + s.id + "'");
}

void check_test_window(const SeriesSet& set, int64_t horizon) {
  for (const Series& s : set.series) {
    const int64_t n = int64_t(s.y.size());
    BG_CHECK(n > horizon, "series", set.source, ": series '", s.id, "' has ", n,
             " points; a test window of ", horizon, " leaves it no context");
    for (int64_t t = n - horizon; t < n; ++t)
      BG_CHECK(!is_missing(s.y[size_t(t)]), "series", set.source, ": series '", s.id,
               "' has a missing y at ds ", s.ds[size_t(t)],
               " in its test window: eval scores observed points (train and forecast take gaps)");
  }
}

SeriesSplit split_series(const SeriesSet& set, int64_t horizon, int64_t min_train) {
  SeriesSplit split;
  int64_t longest = 0;
  for (size_t i = 0; i < set.series.size(); ++i) {
    const int64_t n = int64_t(set.series[i].y.size());
    const bool validated = train_length(n, horizon) >= min_train;
    split.train_end.push_back(validated ? train_length(n, horizon) : n - horizon);
    if (validated)
      split.validated.push_back(i);
    else
      split.short_series.push_back(i);
    longest = std::max(longest, n);
  }
  BG_CHECK(!split.validated.empty(), "series", set.source, ": no series has the ",
           2 * horizon + min_train, " points a validation split needs (data.horizon ", horizon,
           " held out twice, and ", min_train, " to train on); the longest has ", longest);
  return split;
}

namespace {

// The largest |x| of n values: the unit in which sums that would overflow are taken.
double largest_magnitude(const double* x, int64_t n) {
  double top = 0;
  for (int64_t i = 0; i < n; ++i) top = std::max(top, std::fabs(x[i]));
  return top;
}

}  // namespace

double context_scale(const double* x, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::fabs(x[i]);
  if (!std::isfinite(sum)) {  // values near the double's limit: summed in units of the largest
    const double top = largest_magnitude(x, n);
    sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += std::fabs(x[i]) / top;
    return top * (sum / double(n));
  }
  const double scale = n > 0 ? sum / double(n) : 0.0;
  return scale > 0 ? scale : 1.0;  // a context of zeros keeps exact zeros
}

WindowScale window_scale(const double* x, int64_t n, SeriesScaling how) {
  WindowScale w;
  if (how == SeriesScaling::standard && n > 0) {
    // Near the double's limit the squares overflow: the moments are then taken in units of the
    // largest |x| (a scale that fell back to 1 would put the window in the wrong units).
    double top = 1;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += x[i];
    mean /= double(n);
    for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
    if (!std::isfinite(mean) || !std::isfinite(var)) {
      top = largest_magnitude(x, n);
      mean = var = 0;
      for (int64_t i = 0; i < n; ++i) mean += x[i] / top;
      mean /= double(n);
      for (int64_t i = 0; i < n; ++i) var += (x[i] / top - mean) * (x[i] / top - mean);
    }
    const double sd = std::sqrt(var / double(n)) * top;
    w.loc = mean * top;
    w.scale = std::isnormal(sd) ? sd : context_scale(x, n);  // a constant prefix: mean_abs's
    return w;
  }
  w.scale = context_scale(x, n);
  return w;
}

WindowScale running_scale(const std::vector<double>& y, int64_t t, int64_t scale_len) {
  std::vector<double> observed;
  for (int64_t i = std::max<int64_t>(0, t - scale_len + 1); i <= t; ++i)
    if (!is_missing(y[size_t(i)])) observed.push_back(y[size_t(i)]);
  WindowScale w;
  w.scale = context_scale(observed.data(), int64_t(observed.size()));
  return w;
}

namespace {

// series_window under model.scaling: running: each position its own scale.
WindowScale running_window(const Series& s, int64_t end, int64_t limit, const WindowSpec& spec,
                           int64_t lag, std::vector<int64_t>& xs, std::vector<int64_t>& ys) {
  const ValueCode& code = value_code(spec.values);
  const int64_t first = std::max<int64_t>(0, end - spec.context);
  WindowScale ws;
  for (int64_t t = end - spec.context; t < end; ++t) {
    if (t < 0) {  // before the series: padding, no target
      xs.push_back(code.pad());
      if (lag > 0) xs.push_back(code.pad());
      ys.push_back(kSeriesIgnore);
      continue;
    }
    ws = running_scale(s.y, t, spec.scale_len);
    xs.push_back(series_input(code, ws, s.y[size_t(t)]));
    if (lag > 0) {
      const int64_t back = t + 1 - lag;
      xs.push_back(back < 0 ? code.pad() : series_input(code, ws, s.y[size_t(back)]));
    }
    const int64_t next = t + 1;
    ys.push_back(next < first + spec.scale_len || next >= limit || is_missing(s.y[size_t(next)])
                     ? kSeriesIgnore
                     : int64_t(code.pattern(ws.scaled(s.y[size_t(next)]))));
  }
  return ws;
}

}  // namespace

WindowScale series_window(const Series& s, int64_t end, int64_t limit, const WindowSpec& spec,
                          std::vector<int64_t>& xs, std::vector<int64_t>& ys) {
  const int64_t context = spec.context, scale_len = spec.scale_len;
  const int64_t lag = spec.lag > 0 && s.lag > 0 ? s.lag : spec.lag;  // the series' own season
  if (spec.scaling == SeriesScaling::running) return running_window(s, end, limit, spec, lag, xs, ys);
  const int64_t first = std::max<int64_t>(0, end - context);
  const int64_t prefix_end = std::min(first + scale_len, end);
  // The scale from the prefix's observed values (a gap is no value to scale by).
  std::vector<double> observed;
  for (int64_t t = first; t < prefix_end; ++t)
    if (!is_missing(s.y[size_t(t)])) observed.push_back(s.y[size_t(t)]);
  const WindowScale ws = observed.size() == size_t(prefix_end - first)
                             ? window_scale(s.y.data() + first, prefix_end - first, spec.scaling)
                             : window_scale(observed.data(), int64_t(observed.size()), spec.scaling);
  const ValueCode& code = value_code(spec.values);
  const auto input = [&](int64_t t) {
    return t < 0 ? code.pad() : series_input(code, ws, s.y[size_t(t)]);
  };
  for (int64_t t = end - context; t < end; ++t) {
    xs.push_back(input(t));
    if (lag > 0) xs.push_back(input(t + 1 - lag));
    const int64_t next = t + 1;
    ys.push_back(next < first + scale_len || next >= limit || is_missing(s.y[size_t(next)])
                     ? kSeriesIgnore
                     : int64_t(code.pattern(ws.scaled(s.y[size_t(next)]))));
  }
  return ws;
}

Shape series_input_shape(int64_t rows, int64_t context, int64_t lag) {
  return lag > 0 ? Shape{rows, context, series_channels(lag)} : Shape{rows, context};
}

void sample_series_windows(const SeriesSet& set, int64_t horizon, int64_t batch,
                           const WindowSpec& spec, Generator& gen, Device device, Tensor* x,
                           Tensor* y, std::vector<WindowScale>* scales) {
  std::vector<int64_t> train_end;
  for (const Series& s : set.series) train_end.push_back(train_length(int64_t(s.y.size()), horizon));
  sample_series_windows(set, train_end, batch, spec, gen, device, x, y, scales);
}

void sample_series_windows(const SeriesSet& set, const std::vector<int64_t>& train_end,
                           int64_t batch, const WindowSpec& spec, Generator& gen, Device device,
                           Tensor* x, Tensor* y, std::vector<WindowScale>* scales) {
  const int64_t context = spec.context, scale_len = spec.scale_len;
  // A window is its last target, a training point past the first scale_len: series i has
  // train_end[i] - scale_len of them.
  std::vector<int64_t> cum;
  int64_t total = 0;
  for (size_t i = 0; i < set.series.size(); ++i) {
    total += std::max<int64_t>(0, train_end[i] - scale_len);
    cum.push_back(total);
  }
  BG_CHECK(total > 0, "series", set.source, ": no series leaves a training target");
  const uint64_t first = gen.take(uint64_t(batch));
  std::vector<int64_t> xs, ys;
  if (scales) scales->clear();
  for (int64_t b = 0; b < batch; ++b) {
    const Philox4 r = philox4x32(first + uint64_t(b), gen.seed ^ 0x5E41E5ULL);
    const int64_t pick = int64_t(((uint64_t(r.v[0]) << 32) | r.v[1]) % uint64_t(total));
    size_t i = 0;
    while (cum[i] <= pick) ++i;
    const Series& s = set.series[i];
    const int64_t last_target = scale_len + (pick - (i == 0 ? 0 : cum[i - 1]));
    const WindowScale ws = series_window(s, last_target, train_end[i], spec, xs, ys);
    if (scales) scales->push_back(ws);
  }
  *x = from_vector(xs, series_input_shape(batch, context, spec.lag), device);
  *y = from_vector(ys, {batch, context}, device);
}

}  // namespace bg
