#include "checkpoint.h"

#include <hdf5.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

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
  write_atomically(path_, "checkpoint", [&](const std::string& tmp) {
    Handle file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    BG_CHECK(file.ok(), "checkpoint", tmp, ": cannot create");
    Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);  // "optimizer/exp_avg" makes the group
    for (const auto& [name, t] : tensors_) {
      const DType dt = stored_dtype(t.dtype());
      const Tensor host = t.detach().to(Device::cpu(), dt).contiguous();
      std::vector<hsize_t> dims(host.shape().begin(), host.shape().end());
      Handle space(dims.empty() ? H5Screate(H5S_SCALAR)
                                : H5Screate_simple(int(dims.size()), dims.data(), nullptr),
                   H5Sclose);
      Handle ds(H5Dcreate2(file.get(), name.c_str(), h5_type(dt), space.get(), lcpl.get(),
                           H5P_DEFAULT, H5P_DEFAULT),
                H5Dclose);
      BG_CHECK(ds.ok() && H5Dwrite(ds.get(), h5_type(dt), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                   host.data_ptr()) >= 0,
               "checkpoint", tmp, ": cannot write tensor '", name, "' (disk full?)");
    }
    Handle root(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose);
    for (const auto& [k, v] : str_attrs_)
      BG_CHECK(write_str_attr(root.get(), k, v), "checkpoint", tmp, ": cannot write attribute '", k,
               "'");
    for (const auto& [k, v] : int_attrs_)
      BG_CHECK(write_scalar_attr(root.get(), k, H5T_NATIVE_INT64, v), "checkpoint", tmp,
               ": cannot write attribute '", k, "'");
    for (const auto& [k, v] : float_attrs_)
      BG_CHECK(write_scalar_attr(root.get(), k, H5T_NATIVE_DOUBLE, v), "checkpoint", tmp,
               ": cannot write attribute '", k, "'");
    BG_CHECK(H5Fflush(file.get(), H5F_SCOPE_GLOBAL) >= 0, "checkpoint", tmp,
             ": write failed (disk full?)");
  });
}

CheckpointReader::CheckpointReader(const std::string& path) : path_(path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  check_input_file(path, "checkpoint", "checkpoint");
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

std::vector<uint8_t> CheckpointReader::raw_bytes(const std::string& name) const {
  Handle ds(H5Dopen2(hid_t(file_), name.c_str(), H5P_DEFAULT), H5Dclose);
  BG_CHECK(ds.ok(), "checkpoint", path_, ": '", name, "' is not a dataset");
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  BG_CHECK(H5Tis_variable_str(type.get()) <= 0, "checkpoint", path_, ": '", name,
           "' holds variable-length strings");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  std::vector<uint8_t> bytes(size_t(n) * H5Tget_size(type.get()));
  BG_CHECK(bytes.empty() ||
               H5Dread(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) >= 0,
           "checkpoint", path_, ": cannot read '", name, "'");
  return bytes;
}

Tensor CheckpointReader::tensor(const std::string& name, DType dtype, const Shape& expect) const {
  BG_CHECK(has(name), "checkpoint", path_, ": missing tensor '", name,
           "' (a checkpoint of another model?)");
  Handle ds(H5Dopen2(hid_t(file_), name.c_str(), H5P_DEFAULT), H5Dclose);
  BG_CHECK(ds.ok(), "checkpoint", path_, ": '", name, "' is not a dataset");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  BG_CHECK(rank >= 0, "checkpoint", path_, ": '", name, "' has no readable shape");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  const Shape shape(dims.begin(), dims.end());
  BG_CHECK(expect.empty() || shape == expect, "checkpoint", path_, ": tensor '", name,
           "' has shape ", shape_str(shape), ", expected ", shape_str(expect));
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  BG_CHECK(cls == H5T_INTEGER || cls == H5T_FLOAT, "checkpoint", path_, ": tensor '", name, "' is ",
           class_name(cls), ", expected numbers");
  const DType dt = stored_dtype(dtype);
  Tensor out = empty(shape, dt);
  const herr_t st =
      out.numel() ? H5Dread(ds.get(), h5_type(dt), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data_ptr())
                  : 0;
  BG_CHECK(st >= 0, "checkpoint", path_, ": cannot read '", name, "'");
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
  double v = 0;
  BG_CHECK(H5Aread(at.a.get(), H5T_NATIVE_DOUBLE, &v) >= 0, "checkpoint", path_,
           ": cannot read attribute '", name, "'");
  return v;
}

void load_parameters(const CheckpointReader& ck,
                     const std::vector<std::pair<std::string, Tensor>>& named) {
  for (const auto& [name, t] : named) t.copy_(ck.tensor(name, DType::f32, t.shape()));
}

}  // namespace bg
