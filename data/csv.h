// csv.h: the one CSV dialect bitgrad reads and writes: RFC 4180 fields on one line (a field may
// be double-quoted, with "" for a quote inside), a header line first, "\n" or "\r\n" line ends,
// an optional UTF-8 byte-order mark. Every CSV bitgrad writes goes through csv_field and
// csv_number, so it reads back through its own readers (csv_fields) and pandas' read_csv:
// a field holding a comma, a quote, a line break or edge spaces is quoted, and numbers are
// written in the fewest digits that read back to the same double. A non-finite number has no
// CSV spelling that both bitgrad's readers and every peer read back alike, so writers refuse it
// (csv_number's caller names the row).
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace bg {

// One line's fields, each trimmed of spaces, tabs and a trailing '\r' outside quotes. A quote
// left open is refused in one line naming "PATH:LINE" (PATH alone for line 0); the name is
// built only then, not for every line of a large file.
std::vector<std::string> csv_fields(std::string_view line, std::string_view path,
                                    int64_t line_no = 0);
// `text` as one CSV field: as it is, or quoted when it holds a comma, a quote, a line break, or
// begins or ends with a space or tab (which readers trim).
std::string csv_field(std::string_view text);
// A finite double in the fewest significant digits (at most 17) that read back to it exactly.
std::string csv_number(double v);

// A text file read one line at a time, as every line-based reader of bitgrad's reads it: the
// path checked first (core/files.h: a folder, a device or a missing file refused by name), the
// byte-order mark dropped, '\r' stripped, and a line longer than `max_line` bytes refused (a
// file of one endless line, such as a binary file given as data, is not read into memory whole).
class LineReader {
 public:
  LineReader(const std::string& path, const char* op, const char* what,
             int64_t max_line = int64_t(1) << 20);
  // The next line into *line (false at the end); line_no() is its 1-based number.
  bool next(std::string* line);
  int64_t line_no() const { return line_no_; }
  // "PATH:LINE" of the last line read.
  std::string where() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const char* op_;
  int64_t max_line_;
  std::ifstream in_;
  int64_t line_no_ = 0;
  std::string buf_;  // read ahead; at_ is the next unread byte
  size_t at_ = 0;
};

}  // namespace bg
