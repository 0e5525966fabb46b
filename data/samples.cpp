#include "samples.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/files.h"
#include "core/strings.h"
#include "data/csv.h"

namespace bg {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::string detect_format(const SampleFileSpec& spec) {
  if (spec.format != "auto") return spec.format;
  auto ends = [&](const char* suf) { return ends_with(spec.path, suf); };
  if (ends(".h5") || ends(".hdf5")) return "hdf5";
  if (ends(".csv")) return "csv";
  return "text";
}

void accept(SampleSet& out, double v, const std::string& where, const std::string& token,
            const SampleFileSpec& spec, const std::function<std::string(double)>& check) {
  std::string why;
  if (std::isnan(v) || std::isinf(v)) why = "'" + token + "' is not a finite number";
  if (why.empty()) why = check(v);
  if (why.empty()) {
    out.values.push_back(v);
    return;
  }
  if (!spec.skip_invalid)
    fail("samples", where, ": ", why, " (set skip_invalid: true to skip such values)");
  if (out.skipped++ == 0) out.first_skip = where + ": " + why;
}

SampleSet read_text(const SampleFileSpec& spec, bool csv,
                    const std::function<std::string(double)>& check) {
  LineReader f(spec.path, "samples", "sample file");
  SampleSet out;
  std::string line;
  int64_t lineno = 0;
  int col = -1;
  char* end = nullptr;
  const long idx = std::strtol(spec.column.c_str(), &end, 10);
  if (csv && *end == '\0' && !spec.column.empty()) col = int(idx);
  bool header_done = !csv || col >= 0;
  while (f.next(&line)) {
    lineno = f.line_no();
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    std::string token = t;
    if (csv) {
      const std::vector<std::string> cells = csv_fields(t, f.path(), f.line_no());
      if (!header_done) {  // the column is named: find it in the header
        for (size_t i = 0; i < cells.size(); ++i)
          if (cells[i] == spec.column) col = int(i);
        BG_CHECK(col >= 0, "samples", spec.path, ":", lineno, ": no column named '", spec.column,
                 "' in the header");
        header_done = true;
        continue;
      }
      BG_CHECK(size_t(col) < cells.size(), "samples", spec.path, ":", lineno, ": no column ", col,
               " (line has ", cells.size(), ")");
      token = cells[size_t(col)];
    }
    char* e = nullptr;
    const double v = std::strtod(token.c_str(), &e);
    const std::string where = spec.path + ":" + std::to_string(lineno);
    if (e == token.c_str() || *e != '\0') {
      if (!spec.skip_invalid) fail("samples", where, ": '", token, "' is not a number");
      if (out.skipped++ == 0) out.first_skip = where + ": '" + token + "' is not a number";
      continue;
    }
    accept(out, v, where, token, spec, check);
  }
  return out;
}

SampleSet read_hdf5(const SampleFileSpec& spec, const std::function<std::string(double)>& check) {
  // The checkpoint reader's checks apply: the file's structure probed in a child process, the
  // dataset's storage inside the file, every value converted exactly.
  const CheckpointReader file(spec.path);
  BG_CHECK(file.has(spec.dataset), "samples", spec.path, ": no dataset '", spec.dataset, "'");
  const Tensor t = file.tensor(spec.dataset, DType::f64);
  BG_CHECK(t.ndim() == 1 || (t.ndim() == 2 && t.size(1) == 1), "samples", spec.path, ":",
           spec.dataset, ": expected a 1-D dataset, got rank ", t.ndim());
  const std::vector<double> v = t.to_vector<double>();
  SampleSet out;
  for (size_t i = 0; i < v.size(); ++i) {
    std::ostringstream token;
    token << v[i];
    accept(out, v[i], spec.path + ":" + spec.dataset + "[" + std::to_string(i) + "]", token.str(),
           spec, check);
  }
  return out;
}

}  // namespace

SampleSet read_samples(const SampleFileSpec& spec,
                       const std::function<std::string(double)>& check) {
  check_input_file(spec.path, "samples", "sample file");
  const std::string fmt = detect_format(spec);
  BG_CHECK(fmt == "text" || fmt == "csv" || fmt == "hdf5", "samples", spec.path,
           ": unknown format '", fmt, "' (text, csv, hdf5)");
  SampleSet out = fmt == "hdf5" ? read_hdf5(spec, check) : read_text(spec, fmt == "csv", check);
  BG_CHECK(!out.values.empty(), "samples", spec.path,
           out.skipped ? ": every value was invalid" : ": file has no samples");
  return out;
}

}  // namespace bg
