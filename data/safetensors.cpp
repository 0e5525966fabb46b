#include "safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/files.h"
#include "core/json.h"
#include "core/ops.h"

namespace bg {
namespace {

constexpr const char* kOp = "safetensors";

// The dtypes bitgrad reads and writes, by their safetensors names.
struct NamedDType {
  const char* name;
  DType dtype;
};
constexpr NamedDType kDTypes[] = {{"F32", DType::f32}, {"F16", DType::f16}, {"BF16", DType::bf16}};
// The format's other dtypes: named as such when refused, not as unknown.
constexpr const char* kOtherDTypes[] = {"F64", "I64", "I32", "I16", "I8", "U64", "U32", "U16",
                                        "U8", "BOOL", "F8_E4M3", "F8_E5M2"};

// One header entry, checked: exactly dtype, shape and data_offsets; a dtype bitgrad reads; a
// shape whose byte count (overflow-checked) is end - begin.
SafetensorsEntry parse_entry(const std::string& path, const std::string& name,
                             const JsonValue& v) {
  const std::string where = path + ": tensor \"" + name + "\"";
  BG_CHECK(v.kind == JsonValue::Kind::object, kOp, where, " must be an object, got ",
           json_kind_name(v.kind));
  for (const auto& [key, value] : v.members)
    BG_CHECK(key == "dtype" || key == "shape" || key == "data_offsets", kOp, where,
             " has an unknown field \"", key, "\" (expected dtype, shape, data_offsets)");
  const JsonValue* dtype = v.find("dtype");
  const JsonValue* shape = v.find("shape");
  const JsonValue* offsets = v.find("data_offsets");
  BG_CHECK(dtype && shape && offsets, kOp, where, " lacks ",
           !dtype ? "dtype" : (!shape ? "shape" : "data_offsets"));
  BG_CHECK(dtype->kind == JsonValue::Kind::string, kOp, where, ": dtype must be a string");
  SafetensorsEntry e;
  e.name = name;
  bool known = false;
  for (const NamedDType& d : kDTypes)
    if (dtype->text == d.name) {
      e.dtype = d.dtype;
      known = true;
    }
  if (!known) {
    const bool format_dtype = std::any_of(std::begin(kOtherDTypes), std::end(kOtherDTypes),
                                          [&](const char* d) { return dtype->text == d; });
    fail(kOp, where, ": dtype ", dtype->text,
         format_dtype ? " is not one bitgrad reads" : " is not a safetensors dtype",
         " (F32, F16 or BF16)");
  }
  BG_CHECK(shape->kind == JsonValue::Kind::array, kOp, where, ": shape must be an array");
  BG_CHECK(int(shape->items.size()) <= kMaxDims, kOp, where, ": ", shape->items.size(),
           " dimensions (at most ", kMaxDims, ")");
  uint64_t count = 1;
  for (const JsonValue& d : shape->items) {
    const uint64_t n = d.as_uint64(kOp, where + ": a shape dimension");
    BG_CHECK(n <= uint64_t(INT64_MAX) && !__builtin_mul_overflow(count, n, &count), kOp, where,
             ": the shape's element count overflows");
    e.shape.push_back(int64_t(n));
  }
  uint64_t bytes = 0;
  BG_CHECK(!__builtin_mul_overflow(count, uint64_t(dtype_size(e.dtype)), &bytes), kOp, where,
           ": the shape's byte count overflows");
  BG_CHECK(offsets->kind == JsonValue::Kind::array && offsets->items.size() == 2, kOp, where,
           ": data_offsets must be [begin, end]");
  e.begin = offsets->items[0].as_uint64(kOp, where + ": data_offsets[0]");
  e.end = offsets->items[1].as_uint64(kOp, where + ": data_offsets[1]");
  BG_CHECK(e.begin <= e.end, kOp, where, ": data_offsets [", e.begin, ", ", e.end,
           "] end before they begin");
  BG_CHECK(e.end - e.begin == bytes, kOp, where, ": shape ", shape_str(e.shape), " of ",
           dtype->text, " is ", bytes, " bytes but data_offsets [", e.begin, ", ", e.end,
           "] hold ", e.end - e.begin);
  return e;
}

}  // namespace

const char* safetensors_dtype_name(DType dtype) {
  for (const NamedDType& d : kDTypes)
    if (d.dtype == dtype) return d.name;
  fail(kOp, "dtype ", dtype_name(dtype), " is not written (F32, F16 or BF16)");
}

SafetensorsReader::SafetensorsReader(const std::string& path) : path_(path) {
  uint64_t file_size = 0;
  std::ifstream f = open_binary_input(path, kOp, "safetensors file", &file_size);
  BG_CHECK(file_size >= 8, kOp, path, ": ", file_size,
           " bytes, shorter than the 8-byte header length");
  unsigned char len_bytes[8];
  f.read(reinterpret_cast<char*>(len_bytes), 8);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | len_bytes[i];
  BG_CHECK(header_len <= kMaxSafetensorsHeader, kOp, path, ": a header of ", header_len,
           " bytes (the format allows ", kMaxSafetensorsHeader, ")");
  BG_CHECK(header_len <= file_size - 8, kOp, path, ": the header length ", header_len,
           " runs past the file's end (", file_size, " bytes)");
  std::string header(size_t(header_len), '\0');
  f.read(header.data(), std::streamsize(header_len));
  BG_CHECK(uint64_t(f.gcount()) == header_len, kOp, path, ": the header could not be read whole");
  BG_CHECK(!header.empty() && header[0] == '{', kOp, path,
           ": the header must be a JSON object starting at its first byte");
  const JsonValue root = parse_json(header, kOp, path + ": header");
  data_start_ = 8 + header_len;
  const uint64_t data_size = file_size - data_start_;
  for (const auto& [name, value] : root.members) {
    if (name == "__metadata__") {
      BG_CHECK(value.kind == JsonValue::Kind::object, kOp, path,
               ": __metadata__ must be an object of strings");
      for (const auto& [key, text] : value.members) {
        BG_CHECK(text.kind == JsonValue::Kind::string, kOp, path, ": __metadata__ \"", key,
                 "\" must be a string, got ", json_kind_name(text.kind));
        metadata_[key] = text.text;
      }
      continue;
    }
    BG_CHECK(!name.empty(), kOp, path, ": a tensor with an empty name");
    index_.emplace(name, entries_.size());  // names are unique: the JSON reader refuses twice
    entries_.push_back(parse_entry(path, name, value));
  }
  // The offsets tile the data: sorted by begin (then end, so empty tensors come first), each
  // begins where the one before ends, and the last ends at the file's end.
  std::vector<const SafetensorsEntry*> order;
  for (const SafetensorsEntry& e : entries_) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t at = 0;
  for (const SafetensorsEntry* e : order) {
    BG_CHECK(e->begin <= at, kOp, path, ": tensor \"", e->name, "\" begins at ", e->begin,
             ", leaving a hole after byte ", at, " of the data");
    BG_CHECK(e->begin == at, kOp, path, ": tensor \"", e->name, "\" [", e->begin, ", ", e->end,
             ") overlaps the data before byte ", at);
    at = e->end;
  }
  BG_CHECK(at <= data_size, kOp, path, ": the tensors' data ends at byte ", at,
           " but the file holds ", data_size, " (truncated?)");
  BG_CHECK(at == data_size, kOp, path, ": ", data_size - at,
           " bytes after the last tensor's data belong to none");
}

const SafetensorsEntry* SafetensorsReader::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

Tensor SafetensorsReader::read(const std::string& name) const {
  const SafetensorsEntry* e = find(name);
  BG_CHECK(e, kOp, path_, ": no tensor \"", name, "\"");
  Tensor t = empty(e->shape, e->dtype);
  const uint64_t bytes = e->end - e->begin;
  if (bytes == 0) return t;
  std::ifstream f(path_, std::ios::binary);
  BG_CHECK(f.good(), kOp, path_, ": cannot open");
  f.seekg(std::streamoff(data_start_ + e->begin));
  f.read(static_cast<char*>(t.data_ptr()), std::streamsize(bytes));
  BG_CHECK(uint64_t(f.gcount()) == bytes, kOp, path_, ": tensor \"", name,
           "\" could not be read whole (the file changed since it was opened?)");
  return t;
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  BG_CHECK(host_is_little_endian(), kOp, "this host is big-endian; safetensors is little-endian");
  std::string header = "{";
  bool first = true;
  auto member = [&](const std::string& key, const std::string& value) {
    header += (first ? "" : ",") + json_quote(key) + ":" + value;
    first = false;
  };
  if (!metadata.empty()) {
    std::string m = "{";
    for (const auto& [key, value] : metadata)
      m += (m.size() > 1 ? "," : "") + json_quote(key) + ":" + json_quote(value);
    member("__metadata__", m + "}");
  }
  std::vector<Tensor> host;
  std::vector<std::string> names;
  uint64_t at = 0;
  for (const auto& [name, t] : tensors) {
    BG_CHECK(!name.empty() && name != "__metadata__", kOp, "a tensor may not be named \"", name,
             "\"");
    BG_CHECK(std::find(names.begin(), names.end(), name) == names.end(), kOp, "the name \"", name,
             "\" is given twice");
    names.push_back(name);
    const char* dtype = safetensors_dtype_name(t.dtype());
    host.push_back(t.detach().to(Device::cpu()).contiguous());
    const uint64_t bytes = uint64_t(t.numel()) * dtype_size(t.dtype());
    std::string shape = "[";
    for (size_t d = 0; d < t.shape().size(); ++d)
      shape += (d ? "," : "") + std::to_string(t.shape()[d]);
    member(name, std::string("{\"dtype\":\"") + dtype + "\",\"shape\":" + shape +
                     "],\"data_offsets\":[" + std::to_string(at) + "," +
                     std::to_string(at + bytes) + "]}");
    at += bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[size_t(i)] = char((uint64_t(header.size()) >> (8 * i)) & 0xFF);
  file.reserve(8 + header.size() + at);
  file += header;
  for (const Tensor& t : host)
    file.append(static_cast<const char*>(t.data_ptr()), size_t(t.numel()) * dtype_size(t.dtype()));
  write_file_atomic(path, file, kOp);
}

}  // namespace bg
