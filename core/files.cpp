#include "files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "error.h"

namespace bg {

namespace {
namespace fs = std::filesystem;

// A file as the guard compares it: device and inode when it exists (hard links and symbolic
// links are then the same file), else the absolute path with "..", "." and links resolved.
struct FileId {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string canonical;
};

FileId identify(const std::string& path) {
  FileId id;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
  }
  std::error_code ec;
  id.canonical = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
  return id;
}

bool same_file(const FileId& a, const FileId& b) {
  if (a.exists && b.exists) return a.dev == b.dev && a.ino == b.ino;
  return a.canonical == b.canonical;
}

struct InputGuard {
  std::mutex mu;
  bool on = false;
  struct Input {
    FileId id;
    std::string path, role;
  };
  std::vector<Input> inputs;
};
InputGuard& input_guard() {
  static InputGuard guard;
  return guard;
}

// The file a path names once its symbolic links are followed (a dangling link: the file it
// would create). Writing goes there, so a link is never replaced by a regular file.
std::string follow_links(std::string path, const char* op) {
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
    std::error_code ec;
    const fs::path target = fs::read_symlink(path, ec);
    if (ec) return path;
    path = target.is_absolute() ? target.string()
                                : (fs::path(path).parent_path() / target).lexically_normal().string();
  }
  fail(op, path, ": too many levels of symbolic links");
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Refuses writing `path` (links followed) when it is a remembered input.
void refuse_input(const std::string& path, const std::string& real, const char* op,
                  const char* what) {
  const std::string role = input_role(real);
  BG_CHECK(role.empty(), op, what, what[0] ? " " : "", path, " is the input ", role,
           " this command reads; write to another file");
}

}  // namespace

void guard_inputs(bool on) {
  InputGuard& g = input_guard();
  std::lock_guard<std::mutex> lock(g.mu);
  g.on = on;
  if (!on) g.inputs.clear();
}

void note_input(const std::string& path, const std::string& what) {
  InputGuard& g = input_guard();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.on) return;
  struct stat st;
  // A FIFO or a device is read as a stream: writing to it cannot destroy stored data.
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  g.inputs.push_back({identify(path), path, what});
}

void release_input(const std::string& path) {
  InputGuard& g = input_guard();
  std::lock_guard<std::mutex> lock(g.mu);
  const FileId id = identify(path);
  g.inputs.erase(std::remove_if(g.inputs.begin(), g.inputs.end(),
                                [&](const InputGuard::Input& in) { return same_file(in.id, id); }),
                 g.inputs.end());
}

std::string input_role(const std::string& path) {
  InputGuard& g = input_guard();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.inputs.empty()) return "";
  const FileId id = identify(path);
  for (const InputGuard::Input& in : g.inputs)
    if (same_file(in.id, id)) return in.path + " (the " + in.role + ")";
  return "";
}

void check_input_file(const std::string& path, const char* op, const char* what) {
  BG_CHECK(!path.empty(), op, "no ", what, " given (empty path)");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    fail(op, path, ": cannot open ", what, " (", std::strerror(errno), ")");
  BG_CHECK(!S_ISDIR(st.st_mode), op, path, ": is a directory, expected a ", what);
  // A device (/dev/zero, /dev/urandom, a terminal) or a socket is not data: one would be read
  // until memory runs out. A FIFO (a shell's <(...)) is a stream of the file's bytes: allowed.
  BG_CHECK(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode), op, path, ": is ",
           S_ISCHR(st.st_mode) ? "a character device" : file_kind(st.st_mode),
           ", expected a ", what, " (a regular file)");
  BG_CHECK(::access(path.c_str(), R_OK) == 0, op, path, ": cannot read ", what, " (",
           std::strerror(errno), ")");
  note_input(path, what);
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

// The temporaries of `path` ("NAME.tmp-<pid>-<n>", regular files) whose process is gone: a
// save killed half-way leaves one, and the next save of the same file removes it. A live
// process's temporary (or one of a process this one may not signal) is left alone.
void remove_stale_temporaries(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string prefix = p.filename().string() + ".tmp-";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || dash + 1 == rest.size() || dash > 9 ||
        rest.find_first_not_of("0123456789-") != std::string::npos ||
        rest.find('-', dash + 1) != std::string::npos)
      continue;
    const pid_t pid = pid_t(std::stol(rest.substr(0, dash)));
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    struct stat st;
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(it->path().c_str());
  }
}

// BITGRAD_FAIL_WRITE=N: the N-th write_file_atomic of this process fails with ENOSPC.
bool injected_write_failure() {
  static std::atomic<int64_t> calls{0};
  const char* env = std::getenv("BITGRAD_FAIL_WRITE");
  if (!env || !*env) return false;
  return ++calls == std::strtoll(env, nullptr, 10);
}

// Writes all of `bytes` to `fd`; 0 or the errno of the failure.
int write_all(int fd, std::string_view bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += size_t(n);
  }
  return 0;
}

}  // namespace

void check_output_dir(const std::string& dir, const char* op) {
  const fs::path p(dir.empty() ? "." : dir);
  std::error_code ec;
  fs::create_directories(p, ec);
  BG_CHECK(!ec, op, dir, ": cannot create the output folder (", ec.message(), ")");
  BG_CHECK(fs::is_directory(p), op, dir, ": the output folder path is not a directory");
  std::string probe;
  remove_stale_temporaries((p / ".bitgrad-write-probe").string());  // a probe killed half-way
  const int fd = create_unique_beside((p / ".bitgrad-write-probe").string(), &probe);
  const int err = errno;
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());  // the probe this call created, nothing else
  }
  BG_CHECK(fd >= 0, op, dir, ": the output folder is not writable (", std::strerror(err), ")");
}

AtomicFileWriter::AtomicFileWriter(const std::string& path, const char* op)
    : path_(path), op_(op) {
  BG_CHECK(!path.empty(), op, "no output file given (empty path)");
  const std::string real = follow_links(path, op);
  refuse_input(path, real, op, "");
  inject_ = injected_write_failure();
  struct stat st;
  if (::stat(real.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A FIFO or a character device takes the bytes in place: replacing it with a regular file
    // would destroy it (as root, /dev/null itself). A FIFO nobody reads is refused, not waited on.
    BG_CHECK(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode), op, path, ": is ",
             file_kind(st.st_mode), "; refused (write to a regular file)");
    const bool fifo = S_ISFIFO(st.st_mode);
    fd_ = ::open(real.c_str(), O_WRONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
    if (fd_ < 0 && fifo && errno == ENXIO)
      fail(op, path, ": a FIFO that no process reads; start its reader first");
    BG_CHECK(fd_ >= 0, op, path, ": cannot open for writing (", std::strerror(errno), ")");
    if (fifo) ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    return;
  }
  const fs::path target(real);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  BG_CHECK(!ec, op, target.parent_path().string(), ": cannot create folder (", ec.message(), ")");
  remove_stale_temporaries(real);
  fd_ = create_unique_beside(real, &tmp_);
  BG_CHECK(fd_ >= 0, op, path, ": cannot create a file beside it (", std::strerror(errno), ")");
  real_ = real;
}

void AtomicFileWriter::write(std::string_view bytes) {
  BG_CHECK(fd_ >= 0, op_, path_, ": written after it was closed");
  const int err = inject_ ? ENOSPC : write_all(fd_, bytes);
  if (err != 0) abandon_and_fail(err);
}

void AtomicFileWriter::commit() {
  BG_CHECK(fd_ >= 0, op_, path_, ": committed twice");
  int err = inject_ ? ENOSPC : 0;
  if (::close(fd_) != 0 && err == 0) err = errno;
  fd_ = -1;
  if (err == 0 && !tmp_.empty() && ::rename(tmp_.c_str(), real_.c_str()) != 0) err = errno;
  if (err != 0) abandon_and_fail(err);
  tmp_.clear();
}

void AtomicFileWriter::abandon_and_fail(int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());  // the temporary this writer created
  tmp_.clear();
  fail(op_, path_, ": cannot write (", std::strerror(err), ")");
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());  // never committed: `path` is untouched
}

void write_file_atomic(const std::string& path, std::string_view bytes, const char* op) {
  AtomicFileWriter out(path, op);
  out.write(bytes);
  out.commit();
}

void check_output_file(const std::string& output, const char* op, const char* what,
                       const std::vector<std::string>& later_inputs) {
  BG_CHECK(!output.empty(), op, what, ": empty path; name a file to write");
  const std::string real = follow_links(output, op);
  struct stat st;
  if (::stat(real.c_str(), &st) == 0) {
    BG_CHECK(!S_ISDIR(st.st_mode), op, what, " ", output, ": is a folder; name a file in it");
    BG_CHECK(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode), op, what, " ",
             output, ": is ", file_kind(st.st_mode), "; refused (write to a regular file)");
    if (!S_ISREG(st.st_mode)) return;  // written in place: nothing stored is replaced
  }
  refuse_input(output, real, op, what);
  check_output_not_input(output, later_inputs, op, what);
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

bool host_is_little_endian() {
  const uint16_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

std::ifstream open_binary_input(const std::string& path, const char* op, const char* what,
                                uint64_t* size) {
  BG_CHECK(host_is_little_endian(), op, "this host is big-endian; ", what,
           "s are little-endian");
  check_input_file(path, op, what);
  std::ifstream f(path, std::ios::binary);
  BG_CHECK(f.good(), op, path, ": cannot open");
  f.seekg(0, std::ios::end);
  const std::streamoff end = f.tellg();
  BG_CHECK(end >= 0, op, path, ": cannot tell its size (a pipe?)");
  f.seekg(0);
  *size = uint64_t(end);
  return f;
}

}  // namespace bg
