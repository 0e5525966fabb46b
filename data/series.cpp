#include "series.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>

#include "core/error.h"
#include "kernels/philox.h"

namespace bg {
namespace {

// One CSV line's fields; a field may be double-quoted ("a,b", "" for a quote).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// A finite number written whole, or false ("", "NA", "nan", "inf" and "1.5x" all refused).
bool parse_value(const std::string& text, double* v) {
  if (text.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(*v);
}

bool parse_step(const std::string& text, int64_t* v) {
  if (text.empty()) return false;
  char* end = nullptr;
  const long long x = std::strtoll(text.c_str(), &end, 10);
  *v = x;
  return end == text.c_str() + text.size();
}

// YYYY-MM-DD, optionally followed by a time ("T" or " " then digits and colons): compared as
// text, which orders ISO dates of one format.
bool is_date(const std::string& t) {
  if (t.size() < 10 || t[4] != '-' || t[7] != '-') return false;
  for (int i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (t[size_t(i)] < '0' || t[size_t(i)] > '9') return false;
  if (t.size() == 10) return true;
  if (t[10] != 'T' && t[10] != ' ') return false;
  for (size_t i = 11; i < t.size(); ++i)
    if (!((t[i] >= '0' && t[i] <= '9') || t[i] == ':' || t[i] == '.')) return false;
  return t.size() > 11;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

SeriesSet read_plain(std::ifstream& in, const std::string& path, std::string first) {
  SeriesSet set;
  set.source = path;
  set.series.emplace_back();
  Series& s = set.series.back();
  int64_t line_no = 1;
  std::string line = std::move(first);
  do {
    const std::string t = trim(line);
    double v;
    BG_CHECK(parse_value(t, &v), "series", path, ":", line_no, ": '", t,
             "' is not a finite number (a plain series file holds one value a line)");
    s.ds.push_back(std::to_string(s.y.size()));
    s.y.push_back(v);
    ++line_no;
  } while (std::getline(in, line));
  return set;
}

}  // namespace

SeriesSet read_series(const std::string& path) {
  std::ifstream in(path);
  BG_CHECK(in.good(), "series", path, ": cannot open");
  std::string header;
  BG_CHECK(std::getline(in, header) && !trim(header).empty(), "series", path,
           ": the file is empty");
  if (header.rfind("\xEF\xBB\xBF", 0) == 0) header = header.substr(3);  // a UTF-8 byte-order mark
  const std::vector<std::string> names = csv_fields(trim(header));
  bool long_format = false;
  for (const std::string& n : names) long_format |= trim(n) == "unique_id";
  if (!long_format) return read_plain(in, path, header);
  int col_id = -1, col_ds = -1, col_y = -1;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string n = trim(names[i]);
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
  std::string line;
  int64_t line_no = 1;
  bool kind_known = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line).empty()) continue;
    const std::vector<std::string> f = csv_fields(trim(line));
    BG_CHECK(f.size() == names.size(), "series", path, ":", line_no, ": ", f.size(),
             " fields, the header has ", names.size());
    const std::string id = trim(f[size_t(col_id)]), ds = trim(f[size_t(col_ds)]),
                      ytext = trim(f[size_t(col_y)]);
    double y;
    BG_CHECK(parse_value(ytext, &y), "series", path, ":", line_no, ": y '", ytext,
             "' is missing or not a finite number (fill or drop the row)");
    int64_t step = 0;
    const StampKind kind = is_date(ds) ? StampKind::date : StampKind::step;
    BG_CHECK(kind == StampKind::date || parse_step(ds, &step), "series", path, ":", line_no,
             ": ds '", ds, "' is neither a date (YYYY-MM-DD) nor a whole-number step");
    BG_CHECK(!kind_known || kind == set.stamps, "series", path, ":", line_no, ": ds '", ds,
             "' mixes dates and steps");
    set.stamps = kind;
    kind_known = true;
    auto [it, added] = index.emplace(id, set.series.size());
    if (added) set.series.push_back({id, {}, {}});
    Series& s = set.series[it->second];
    if (!s.ds.empty()) {
      int64_t prev = 0;
      const bool after = kind == StampKind::date ? ds > s.ds.back()
                                                 : (parse_step(s.ds.back(), &prev), step > prev);
      BG_CHECK(after, "series", path, ":", line_no, ": ds ", ds, " of series '", id,
               "' is not after its previous row's ", s.ds.back(), " (sort each series by ds)");
    }
    s.ds.push_back(ds);
    s.y.push_back(y);
  }
  BG_CHECK(!set.series.empty(), "series", path, ": the file holds a header and no rows");
  return set;
}

void check_split(const SeriesSet& set, int64_t horizon, int64_t min_train) {
  for (const Series& s : set.series)
    BG_CHECK(train_length(int64_t(s.y.size()), horizon) >= min_train, "series", set.source,
             ": series '", s.id, "' has ", s.y.size(), " points; data.horizon ", horizon,
             " holds out ", 2 * horizon, " (validation and test), leaving fewer than ", min_train,
             " to train on");
}

double context_scale(const double* x, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::fabs(x[i]);
  const double scale = n > 0 ? sum / double(n) : 0.0;
  return std::isnormal(scale) ? scale : 1.0;
}

WindowScale window_scale(const double* x, int64_t n, SeriesScaling how) {
  WindowScale w;
  if (how == SeriesScaling::standard && n > 0) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += x[i];
    mean /= double(n);
    for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
    const double sd = std::sqrt(var / double(n));
    w.loc = mean;
    w.scale = std::isnormal(sd) ? sd : context_scale(x, n);
    return w;
  }
  w.scale = context_scale(x, n);
  return w;
}

WindowScale series_window(const Series& s, int64_t end, int64_t limit, const WindowSpec& spec,
                          std::vector<int64_t>& xs, std::vector<int64_t>& ys) {
  const int64_t context = spec.context, scale_len = spec.scale_len, lag = spec.lag;
  const int64_t first = std::max<int64_t>(0, end - context);
  const int64_t prefix_end = std::min(first + scale_len, end);
  const WindowScale ws = window_scale(s.y.data() + first, prefix_end - first, spec.scaling);
  const ValueCode& code = value_code(spec.values);
  const auto input = [&](int64_t t) {
    return t < 0 ? code.pad() : int64_t(code.pattern(ws.scaled(s.y[size_t(t)])));
  };
  for (int64_t t = end - context; t < end; ++t) {
    xs.push_back(input(t));
    if (lag > 0) xs.push_back(input(t + 1 - lag));
    const int64_t next = t + 1;
    ys.push_back(next < first + scale_len || next >= limit
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
  const int64_t context = spec.context, scale_len = spec.scale_len;
  // A window is its last target, a training point past the first scale_len: series i has
  // train_length - scale_len of them.
  std::vector<int64_t> cum;
  int64_t total = 0;
  for (const Series& s : set.series) {
    total += std::max<int64_t>(0, train_length(int64_t(s.y.size()), horizon) - scale_len);
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
    const WindowScale ws = series_window(
        s, last_target, train_length(int64_t(s.y.size()), horizon), spec, xs, ys);
    if (scales) scales->push_back(ws);
  }
  *x = from_vector(xs, series_input_shape(batch, context, spec.lag), device);
  *y = from_vector(ys, {batch, context}, device);
}

}  // namespace bg
