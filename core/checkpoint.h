// checkpoint.h: HDF5 checkpoints. One file: tensors as datasets named like PyTorch state_dict
// keys (stored as f32/f64/i64/i32/u8 host arrays with their shapes; a name with '/' goes into a
// group, so optimizer state can live apart from the model's parameters), plus scalar
// attributes on the root group (config, step, RNG state, format). Strings are written as h5py
// writes them by default (variable-length UTF-8) and read in every form h5py writes
// (variable-length, fixed-length, ASCII or UTF-8); an attribute of the wrong kind is refused
// in one line. Writes go to PATH.tmp and are renamed over PATH only when complete, so a crash
// never leaves a broken checkpoint, and a failed write leaves no PATH.tmp behind.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tensor.h"

namespace bg {

class CheckpointWriter {
 public:
  explicit CheckpointWriter(std::string path);
  void tensor(const std::string& name, const Tensor& t);
  void attr(const std::string& name, const std::string& value);
  void attr(const std::string& name, int64_t value);
  void attr(const std::string& name, double value);
  void commit();  // writes PATH.tmp, then renames it to PATH

 private:
  std::string path_;
  std::vector<std::pair<std::string, Tensor>> tensors_;
  std::map<std::string, std::string> str_attrs_;
  std::map<std::string, int64_t> int_attrs_;
  std::map<std::string, double> float_attrs_;
};

class CheckpointReader {
 public:
  explicit CheckpointReader(const std::string& path);  // throws on a missing or unreadable file
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;
  bool has(const std::string& name) const;  // a dataset (or group) of that path
  bool has_attr(const std::string& name) const;
  // The dataset as a CPU tensor of `dtype`; throws unless its shape is `expect` (when given).
  // Every value converts exactly or the read is refused naming the dataset and the first value
  // that does not (an int8 code of -1 for u8, an f64 that f32 cannot hold, a float for an
  // integer tensor). Before any read the dataset's storage is checked against the file: a
  // contiguous or compact layout, no filters or external files, its stored size equal to its
  // shape times its element size, and its bytes inside the file.
  Tensor tensor(const std::string& name, DType dtype, const Shape& expect = {}) const;
  // tensor() read through f32, refusing NaN or Inf (parameters and optimizer state: a trainer
  // never saves one, so a file that holds one was edited or damaged).
  Tensor finite_tensor(const std::string& name, DType dtype, const Shape& expect = {}) const;
  // A dataset's shape, read without its data.
  Shape shape(const std::string& name) const;
  // Scalar attributes; each throws, naming the file and the attribute, when it is missing or
  // of another kind (a string where an integer belongs, an array, ...).
  std::string str_attr(const std::string& name) const;
  int64_t int_attr(const std::string& name) const;
  // A float attribute, or a string holding a number (how older checkpoints stored them).
  double float_attr(const std::string& name) const;
  const std::string& path() const { return path_; }
  // Every dataset's path ("optimizer/exp_avg"), in name order.
  std::vector<std::string> datasets() const;
  // A dataset's bytes as stored (its file type, little-endian here), for checksums. A
  // variable-length dataset gives, per element, its length (8 bytes) and then its values.
  std::vector<uint8_t> raw_bytes(const std::string& name) const;
  // A dataset's stored element type ("f32le", "i64le", "vlen u8le", ...): what its bytes mean.
  // A float or integer type HDF5 would not convert exactly (a changed exponent bias, offset or
  // precision) is refused here, as by tensor() and raw_bytes().
  std::string type_text(const std::string& name) const;

 private:
  // Refuses a dataset whose storage bitgrad cannot check or that does not fit the file.
  void check_storage(long long dataset, const std::string& name) const;
  std::string path_;
  long long file_ = -1;
  long long file_bytes_ = 0;
};

// Parameters of `named` from a checkpoint (f32, shapes checked).
void load_parameters(const CheckpointReader& ck,
                     const std::vector<std::pair<std::string, Tensor>>& named);

}  // namespace bg
