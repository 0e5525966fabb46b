// checkpoint_hdf5.h: what the checkpoint writer (checkpoint_writer.cpp), the forked structure
// probe (checkpoint_probe.cpp) and the reader (checkpoint.cpp) share of HDF5: the stored types,
// a handle closed by its kind's function, the exact numeric types a file may hold, and the probe
// itself. Internal to core/: nothing outside the checkpoint files includes it.
#pragma once
#include <hdf5.h>

#include <string>

#include "core/tensor.h"

namespace bg::h5 {

// The HDF5 type a dtype is stored as (f16/bf16 and small ints widen to f32), and that dtype.
hid_t h5_type(DType t);
DType stored_dtype(DType t);

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

// An HDF5 type class's name, for messages.
const char* class_name(H5T_class_t c);
// The exact numeric type a dataset or attribute holds ("f32le", "i64le"), or "" when it is not
// one bitgrad reads exactly; and the refusal of the others, naming `what` in `path`.
std::string exact_numeric_type(hid_t type);
void check_exact_numeric(hid_t type, const std::string& path, const std::string& what);

// Opens `path` in a child process and reads every piece of metadata the loader can touch
// (checkpoint_probe.cpp); "" when the file's structure is sound, else why it is not.
std::string probe_in_child(const std::string& path, long long file_bytes);

}  // namespace bg::h5
