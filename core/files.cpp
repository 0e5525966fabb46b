#include "files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "error.h"

namespace bg {

void check_input_file(const std::string& path, const char* op, const char* what) {
  BG_CHECK(!path.empty(), op, "no ", what, " given (empty path)");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    fail(op, path, ": cannot open ", what, " (", std::strerror(errno), ")");
  BG_CHECK(!S_ISDIR(st.st_mode), op, path, ": is a directory, expected a ", what);
  BG_CHECK(::access(path.c_str(), R_OK) == 0, op, path, ": cannot read ", what, " (",
           std::strerror(errno), ")");
}

std::string read_file_limited(const std::string& path, const char* op, const char* what,
                              int64_t max_bytes) {
  check_input_file(path, op, what);
  std::ifstream f(path, std::ios::binary);
  BG_CHECK(f.good(), op, path, ": cannot open ", what);
  std::string text;
  char buf[1 << 16];
  while (f.read(buf, sizeof buf) || f.gcount() > 0) {
    text.append(buf, size_t(f.gcount()));
    BG_CHECK(int64_t(text.size()) <= max_bytes, op, path, ": ", what, " is larger than ", max_bytes,
             " bytes; refused");
  }
  BG_CHECK(!f.bad(), op, path, ": read failed");
  return text;
}

void check_output_dir(const std::string& dir, const char* op) {
  namespace fs = std::filesystem;
  const fs::path p(dir.empty() ? "." : dir);
  std::error_code ec;
  fs::create_directories(p, ec);
  BG_CHECK(!ec, op, dir, ": cannot create the output folder (", ec.message(), ")");
  BG_CHECK(fs::is_directory(p), op, dir, ": the output folder path is not a directory");
  const fs::path probe = p / ".bitgrad-write-test";
  FILE* f = std::fopen(probe.c_str(), "wb");
  const int err = errno;
  if (f) std::fclose(f);
  std::remove(probe.c_str());
  BG_CHECK(f != nullptr, op, dir, ": the output folder is not writable (", std::strerror(err), ")");
}

void write_atomically(const std::string& path, const char* op,
                      const std::function<void(const std::string&)>& write) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  BG_CHECK(!ec, op, target.parent_path().string(), ": cannot create folder (", ec.message(), ")");
  const std::string tmp = path + ".tmp";
  try {
    write(tmp);
    fs::rename(tmp, target, ec);
    BG_CHECK(!ec, op, path, ": cannot replace with ", tmp, " (", ec.message(), ")");
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  write_atomically(path, "io", [&](const std::string& tmp) {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    BG_CHECK(f.good(), "io", tmp, ": cannot open for writing");
    f.write(bytes.data(), std::streamsize(bytes.size()));
    f.flush();
    BG_CHECK(f.good(), "io", tmp, ": write failed (disk full?)");
  });
}

}  // namespace bg
