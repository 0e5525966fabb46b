// files.h: the one place bitgrad checks the files it reads and writes. Input paths are checked
// before anything is parsed, so a directory, a missing file or an unreadable one gets a
// one-line error naming the path; output folders are checked before work starts, so an
// unwritable one is reported before a long run, not at its first save. Every file bitgrad
// writes goes through write_file_atomic: the bytes go to a temporary of a unique name beside the
// target (created exclusively, so it is never a file that was there before), which is renamed
// over the target only when complete; a failure removes only that temporary. A symbolic link is
// written through (its target is the output; the link stays), and a FIFO or a character device
// (/dev/null, /dev/stdout's terminal) is written in place, never replaced.
// No command writes to a file it reads: with guard_inputs on (the CLI turns it on), every file
// checked by check_input_file is remembered with its role, and write_file_atomic and
// check_output_file refuse to write over one (same path, symlink, "..", or hard link).
#pragma once
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace bg {

// Throws "[op] PATH: <what is wrong>" unless `path` is a readable regular file or FIFO (a
// shell's <(...)): a folder, a device (/dev/zero would be read until memory runs out) or a
// socket is refused by kind. `what` names the role in the message ("config file").
void check_input_file(const std::string& path, const char* op, const char* what);
// The file's contents; refuses files larger than `max_bytes` without reading them.
std::string read_file_limited(const std::string& path, const char* op, const char* what,
                              int64_t max_bytes);
// Creates `dir` (and its parents) and proves it writable by creating and removing a probe file
// of a unique name (created exclusively: a user's file is never touched).
void check_output_dir(const std::string& dir, const char* op);

// A little-endian binary file from another tool (safetensors, llm.c's checkpoints), opened for
// reading at its start: checked by check_input_file, refused on a big-endian host, and sized
// (a pipe, which cannot be, is refused). *size receives its length in bytes.
std::ifstream open_binary_input(const std::string& path, const char* op, const char* what,
                                uint64_t* size);

// Whether this host stores integers little-endian (what the binary formats bitgrad reads from
// other tools assume: safetensors, llm.c's checkpoints).
bool host_is_little_endian();

// Writes `bytes` to `path` atomically (see above); parent folders are created first. A failed
// write names the path and the OS's reason ("No space left on device") and leaves `path` as it
// was. The environment variable BITGRAD_FAIL_WRITE=N makes the N-th call in this process fail
// as a full disk does (ENOSPC), for tests of every command's failure path.
void write_file_atomic(const std::string& path, std::string_view bytes, const char* op = "io");

// write_file_atomic's streaming form, for outputs too large to build in memory first: the bytes
// go to the temporary as they are written, commit() renames it over the target, and a writer
// destroyed before commit() (an error, Ctrl-C's unwinding) removes its temporary and leaves
// `path` as it was. A FIFO or character device is written in place, as above.
class AtomicFileWriter {
 public:
  AtomicFileWriter(const std::string& path, const char* op);
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();
  void write(std::string_view bytes);
  void commit();

 private:
  [[noreturn]] void abandon_and_fail(int err);
  std::string path_, real_, tmp_;
  const char* op_;
  int fd_ = -1;
  bool inject_ = false;  // BITGRAD_FAIL_WRITE chose this file
};

// Refuses `output` when it names the same file as any of `inputs`: the same path, or one that
// resolves to it (symbolic links, "..", hard links: the same device and inode). `what` names the
// output's role ("--out").
void check_output_not_input(const std::string& output, const std::vector<std::string>& inputs,
                            const char* op, const char* what);

// An output path checked before any work: not empty, not a folder or another kind of file that
// cannot be written whole (a block device, a socket), not a file this process has read (with
// guard_inputs on), and not one of `later_inputs` (files the command reads after this check:
// the data a run loads, the checkpoints a comparison opens).
void check_output_file(const std::string& output, const char* op, const char* what,
                       const std::vector<std::string>& later_inputs = {});

// Remembers every file check_input_file sees, with its role, so that no write replaces one. Off
// by default (a library or a test may rewrite a file it read); the bitgrad command turns it on.
void guard_inputs(bool on);
// Records `path` as read in the role `what` (check_input_file calls it).
void note_input(const std::string& path, const std::string& what);
// `path` is this command's own output that it read back (a resumed run's last.h5): writing it
// again is the point, not an accident.
void release_input(const std::string& path);
// The remembered input that `path` names, as "PATH (the ROLE)" ("" when none).
std::string input_role(const std::string& path);

}  // namespace bg
