#include "files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
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

namespace {

// A name beside `path` that no file has: path + ".tmp-<pid>-<n>", created with O_EXCL.
int create_unique_beside(const std::string& path, std::string* name) {
  static std::atomic<uint64_t> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    *name = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    const int fd = ::open(name->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

// BITGRAD_FAIL_WRITE=N: the N-th write_file_atomic of this process fails with ENOSPC.
bool injected_write_failure() {
  static std::atomic<int64_t> calls{0};
  const char* env = std::getenv("BITGRAD_FAIL_WRITE");
  if (!env || !*env) return false;
  return ++calls == std::strtoll(env, nullptr, 10);
}

}  // namespace

void check_output_dir(const std::string& dir, const char* op) {
  namespace fs = std::filesystem;
  const fs::path p(dir.empty() ? "." : dir);
  std::error_code ec;
  fs::create_directories(p, ec);
  BG_CHECK(!ec, op, dir, ": cannot create the output folder (", ec.message(), ")");
  BG_CHECK(fs::is_directory(p), op, dir, ": the output folder path is not a directory");
  std::string probe;
  const int fd = create_unique_beside((p / ".bitgrad-write-probe").string(), &probe);
  const int err = errno;
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());  // the probe this call created, nothing else
  }
  BG_CHECK(fd >= 0, op, dir, ": the output folder is not writable (", std::strerror(err), ")");
}

void write_file_atomic(const std::string& path, std::string_view bytes, const char* op) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  BG_CHECK(!ec, op, target.parent_path().string(), ": cannot create folder (", ec.message(), ")");
  std::string tmp;
  const int fd = create_unique_beside(path, &tmp);
  BG_CHECK(fd >= 0, op, path, ": cannot create a file beside it (", std::strerror(errno), ")");
  int err = 0;
  if (injected_write_failure()) err = ENOSPC;
  for (size_t done = 0; err == 0 && done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      err = n < 0 ? errno : EIO;
    else
      done += size_t(n);
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());  // the temporary this call created; `path` is untouched
    fail(op, path, ": cannot write (", std::strerror(err), ")");
  }
}

void check_output_not_input(const std::string& output, const std::vector<std::string>& inputs,
                            const char* op, const char* what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path out_path = fs::weakly_canonical(fs::absolute(output, ec), ec);
  struct stat out_st;
  const bool out_exists = ::stat(output.c_str(), &out_st) == 0;
  for (const std::string& in : inputs) {
    if (in.empty()) continue;
    struct stat in_st;
    const bool same_inode = out_exists && ::stat(in.c_str(), &in_st) == 0 &&
                            in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino;
    std::error_code ec2;
    const bool same_path = fs::weakly_canonical(fs::absolute(in, ec2), ec2) == out_path;
    BG_CHECK(!same_inode && !same_path, op, what, " ", output, " is the input ", in,
             "; write to another file");
  }
}

}  // namespace bg
