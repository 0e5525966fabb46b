#include "checkpoint.h"

#include <hdf5.h>

#include <cstdio>
#include <filesystem>

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

void write_str_attr(hid_t loc, const std::string& name, const std::string& value) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.empty() ? 1 : value.size());
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  const herr_t st = H5Awrite(a, type, value.empty() ? "" : value.data());
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(type);
  BG_CHECK(a >= 0 && st >= 0, "checkpoint", "cannot write attribute '", name, "'");
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

void CheckpointWriter::commit() {
  namespace fs = std::filesystem;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const fs::path target(path_);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  const std::string tmp = path_ + ".tmp";
  const hid_t file = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  BG_CHECK(file >= 0, "checkpoint", tmp, ": cannot create");
  bool ok = true;
  for (const auto& [name, t] : tensors_) {
    const DType dt = stored_dtype(t.dtype());
    const Tensor host = t.detach().to(Device::cpu(), dt).contiguous();
    std::vector<hsize_t> dims(host.shape().begin(), host.shape().end());
    const hid_t space = dims.empty() ? H5Screate(H5S_SCALAR)
                                     : H5Screate_simple(int(dims.size()), dims.data(), nullptr);
    const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    const hid_t ds =
        H5Dcreate2(file, name.c_str(), h5_type(dt), space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    ok = ok && ds >= 0 &&
         H5Dwrite(ds, h5_type(dt), H5S_ALL, H5S_ALL, H5P_DEFAULT, host.data_ptr()) >= 0;
    if (ds >= 0) H5Dclose(ds);
    H5Pclose(lcpl);
    H5Sclose(space);
    if (!ok) break;
  }
  const hid_t root = H5Gopen2(file, "/", H5P_DEFAULT);
  for (const auto& [k, v] : str_attrs_) write_str_attr(root, k, v);
  for (const auto& [k, v] : int_attrs_) {
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate2(root, k.c_str(), H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT);
    ok = ok && a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(space);
  }
  H5Gclose(root);
  ok = H5Fclose(file) >= 0 && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    fail("checkpoint", tmp, ": write failed");
  }
  fs::rename(tmp, target);
}

CheckpointReader::CheckpointReader(const std::string& path) : path_(path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  BG_CHECK(std::filesystem::exists(path), "checkpoint", path, ": no such file");
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  BG_CHECK(file_ >= 0, "checkpoint", path, ": not a readable HDF5 file (truncated or corrupt?)");
}

CheckpointReader::~CheckpointReader() {
  if (file_ >= 0) H5Fclose(hid_t(file_));
}

bool CheckpointReader::has(const std::string& name) const {
  return H5Lexists(hid_t(file_), name.c_str(), H5P_DEFAULT) > 0;
}

bool CheckpointReader::has_attr(const std::string& name) const {
  return H5Aexists(hid_t(file_), name.c_str()) > 0;
}

Tensor CheckpointReader::tensor(const std::string& name, DType dtype, const Shape& expect) const {
  BG_CHECK(has(name), "checkpoint", path_, ": missing tensor '", name,
           "' (a checkpoint of another model?)");
  const hid_t ds = H5Dopen2(hid_t(file_), name.c_str(), H5P_DEFAULT);
  const hid_t space = H5Dget_space(ds);
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(size_t(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  H5Sclose(space);
  const Shape shape(dims.begin(), dims.end());
  if (!expect.empty() && shape != expect) {
    H5Dclose(ds);
    fail("checkpoint", path_, ": tensor '", name, "' has shape ", shape_str(shape), ", expected ",
         shape_str(expect));
  }
  const DType dt = stored_dtype(dtype);
  Tensor out = empty(shape, dt);
  const herr_t st =
      out.numel() ? H5Dread(ds, h5_type(dt), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data_ptr()) : 0;
  H5Dclose(ds);
  BG_CHECK(st >= 0, "checkpoint", path_, ": cannot read '", name, "'");
  return out.to(dtype);
}

std::string CheckpointReader::str_attr(const std::string& name) const {
  const hid_t a = H5Aopen_by_name(hid_t(file_), "/", name.c_str(), H5P_DEFAULT, H5P_DEFAULT);
  BG_CHECK(a >= 0, "checkpoint", path_, ": missing attribute '", name, "'");
  const hid_t type = H5Aget_type(a);
  const size_t size = H5Tget_size(type);
  std::string s(size, '\0');
  H5Aread(a, type, s.data());
  H5Tclose(type);
  H5Aclose(a);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

int64_t CheckpointReader::int_attr(const std::string& name) const {
  const hid_t a = H5Aopen_by_name(hid_t(file_), "/", name.c_str(), H5P_DEFAULT, H5P_DEFAULT);
  BG_CHECK(a >= 0, "checkpoint", path_, ": missing attribute '", name, "'");
  int64_t v = 0;
  H5Aread(a, H5T_NATIVE_INT64, &v);
  H5Aclose(a);
  return v;
}

}  // namespace bg
