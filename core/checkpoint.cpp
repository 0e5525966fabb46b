#include "checkpoint.h"

#include <hdf5.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <set>
#include <sstream>
#include <tuple>

#include "files.h"

namespace bg {
namespace {

hid_t h5_type(DType t) {
  switch (t) {
    case DType::f64:
      return H5T_NATIVE_DOUBLE;
    case DType::i64:
      return H5T_NATIVE_INT64;
    case DType::i32:
      return H5T_NATIVE_INT32;
    case DType::u8:
      return H5T_NATIVE_UINT8;
    default:
      return H5T_NATIVE_FLOAT;
  }
}

DType stored_dtype(DType t) {
  if (t == DType::f64 || t == DType::i64 || t == DType::i32 || t == DType::u8) return t;
  return DType::f32;  // f16/bf16 and small ints are widened
}

// One HDF5 handle, closed by the function that matches its kind.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + size_t(len) > s.size()) return false;
    for (int k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + size_t(k)]) & 0xC0) != 0x80) return false;
    i += size_t(len);
  }
  return true;
}

// h5py's default for str: variable-length UTF-8. Text that is not UTF-8 or holds NUL bytes (a
// character vocabulary of arbitrary bytes) is stored fixed-length and NUL-padded instead, which
// h5py reads as bytes.
bool write_str_attr(hid_t loc, const std::string& name, const std::string& value) {
  const bool plain = value.find('\0') == std::string::npos && valid_utf8(value);
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  if (plain) {
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
  } else {
    H5Tset_size(type.get(), value.empty() ? 1 : value.size());
    H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  }
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(loc, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
           H5Aclose);
  if (!a.ok()) return false;
  if (plain) {
    const char* p = value.c_str();
    return H5Awrite(a.get(), type.get(), &p) >= 0;
  }
  std::string padded = value.empty() ? std::string(1, '\0') : value;
  return H5Awrite(a.get(), type.get(), padded.data()) >= 0;
}

template <typename T>
bool write_scalar_attr(hid_t loc, const std::string& name, hid_t type, T value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(loc, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  return a.ok() && H5Awrite(a.get(), type, &value) >= 0;
}

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER:
      return "an integer";
    case H5T_FLOAT:
      return "a float";
    case H5T_STRING:
      return "a string";
    case H5T_ENUM:
      return "an enum (a bool?)";
    case H5T_ARRAY:
      return "an array";
    case H5T_COMPOUND:
      return "a compound";
    default:
      return "of another HDF5 type";
  }
}

// The name of a numeric datatype HDF5 converts exactly ("f32le", "i64be", "u8le"), or "" for a
// float or integer that is not standard: a changed exponent bias, field position, bit offset or
// precision, which HDF5 would convert into other numbers (zeros, NaN) without complaint.
std::string exact_numeric_type(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  const H5T_order_t order = H5Tget_order(type);
  if (order != H5T_ORDER_LE && order != H5T_ORDER_BE && !(size == 1 && order == H5T_ORDER_NONE))
    return "";
  if (H5Tget_offset(type) != 0 || H5Tget_precision(type) != 8 * size) return "";
  H5T_pad_t lsb = H5T_PAD_ERROR, msb = H5T_PAD_ERROR;
  if (H5Tget_pad(type, &lsb, &msb) < 0 || lsb != H5T_PAD_ZERO || msb != H5T_PAD_ZERO) return "";
  const std::string end = order == H5T_ORDER_BE ? "be" : "le", bits = std::to_string(8 * size);
  if (cls == H5T_INTEGER) {
    const H5T_sign_t sign = H5Tget_sign(type);
    const bool width = size == 1 || size == 2 || size == 4 || size == 8;
    if (!width || (sign != H5T_SGN_NONE && sign != H5T_SGN_2)) return "";
    return (sign == H5T_SGN_NONE ? "u" : "i") + bits + end;
  }
  if (cls != H5T_FLOAT) return "";
  size_t f[5] = {};  // sign position, exponent position and size, mantissa position and size
  if (H5Tget_fields(type, &f[0], &f[1], &f[2], &f[3], &f[4]) < 0) return "";
  struct Ieee {
    size_t size, f[5], ebias;
  };
  static constexpr Ieee kIeee[] = {
      {2, {15, 10, 5, 0, 10}, 15}, {4, {31, 23, 8, 0, 23}, 127}, {8, {63, 52, 11, 0, 52}, 1023}};
  for (const Ieee& ieee : kIeee)
    if (size == ieee.size && std::equal(f, f + 5, ieee.f) && H5Tget_ebias(type) == ieee.ebias &&
        H5Tget_norm(type) == H5T_NORM_IMPLIED && H5Tget_inpad(type) == H5T_PAD_ZERO)
      return "f" + bits + end;
  return "";
}

// Refuses a float or integer datatype that is not exact (above), naming it.
void check_exact_numeric(hid_t type, const std::string& path, const std::string& what) {
  if (!exact_numeric_type(type).empty()) return;
  size_t f[5] = {};
  const bool is_float = H5Tget_class(type) == H5T_FLOAT;
  if (is_float) H5Tget_fields(type, &f[0], &f[1], &f[2], &f[3], &f[4]);
  fail("checkpoint", path, ": ", what, " is stored as a non-standard ",
       is_float ? "float" : "integer", " (", H5Tget_size(type), " bytes, precision ",
       H5Tget_precision(type), " at bit ", H5Tget_offset(type),
       is_float ? str_cat(", exponent bias ", H5Tget_ebias(type), " in bits ", f[1], "..",
                          f[1] + f[2] - 1)
                : std::string(),
       "); bitgrad reads IEEE floats and whole-byte integers only");
}

}  // namespace

CheckpointWriter::CheckpointWriter(std::string path) : path_(std::move(path)) {}

void CheckpointWriter::tensor(const std::string& name, const Tensor& t) {
  tensors_.emplace_back(name, t);
}
void CheckpointWriter::attr(const std::string& name, const std::string& value) {
  str_attrs_[name] = value;
}
void CheckpointWriter::attr(const std::string& name, int64_t value) { int_attrs_[name] = value; }
void CheckpointWriter::attr(const std::string& name, double value) { float_attrs_[name] = value; }

void CheckpointWriter::commit() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  // The file is built in memory (HDF5's core driver, no backing store) and written by
  // write_file_atomic: HDF5 itself never writes to disk, so a full disk is one error of ours with
  // the OS's reason, every HDF5 handle is closed on every path, and nothing is left behind.
  std::vector<uint8_t> image;
  {
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    BG_CHECK(fapl.ok() && H5Pset_fapl_core(fapl.get(), 1 << 20, 0) >= 0, "checkpoint", path_,
             ": cannot set up an in-memory HDF5 file");
    Handle file(H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
    BG_CHECK(file.ok(), "checkpoint", path_, ": cannot create an in-memory HDF5 file");
    Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);  // "optimizer/exp_avg" makes the group
    // No modification times in the file: the same state gives the same bytes.
    Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    H5Pset_obj_track_times(dcpl.get(), 0);
    for (const auto& [name, t] : tensors_) {
      const DType dt = stored_dtype(t.dtype());
      const Tensor host = t.detach().to(Device::cpu(), dt).contiguous();
      std::vector<hsize_t> dims(host.shape().begin(), host.shape().end());
      Handle space(dims.empty() ? H5Screate(H5S_SCALAR)
                                : H5Screate_simple(int(dims.size()), dims.data(), nullptr),
                   H5Sclose);
      Handle ds(H5Dcreate2(file.get(), name.c_str(), h5_type(dt), space.get(), lcpl.get(),
                           dcpl.get(), H5P_DEFAULT),
                H5Dclose);
      BG_CHECK(ds.ok() && H5Dwrite(ds.get(), h5_type(dt), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                   host.data_ptr()) >= 0,
               "checkpoint", path_, ": cannot write tensor '", name, "' (out of memory?)");
    }
    Handle root(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose);
    for (const auto& [k, v] : str_attrs_)
      BG_CHECK(write_str_attr(root.get(), k, v), "checkpoint", path_, ": cannot write attribute '",
               k, "'");
    for (const auto& [k, v] : int_attrs_)
      BG_CHECK(write_scalar_attr(root.get(), k, H5T_NATIVE_INT64, v), "checkpoint", path_,
               ": cannot write attribute '", k, "'");
    for (const auto& [k, v] : float_attrs_)
      BG_CHECK(write_scalar_attr(root.get(), k, H5T_NATIVE_DOUBLE, v), "checkpoint", path_,
               ": cannot write attribute '", k, "'");
    BG_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL) >= 0, "checkpoint", path_,
             ": cannot finish the in-memory HDF5 file");
    const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
    BG_CHECK(size > 0, "checkpoint", path_, ": cannot take the in-memory HDF5 file's image");
    image.resize(size_t(size));
    BG_CHECK(H5Fget_file_image(file.get(), image.data(), image.size()) == size, "checkpoint", path_,
             ": cannot take the in-memory HDF5 file's image");
  }
  write_file_atomic(path_,
                    std::string_view(reinterpret_cast<const char*>(image.data()), image.size()),
                    "checkpoint");
}

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

}  // namespace

CheckpointReader::CheckpointReader(const std::string& path) : path_(path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  check_input_file(path, "checkpoint", "checkpoint");
  std::error_code ec;
  file_bytes_ = (long long)std::filesystem::file_size(path, ec);
  BG_CHECK(!ec, "checkpoint", path, ": cannot read its size (", ec.message(), ")");
  // A file this process has probed already (same device, inode, size and time) is not probed
  // again: sample opens a checkpoint twice.
  static std::set<std::tuple<dev_t, ino_t, off_t, time_t, long>> probed;
  struct stat st {};
  const bool known = ::stat(path.c_str(), &st) == 0;
  const auto key = std::make_tuple(st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                                   st.st_mtim.tv_nsec);
  if (!known || !probed.count(key)) {
    const std::string broken = probe_in_child(path, file_bytes_);
    BG_CHECK(broken.empty(), "checkpoint", path, ": corrupt HDF5 file (", broken, "); refused");
    if (known) probed.insert(key);
  }
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  BG_CHECK(file_ >= 0, "checkpoint", path, ": not a readable HDF5 file (truncated or corrupt?)");
}

CheckpointReader::~CheckpointReader() {
  if (file_ >= 0) H5Fclose(hid_t(file_));
}

bool CheckpointReader::has(const std::string& name) const {
  // H5Lexists needs every intermediate group to exist: check the path one link at a time.
  std::string prefix;
  size_t start = 0;
  while (true) {
    const size_t slash = name.find('/', start);
    prefix = name.substr(0, slash);
    if (H5Lexists(hid_t(file_), prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

bool CheckpointReader::has_attr(const std::string& name) const {
  return H5Aexists(hid_t(file_), name.c_str()) > 0;
}

namespace {
extern "C" herr_t collect_dataset(hid_t group, const char* name, const H5L_info_t*, void* out) {
  const hid_t obj = H5Oopen(group, name, H5P_DEFAULT);
  if (obj < 0) return 0;
  if (H5Iget_type(obj) == H5I_DATASET) static_cast<std::vector<std::string>*>(out)->push_back(name);
  H5Oclose(obj);
  return 0;
}
}  // namespace

std::vector<std::string> CheckpointReader::datasets() const {
  std::vector<std::string> names;
  H5Lvisit(hid_t(file_), H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &names);
  return names;
}

void CheckpointReader::check_storage(long long dataset, const std::string& name) const {
  const hid_t ds = hid_t(dataset);
  Handle dcpl(H5Dget_create_plist(ds), H5Pclose);
  BG_CHECK(dcpl.ok(), "checkpoint", path_, ": dataset '", name, "' has no readable properties");
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  BG_CHECK(layout == H5D_CONTIGUOUS || layout == H5D_COMPACT, "checkpoint", path_, ": dataset '",
           name, "' is ",
           layout == H5D_CHUNKED   ? "chunked"
           : layout == H5D_VIRTUAL ? "virtual"
                                   : "of an unknown layout",
           "; bitgrad reads contiguous or compact datasets (as it writes them)");
  BG_CHECK(H5Pget_nfilters(dcpl.get()) == 0, "checkpoint", path_, ": dataset '", name,
           "' is stored through filters (compression?); bitgrad reads unfiltered datasets");
  BG_CHECK(H5Pget_external_count(dcpl.get()) == 0, "checkpoint", path_, ": dataset '", name,
           "' keeps its data in external files; refused");
  Handle space(H5Dget_space(ds), H5Sclose);
  Handle type(H5Dget_type(ds), H5Tclose);
  const hssize_t n = space.ok() ? H5Sget_simple_extent_npoints(space.get()) : -1;
  const size_t element = type.ok() ? H5Tget_size(type.get()) : 0;
  BG_CHECK(n >= 0 && element > 0, "checkpoint", path_, ": dataset '", name,
           "' has no readable shape or type");
  // Variable-length elements live in the file's heap: each element's stored descriptor is
  // 16 bytes (length and heap address), whatever the memory type's size.
  const bool variable =
      H5Tdetect_class(type.get(), H5T_VLEN) > 0 || H5Tis_variable_str(type.get()) > 0;
  const long double expected = (long double)n * (variable ? 16 : element);
  BG_CHECK(expected <= (long double)file_bytes_, "checkpoint", path_, ": dataset '", name,
           "' claims ", (long long)n, " elements of ", element, " bytes, more than the file's ",
           file_bytes_, " bytes");
  if (n == 0) return;
  // (A variable-length element's descriptor size depends on the file's address size: only the
  // file's length bounds it.)
  const hsize_t stored = H5Dget_storage_size(ds);
  BG_CHECK(variable ? stored <= hsize_t(file_bytes_) : (long double)stored == expected,
           "checkpoint", path_, ": dataset '", name, "' stores ", (unsigned long long)stored,
           " bytes, but its shape and type need ", (unsigned long long)expected);
  if (layout == H5D_CONTIGUOUS) {
    const haddr_t offset = H5Dget_offset(ds);
    BG_CHECK(offset != HADDR_UNDEF && (long double)offset + stored <= (long double)file_bytes_,
             "checkpoint", path_, ": dataset '", name, "' points past the end of the file");
  }
}

std::vector<uint8_t> CheckpointReader::raw_bytes(const std::string& name) const {
  Handle ds(H5Dopen2(hid_t(file_), name.c_str(), H5P_DEFAULT), H5Dclose);
  BG_CHECK(ds.ok(), "checkpoint", path_, ": '", name, "' is not a dataset");
  check_storage(ds.get(), name);
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  BG_CHECK(H5Tis_variable_str(type.get()) <= 0, "checkpoint", path_, ": '", name,
           "' holds variable-length strings");
  BG_CHECK(H5Tget_class(type.get()) != H5T_REFERENCE, "checkpoint", path_, ": '", name,
           "' holds references");
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls == H5T_INTEGER || cls == H5T_FLOAT)
    check_exact_numeric(type.get(), path_, str_cat("dataset '", name, "'"));
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (H5Tget_class(type.get()) == H5T_VLEN) {
    // The values, not the pointers to them: each element's length, then its bytes.
    Handle base(H5Tget_super(type.get()), H5Tclose);
    BG_CHECK(base.ok() && H5Tdetect_class(base.get(), H5T_VLEN) <= 0 &&
                 H5Tis_variable_str(base.get()) <= 0,
             "checkpoint", path_, ": '", name, "' holds nested variable-length data");
    const H5T_class_t base_cls = H5Tget_class(base.get());
    if (base_cls == H5T_INTEGER || base_cls == H5T_FLOAT)
      check_exact_numeric(base.get(), path_, str_cat("dataset '", name, "'"));
    const size_t element = H5Tget_size(base.get());
    std::vector<hvl_t> vl(static_cast<size_t>(n));
    BG_CHECK(n == 0 || H5Dread(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, vl.data()) >= 0,
             "checkpoint", path_, ": cannot read '", name, "'");
    std::vector<uint8_t> bytes;
    for (const hvl_t& v : vl) {
      const uint64_t len = v.len;
      bytes.insert(bytes.end(), reinterpret_cast<const uint8_t*>(&len),
                   reinterpret_cast<const uint8_t*>(&len) + 8);
      const uint8_t* p = static_cast<const uint8_t*>(v.p);
      if (p) bytes.insert(bytes.end(), p, p + v.len * element);
    }
    if (n > 0) H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, vl.data());
    return bytes;
  }
  std::vector<uint8_t> bytes(size_t(n) * H5Tget_size(type.get()));
  BG_CHECK(bytes.empty() ||
               H5Dread(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) >= 0,
           "checkpoint", path_, ": cannot read '", name, "'");
  return bytes;
}

std::string CheckpointReader::type_text(const std::string& name) const {
  Handle ds(H5Dopen2(hid_t(file_), name.c_str(), H5P_DEFAULT), H5Dclose);
  BG_CHECK(ds.ok(), "checkpoint", path_, ": '", name, "' is not a dataset");
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls == H5T_INTEGER || cls == H5T_FLOAT) {
    check_exact_numeric(type.get(), path_, str_cat("dataset '", name, "'"));
    return exact_numeric_type(type.get());
  }
  if (cls == H5T_VLEN) {
    Handle base(H5Tget_super(type.get()), H5Tclose);
    const std::string inner = base.ok() ? exact_numeric_type(base.get()) : "";
    return "vlen " + (inner.empty() ? std::string(class_name(H5Tget_class(base.get()))) : inner);
  }
  return str_cat(class_name(cls), " of ", H5Tget_size(type.get()), " bytes");
}

Shape CheckpointReader::shape(const std::string& name) const {
  Handle ds(H5Dopen2(hid_t(file_), name.c_str(), H5P_DEFAULT), H5Dclose);
  BG_CHECK(ds.ok(), "checkpoint", path_, ": '", name, "' is not a dataset");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  BG_CHECK(rank >= 0 && rank <= 8, "checkpoint", path_, ": '", name, "' has no readable shape");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return Shape(dims.begin(), dims.end());
}

namespace {
// The value as text for a message.
template <typename T>
std::string value_text(T v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}
}  // namespace

Tensor CheckpointReader::tensor(const std::string& name, DType dtype, const Shape& expect) const {
  BG_CHECK(has(name), "checkpoint", path_, ": missing tensor '", name,
           "' (a checkpoint of another model?)");
  Handle ds(H5Dopen2(hid_t(file_), name.c_str(), H5P_DEFAULT), H5Dclose);
  BG_CHECK(ds.ok(), "checkpoint", path_, ": '", name, "' is not a dataset");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  BG_CHECK(rank >= 0 && rank <= 8, "checkpoint", path_, ": '", name, "' has no readable shape");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  const Shape shape(dims.begin(), dims.end());
  BG_CHECK(expect.empty() || shape == expect, "checkpoint", path_, ": tensor '", name,
           "' has shape ", shape_str(shape), ", expected ", shape_str(expect));
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  BG_CHECK(cls == H5T_INTEGER || cls == H5T_FLOAT, "checkpoint", path_, ": tensor '", name, "' is ",
           class_name(cls), ", expected numbers");
  check_exact_numeric(type.get(), path_, str_cat("tensor '", name, "'"));
  check_storage(ds.get(), name);
  const DType dt = stored_dtype(dtype);
  Tensor out = empty(shape, dt);
  const int64_t n = out.numel();
  if (n == 0) return out.to(dtype);
  auto read = [&](hid_t mem_type, void* buf) {
    BG_CHECK(H5Dread(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0, "checkpoint",
             path_, ": cannot read '", name, "'");
  };
  if (H5Tequal(type.get(), h5_type(dt)) > 0) {  // stored as wanted: no conversion
    read(h5_type(dt), out.data_ptr());
    return out.to(dtype);
  }
  // Otherwise read at full width and convert each value only where it is exact.
  const bool want_float = dt == DType::f32 || dt == DType::f64;
  auto refuse = [&](int64_t i, const std::string& v, const char* why) {
    fail("checkpoint", path_, ": tensor '", name, "' element ", i, " is ", v, ", which ",
         dtype_name(dt), " cannot hold exactly (", why, ")");
  };
  if (cls == H5T_FLOAT) {
    BG_CHECK(want_float, "checkpoint", path_, ": tensor '", name, "' stores floats, expected ",
             dtype_name(dt), " integers");
    std::vector<double> v(static_cast<size_t>(n));
    read(H5T_NATIVE_DOUBLE, v.data());
    if (dt == DType::f64) {
      std::memcpy(out.data_ptr(), v.data(), v.size() * sizeof(double));
    } else {
      float* o = static_cast<float*>(out.data_ptr());
      for (int64_t i = 0; i < n; ++i) {
        o[i] = float(v[size_t(i)]);
        if (double(o[i]) != v[size_t(i)] && !std::isnan(v[size_t(i)]))
          refuse(i, value_text(v[size_t(i)]), "it is stored wider");
      }
    }
    return out.to(dtype);
  }
  // Integers: unsigned 64-bit values past INT64_MAX cannot be read as int64 without clamping.
  const bool unsigned64 = H5Tget_sign(type.get()) == H5T_SGN_NONE && H5Tget_size(type.get()) == 8;
  std::vector<int64_t> v(static_cast<size_t>(n));
  if (unsigned64) {
    std::vector<uint64_t> u(static_cast<size_t>(n));
    read(H5T_NATIVE_UINT64, u.data());
    for (int64_t i = 0; i < n; ++i) {
      if (u[size_t(i)] > uint64_t(INT64_MAX)) refuse(i, value_text(u[size_t(i)]), "too large");
      v[size_t(i)] = int64_t(u[size_t(i)]);
    }
  } else {
    read(H5T_NATIVE_INT64, v.data());
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t x = v[size_t(i)];
    switch (dt) {
      case DType::u8:
        if (x < 0 || x > 255) refuse(i, value_text(x), "out of its range");
        static_cast<uint8_t*>(out.data_ptr())[i] = uint8_t(x);
        break;
      case DType::i32:
        if (x < INT32_MIN || x > INT32_MAX) refuse(i, value_text(x), "out of its range");
        static_cast<int32_t*>(out.data_ptr())[i] = int32_t(x);
        break;
      case DType::i64:
        static_cast<int64_t*>(out.data_ptr())[i] = x;
        break;
      case DType::f64:
        if (std::llabs(x) > (int64_t(1) << 53)) refuse(i, value_text(x), "more than 53 bits");
        static_cast<double*>(out.data_ptr())[i] = double(x);
        break;
      default:  // f32
        if (std::llabs(x) > (int64_t(1) << 24)) refuse(i, value_text(x), "more than 24 bits");
        static_cast<float*>(out.data_ptr())[i] = float(x);
    }
  }
  return out.to(dtype);
}

namespace {

// An open scalar attribute of the root group and its type class; refuses arrays.
struct Attr {
  Handle a, type;
  H5T_class_t cls;
  Attr(hid_t file, const std::string& path, const std::string& name)
      : a(H5Aopen_by_name(file, "/", name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose),
        type(a.ok() ? H5Aget_type(a.get()) : -1, H5Tclose),
        cls(type.ok() ? H5Tget_class(type.get()) : H5T_NO_CLASS) {
    BG_CHECK(a.ok(), "checkpoint", path, ": missing attribute '", name, "'");
    Handle space(H5Aget_space(a.get()), H5Sclose);
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    BG_CHECK(n == 1, "checkpoint", path, ": attribute '", name, "' holds ", n,
             " values, expected one");
  }
};

std::string read_string(const Attr& at, const std::string& path, const std::string& name) {
  BG_CHECK(at.cls == H5T_STRING, "checkpoint", path, ": attribute '", name, "' is ",
           class_name(at.cls), ", expected a string");
  const htri_t variable = H5Tis_variable_str(at.type.get());
  BG_CHECK(variable >= 0, "checkpoint", path, ": attribute '", name, "': unreadable string type");
  if (variable) {
    char* p = nullptr;
    BG_CHECK(H5Aread(at.a.get(), at.type.get(), &p) >= 0, "checkpoint", path,
             ": cannot read attribute '", name, "'");
    std::string s = p ? p : "";
    H5free_memory(p);
    return s;
  }
  std::string s(H5Tget_size(at.type.get()), '\0');
  BG_CHECK(H5Aread(at.a.get(), at.type.get(), s.data()) >= 0, "checkpoint", path,
           ": cannot read attribute '", name, "'");
  switch (H5Tget_strpad(at.type.get())) {
    case H5T_STR_NULLTERM:  // C strings: the text ends at the first NUL
      s.resize(std::strlen(s.c_str()));
      break;
    case H5T_STR_SPACEPAD:  // Fortran strings
      while (!s.empty() && s.back() == ' ') s.pop_back();
      break;
    default:  // NUL-padded: the text may hold NULs of its own; only the padding goes
      while (!s.empty() && s.back() == '\0') s.pop_back();
  }
  return s;
}

}  // namespace

std::string CheckpointReader::str_attr(const std::string& name) const {
  return read_string(Attr(hid_t(file_), path_, name), path_, name);
}

int64_t CheckpointReader::int_attr(const std::string& name) const {
  const Attr at(hid_t(file_), path_, name);
  BG_CHECK(at.cls == H5T_INTEGER, "checkpoint", path_, ": attribute '", name, "' is ",
           class_name(at.cls), ", expected an integer");
  check_exact_numeric(at.type.get(), path_, str_cat("attribute '", name, "'"));
  int64_t v = 0;
  BG_CHECK(H5Aread(at.a.get(), H5T_NATIVE_INT64, &v) >= 0, "checkpoint", path_,
           ": cannot read attribute '", name, "' as a 64-bit integer");
  return v;
}

double CheckpointReader::float_attr(const std::string& name) const {
  const Attr at(hid_t(file_), path_, name);
  if (at.cls == H5T_STRING) {
    const std::string s = read_string(at, path_, name);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    BG_CHECK(!s.empty() && end == s.c_str() + s.size(), "checkpoint", path_, ": attribute '", name,
             "' is '", s, "', expected a number");
    return v;
  }
  BG_CHECK(at.cls == H5T_FLOAT || at.cls == H5T_INTEGER, "checkpoint", path_, ": attribute '", name,
           "' is ", class_name(at.cls), ", expected a number");
  check_exact_numeric(at.type.get(), path_, str_cat("attribute '", name, "'"));
  double v = 0;
  BG_CHECK(H5Aread(at.a.get(), H5T_NATIVE_DOUBLE, &v) >= 0, "checkpoint", path_,
           ": cannot read attribute '", name, "'");
  return v;
}

Tensor CheckpointReader::finite_tensor(const std::string& name, DType dtype,
                                       const Shape& expect) const {
  const Tensor t = tensor(name, DType::f32, expect);
  const float* v = static_cast<const float*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i)
    BG_CHECK(std::isfinite(v[i]), "checkpoint", path_, ": tensor '", name, "' element ", i, " is ",
             v[i], "; training never saves a value that is not finite");
  return t.to(dtype);
}

void load_parameters(const CheckpointReader& ck,
                     const std::vector<std::pair<std::string, Tensor>>& named) {
  for (const auto& [name, t] : named) t.copy_(ck.finite_tensor(name, DType::f32, t.shape()));
}

}  // namespace bg
