// safetensors.h: Hugging Face's safetensors format, read and written (the file transformers
// saves model.safetensors in). A file is an 8-byte little-endian header length N, N bytes of
// JSON header, then the data: the header maps each tensor's name to {"dtype", "shape",
// "data_offsets": [begin, end]} (byte offsets into the data), with an optional "__metadata__"
// object of string values. bitgrad reads and writes F32, F16 and BF16 tensors.
//
// A file from elsewhere may be hostile: opening one checks every field before anything is
// allocated for the data: the header length against the file's size (and the format's 100 MB
// bound), strict JSON, the three keys of each entry and nothing else, a known dtype, each shape's
// byte count (overflow-checked) against its offsets, and the offsets tiling the data exactly (in
// order of their begin: no overlap, no hole, the last end at the file's end). Each failure is a
// one-line error naming the file.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace bg {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
};

class SafetensorsReader {
 public:
  // Opens and checks `path` (see above); reads only the header.
  explicit SafetensorsReader(const std::string& path);
  // The entries in the header's order.
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  // The entry named `name`, or nullptr.
  const SafetensorsEntry* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The tensor named `name` on the CPU, in its file dtype; a name the file lacks is refused,
  // and so is a file that shrank since it was opened.
  Tensor read(const std::string& name) const;

 private:
  std::string path_;
  uint64_t data_start_ = 0;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, size_t> index_;  // name -> entries_ position
  std::map<std::string, std::string> metadata_;
};

// The format's bound on the header length (safetensors' own: 100 MB).
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

// The safetensors dtype name of `dtype` ("F32", "F16", "BF16"); refuses the others.
const char* safetensors_dtype_name(DType dtype);

// Writes `tensors` (f32, f16 or bf16, any device and layout; names unique, not "__metadata__")
// to `path` atomically, in the given order, the header padded with spaces so that the data
// starts at a multiple of 8 bytes.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace bg
