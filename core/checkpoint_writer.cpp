// checkpoint_writer.cpp: CheckpointWriter (core/checkpoint.h): a checkpoint built as an
// in-memory HDF5 image and written by write_file_atomic, so the HDF5 library never writes to
// disk itself.
#include <hdf5.h>

#include <vector>

#include "checkpoint.h"
#include "checkpoint_hdf5.h"
#include "files.h"

namespace bg {
namespace {

using h5::Handle;
using h5::h5_type;
using h5::stored_dtype;

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

}  // namespace bg
