// files.h: the one place bitgrad checks the files it reads and writes. Input paths are checked
// before anything is parsed, so a directory, a missing file or an unreadable one gets a
// one-line error naming the path; output folders are checked before work starts, so an
// unwritable one is reported before a long run, not at its first save; atomic writes go to
// PATH.tmp and are renamed over PATH, and a failed write removes the .tmp it made.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace bg {

// Throws "[op] PATH: <what is wrong>" unless `path` is a readable regular file (or a readable
// non-directory such as a pipe). `what` names the role in the message ("config file").
void check_input_file(const std::string& path, const char* op, const char* what);
// The file's contents; refuses files larger than `max_bytes` without reading them.
std::string read_file_limited(const std::string& path, const char* op, const char* what,
                              int64_t max_bytes);
// Creates `dir` (and its parents) and proves it writable by creating and removing a probe file.
void check_output_dir(const std::string& dir, const char* op);

// Runs write(tmp_path) and renames tmp_path over `path`; any failure (a throw from write, a
// failed rename) removes tmp_path and rethrows. Parent folders are created first.
void write_atomically(const std::string& path, const char* op,
                      const std::function<void(const std::string& tmp_path)>& write);
// write_atomically with a plain byte string.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace bg
