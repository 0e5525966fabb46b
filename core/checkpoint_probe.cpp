// checkpoint_probe.cpp: the forked probe of a checkpoint's structure (core/checkpoint.h's
// CheckpointReader runs it before anything else is read).
#include <hdf5.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "checkpoint_hdf5.h"

namespace bg::h5 {
namespace {


// In a child process, opens the file and reads every piece of metadata the loader can touch:
// every object, every attribute (variable-length strings and sequences included) and every
// variable-length dataset. HDF5 trusts a file's internal addresses, so a crafted file can crash
// it inside such a read (a global-heap ID, say); the child takes that crash, and the parent
// refuses the file in one line instead of dying. Fixed-size dataset reads are left to the parent,
// which checks their storage against the file first (check_storage).
// The probed file's length: no attribute or dataset can hold more than that, so a larger claim
// is not read (the parent refuses it, or never reads it).
long double g_probe_file_bytes = 0;

bool fits_file(hssize_t n, size_t element) {
  return n > 0 && (long double)n * (long double)element <= g_probe_file_bytes;
}

constexpr int kProbeOutOfMemory = 3;  // the probe's exit status when an allocation failed
constexpr int kProbeUnreadable = 4;   // ... when a piece of the structure could not be read

// A piece of structure that a sound file always yields (an attribute its list names, an object
// the walk reaches, a string's heap entry) failed to read: the parent's own read of it could
// fail, or read garbage and crash (HDF5 does not check every heap address), so the file is
// refused as a whole.
[[noreturn]] void unreadable() { ::_exit(kProbeUnreadable); }

extern "C" herr_t probe_attribute(hid_t loc, const char* name, const H5A_info_t*, void*) {
  const hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  if (a < 0) unreadable();
  const hid_t type = H5Aget_type(a), space = H5Aget_space(a);
  if (type < 0 || space < 0) unreadable();
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  const bool variable =
      type >= 0 && (H5Tis_variable_str(type) > 0 || H5Tdetect_class(type, H5T_VLEN) > 0);
  if (type >= 0 && fits_file(n, variable ? 16 : H5Tget_size(type))) {
    if (variable) {
      std::vector<unsigned char> buf(size_t(n) * std::max<size_t>(H5Tget_size(type), 16));
      if (H5Aread(a, type, buf.data()) < 0) unreadable();
      H5Dvlen_reclaim(type, space, H5P_DEFAULT, buf.data());
    } else {
      std::vector<unsigned char> buf(size_t(n) * H5Tget_size(type));
      if (H5Aread(a, type, buf.data()) < 0) unreadable();
    }
  }
  H5Sclose(space);
  H5Tclose(type);
  H5Aclose(a);
  return 0;
}

extern "C" herr_t probe_object(hid_t root, const char* name, const H5O_info_t* info, void*) {
  const hid_t obj = H5Oopen(root, name, H5P_DEFAULT);
  if (obj < 0) unreadable();
  hsize_t idx = 0;
  if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, probe_attribute, nullptr) < 0)
    unreadable();
  if (info->type == H5O_TYPE_DATASET) {
    const hid_t type = H5Dget_type(obj), space = H5Dget_space(obj), dcpl = H5Dget_create_plist(obj);
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    H5Pget_layout(dcpl);
    if (type >= 0 && fits_file(n, 16) &&
        (H5Tis_variable_str(type) > 0 || H5Tdetect_class(type, H5T_VLEN) > 0)) {
      std::vector<unsigned char> buf(size_t(n) * std::max<size_t>(H5Tget_size(type), 16));
      if (H5Dread(obj, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0) unreadable();
      H5Dvlen_reclaim(type, space, H5P_DEFAULT, buf.data());
    }
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Tclose(type);
  }
  H5Oclose(obj);
  return 0;
}

// The probe's bounds, from the file's size: its structure is at most the file, so reading it may
// take a few seconds and a few times the file in memory, however the bytes were changed. CPU
// time, not wall time, so a machine busy with other work never fails a good file; an alarm
// stays as the bound on waiting (a file on a stalled network mount).
void limit_probe(long long file_bytes) {
  const rlim_t cpu_s = rlim_t(2 + file_bytes / (20ll << 20));
  const rlimit cpu{cpu_s, cpu_s + 2};
  ::setrlimit(RLIMIT_CPU, &cpu);
  // Address space beyond what the process already maps (its libraries, a CUDA context): the
  // current size from /proc plus a budget.
  long long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%lld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  if (pages > 0) {
    const rlim_t bytes =
        rlim_t(pages) * rlim_t(::sysconf(_SC_PAGESIZE)) + (rlim_t(256) << 20) + 8 * rlim_t(file_bytes);
    const rlimit as{bytes, bytes};
    ::setrlimit(RLIMIT_AS, &as);
  }
  ::alarm(unsigned(600 + cpu_s));
}

// In the probe, an HDF5 call that failed because an allocation did (the address-space bound)
// ends the probe: the parent would make the same allocation, unbounded, when it reads the file.
extern "C" herr_t allocation_failed(unsigned, const H5E_error2_t* e, void*) {
  if (e->min_num == H5E_CANTALLOC || e->min_num == H5E_NOSPACE) ::_exit(kProbeOutOfMemory);
  return 0;
}
extern "C" herr_t on_probe_error(hid_t stack, void*) {
  H5Ewalk2(stack, H5E_WALK_DOWNWARD, allocation_failed, nullptr);
  return 0;
}

}  // namespace

// "" when the probe process finished; else what stopped it.
std::string probe_in_child(const std::string& path, long long file_bytes) {
  g_probe_file_bytes = (long double)file_bytes;
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return "";  // no process to spare: read it directly, as before
  if (pid == 0) {
    limit_probe(file_bytes);
    std::set_new_handler([] { ::_exit(kProbeOutOfMemory); });
    H5Eset_auto2(H5E_DEFAULT, on_probe_error, nullptr);
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f >= 0) {  // (a file HDF5 cannot open at all is the parent's to report)
      H5O_info_t info;
      if (H5Oget_info2(f, &info, H5O_INFO_BASIC) < 0) unreadable();
      probe_object(f, ".", &info, nullptr);
      if (H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, probe_object, nullptr, H5O_INFO_BASIC) < 0)
        unreadable();
      H5Fclose(f);
    }
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == kProbeUnreadable)
    return "a piece of its structure cannot be read";
  if (WIFEXITED(status) && WEXITSTATUS(status) == kProbeOutOfMemory)
    return str_cat("reading its structure takes more memory than ", file_bytes,
                   " bytes of file can describe");
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return sig == SIGALRM || sig == SIGXCPU || sig == SIGKILL
               ? "reading its structure does not finish"
               : "its structure crashes the HDF5 library";
  }
  return "";
}


}  // namespace bg::h5
