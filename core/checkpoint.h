// checkpoint.h: HDF5 checkpoints. One file: tensors as datasets named like PyTorch state_dict
// keys (stored as f32/f64/i64/i32/u8 host arrays with their shapes), plus string and integer
// attributes on the root group (config, step, RNG state, format). Writes go to PATH.tmp and
// are renamed over PATH only when complete, so a crash never leaves a broken checkpoint.
#pragma once
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
  void commit();  // writes PATH.tmp, then renames it to PATH

 private:
  std::string path_;
  std::vector<std::pair<std::string, Tensor>> tensors_;
  std::map<std::string, std::string> str_attrs_;
  std::map<std::string, int64_t> int_attrs_;
};

class CheckpointReader {
 public:
  explicit CheckpointReader(const std::string& path);  // throws on a missing or unreadable file
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;
  bool has(const std::string& name) const;
  bool has_attr(const std::string& name) const;
  // The dataset as a CPU tensor of `dtype`; throws unless its shape is `expect` (when given).
  Tensor tensor(const std::string& name, DType dtype, const Shape& expect = {}) const;
  std::string str_attr(const std::string& name) const;
  int64_t int_attr(const std::string& name) const;

 private:
  std::string path_;
  long long file_ = -1;
};

}  // namespace bg
