#include "csv.h"

#include <cmath>

#include "core/error.h"
#include "core/files.h"

namespace bg {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string trim_field(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && is_blank(s[a])) ++a;
  while (b > a && is_blank(s[b - 1])) --b;
  return s.substr(a, b - a);
}

}  // namespace

std::vector<std::string> csv_fields(std::string_view line, std::string_view path,
                                    int64_t line_no) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false, was_quoted = false;
  const auto finish = [&] {
    // A quoted field keeps its spaces; the blanks around its quotes are dropped.
    out.push_back(was_quoted ? field : trim_field(field));
    field.clear();
    was_quoted = false;
  };
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      if (!was_quoted) field = trim_field(field);  // blanks before the opening quote
      quoted = was_quoted = true;
    } else if (c == ',') {
      finish();
    } else if (!(was_quoted && is_blank(c))) {
      field += c;
    }
  }
  BG_CHECK(!quoted, "csv", path, line_no > 0 ? ":" + std::to_string(line_no) : std::string(),
           ": a quoted field is not closed (a line break inside quotes is not read)");
  finish();
  return out;
}

std::string csv_field(std::string_view text) {
  bool quote = !text.empty() && (is_blank(text.front()) || is_blank(text.back()));
  for (const char c : text) quote = quote || c == ',' || c == '"' || c == '\n' || c == '\r';
  if (!quote) return std::string(text);
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_number(double v) {
  BG_CHECK(std::isfinite(v), "csv", "a non-finite value (", v, ") has no CSV spelling");
  return shortest_text(v);
}

LineReader::LineReader(const std::string& path, const char* op, const char* what,
                       int64_t max_line)
    : path_(path), op_(op), max_line_(max_line) {
  check_input_file(path, op, what);
  in_.open(path, std::ios::binary);
  BG_CHECK(in_.good(), op, path, ": cannot open ", what);
}

bool LineReader::next(std::string* line) {
  line->clear();
  bool any = false;
  for (;;) {
    if (at_ == buf_.size()) {  // refill: 64 KiB at a time
      buf_.resize(1 << 16);
      in_.read(buf_.data(), std::streamsize(buf_.size()));
      buf_.resize(size_t(in_.gcount()));
      at_ = 0;
      BG_CHECK(!in_.bad(), op_, path_, ": read failed");
      if (buf_.empty()) break;
    }
    any = true;
    const size_t end = buf_.find('\n', at_);
    const size_t stop = end == std::string::npos ? buf_.size() : end;
    line->append(buf_, at_, stop - at_);
    at_ = end == std::string::npos ? buf_.size() : end + 1;
    if (int64_t(line->size()) > max_line_)
      fail(op_, path_, ":", line_no_ + 1, ": a line longer than ", max_line_,
           " bytes (not a text file?)");
    if (end != std::string::npos) break;
  }
  if (!any) return false;
  ++line_no_;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  if (line_no_ == 1 && line->rfind("\xEF\xBB\xBF", 0) == 0) line->erase(0, 3);
  return true;
}

std::string LineReader::where() const { return path_ + ":" + std::to_string(line_no_); }

}  // namespace bg
