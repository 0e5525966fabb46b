// checkpoint.cpp: CheckpointReader (core/checkpoint.h): the file's structure probed in a child
// process first (checkpoint_probe.cpp), then each dataset's storage checked against the file
// before it is read, every value converted exactly. The writer is checkpoint_writer.cpp.
#include "checkpoint.h"

#include <hdf5.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <tuple>

#include "checkpoint_hdf5.h"
#include "files.h"

namespace bg {

using h5::check_exact_numeric;
using h5::class_name;
using h5::exact_numeric_type;
using h5::h5_type;
using h5::Handle;
using h5::probe_in_child;
using h5::stored_dtype;

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
