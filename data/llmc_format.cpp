#include "llmc_format.h"

#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/files.h"

namespace bg {
namespace {

constexpr const char* kOp = "llm.c";
// Bounds on every header size: far past any GPT llm.c trains, small enough that no product of
// them overflows int64 before the checks below.
constexpr int64_t kMaxDim = int64_t(1) << 24;

int version_of(DType dtype) {
  BG_CHECK(dtype == DType::f32 || dtype == DType::bf16, kOp, "llm.c files hold f32 or bf16, not ",
           dtype_name(dtype));
  return dtype == DType::f32 ? 3 : 5;
}

}  // namespace

std::vector<std::pair<std::string, Shape>> llmc_parameter_shapes(const LlmcHeader& h) {
  const int64_t c = h.channels, l = h.num_layers;
  return {{"wte", {h.padded_vocab_size, c}}, {"wpe", {h.max_seq_len, c}}, {"ln1w", {l, c}},
          {"ln1b", {l, c}},                  {"qkvw", {l, 3 * c, c}},     {"qkvb", {l, 3 * c}},
          {"attprojw", {l, c, c}},           {"attprojb", {l, c}},        {"ln2w", {l, c}},
          {"ln2b", {l, c}},                  {"fcw", {l, 4 * c, c}},      {"fcb", {l, 4 * c}},
          {"fcprojw", {l, c, 4 * c}},        {"fcprojb", {l, c}},         {"lnfw", {c}},
          {"lnfb", {c}}};
}

namespace {

// Opens `path` and checks its header, and the file's size against it: everything before the
// parameters are read.
std::ifstream open_llmc(const std::string& path, LlmcHeader* header) {
  uint64_t file_size = 0;
  std::ifstream f = open_binary_input(path, kOp, "llm.c checkpoint", &file_size);
  const int64_t size = int64_t(file_size), header_bytes = kLlmcHeaderInts * 4;
  BG_CHECK(size >= header_bytes, kOp, path, ": ", size, " bytes, shorter than llm.c's ",
           header_bytes, "-byte header");
  unsigned char raw[kLlmcHeaderInts * 4];
  f.read(reinterpret_cast<char*>(raw), header_bytes);
  auto field = [&](int i) {
    uint32_t v = 0;
    for (int b = 3; b >= 0; --b) v = v << 8 | raw[i * 4 + b];
    return int64_t(int32_t(v));
  };
  BG_CHECK(field(0) == kLlmcMagic, kOp, path, ": magic ", field(0), ", not llm.c's ", kLlmcMagic,
           " (not a GPT-2 checkpoint of llm.c)");
  BG_CHECK(field(1) == 3 || field(1) == 5, kOp, path, ": version ", field(1),
           " (llm.c writes 3 for fp32 and 5 for bf16)");
  LlmcHeader& h = *header;
  h.dtype = field(1) == 3 ? DType::f32 : DType::bf16;
  h.max_seq_len = field(2);
  h.vocab_size = field(3);
  h.num_layers = field(4);
  h.num_heads = field(5);
  h.channels = field(6);
  h.padded_vocab_size = field(7);
  const std::pair<const char*, int64_t> sizes[] = {
      {"max_seq_len", h.max_seq_len}, {"vocab_size", h.vocab_size},
      {"num_layers", h.num_layers},   {"num_heads", h.num_heads},
      {"channels", h.channels},       {"padded_vocab_size", h.padded_vocab_size}};
  for (const auto& [name, v] : sizes)
    BG_CHECK(v >= 1 && v <= kMaxDim, kOp, path, ": ", name, " ", v, " (expected 1 to ", kMaxDim,
             ")");
  BG_CHECK(h.channels % h.num_heads == 0, kOp, path, ": channels ", h.channels,
           " is not a multiple of num_heads ", h.num_heads);
  BG_CHECK(h.padded_vocab_size >= h.vocab_size, kOp, path, ": padded_vocab_size ",
           h.padded_vocab_size, " is below vocab_size ", h.vocab_size);
  const auto shapes = llmc_parameter_shapes(h);
  int64_t count = 0;
  for (const auto& [name, shape] : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) BG_CHECK(!__builtin_mul_overflow(n, d, &n), kOp, path, ": too large");
    BG_CHECK(!__builtin_add_overflow(count, n, &count), kOp, path, ": too large");
  }
  const int64_t esize = int64_t(dtype_size(h.dtype));
  int64_t want = 0;
  BG_CHECK(!__builtin_mul_overflow(count, esize, &want) &&
               !__builtin_add_overflow(want, header_bytes, &want),
           kOp, path, ": too large");
  BG_CHECK(size == want, kOp, path, ": ", size, " bytes, but its header (",
           h.num_layers, " layers, ", h.channels, " channels, vocabulary ", h.padded_vocab_size,
           ", ", dtype_name(h.dtype), ") declares ", count, " parameters = ", want, " bytes",
           size < want ? " (truncated?)" : "");
  return f;
}

}  // namespace

LlmcHeader read_llmc_header(const std::string& path) {
  LlmcHeader h;
  open_llmc(path, &h);
  return h;
}

LlmcCheckpoint read_llmc(const std::string& path) {
  LlmcCheckpoint ck;
  std::ifstream f = open_llmc(path, &ck.header);
  const LlmcHeader& h = ck.header;
  const int64_t esize = int64_t(dtype_size(h.dtype));
  for (const auto& [name, shape] : llmc_parameter_shapes(h)) {
    Tensor t = empty(shape, h.dtype);
    const std::streamsize bytes = std::streamsize(t.numel() * esize);
    f.read(static_cast<char*>(t.data_ptr()), bytes);
    BG_CHECK(f.gcount() == bytes, kOp, path, ": ", name, " could not be read whole");
    ck.tensors.emplace_back(name, t);
  }
  return ck;
}

void write_llmc(const std::string& path, const LlmcCheckpoint& ck) {
  BG_CHECK(host_is_little_endian(), kOp, "this host is big-endian; llm.c's files are little-endian");
  const LlmcHeader& h = ck.header;
  const auto shapes = llmc_parameter_shapes(h);
  BG_CHECK(ck.tensors.size() == shapes.size(), kOp, "an llm.c file holds ", shapes.size(),
           " tensors, got ", ck.tensors.size());
  int32_t header[kLlmcHeaderInts] = {};
  header[0] = kLlmcMagic;
  header[1] = version_of(h.dtype);
  const int64_t fields[] = {h.max_seq_len, h.vocab_size,  h.num_layers,
                            h.num_heads,   h.channels, h.padded_vocab_size};
  for (int i = 0; i < 6; ++i) {
    BG_CHECK(fields[i] >= 1 && fields[i] <= kMaxDim, kOp, "header size ", fields[i],
             " out of range (1 to ", kMaxDim, ")");
    header[2 + i] = int32_t(fields[i]);
  }
  std::string bytes(sizeof header, '\0');
  for (int i = 0; i < kLlmcHeaderInts; ++i)
    for (int b = 0; b < 4; ++b)
      bytes[size_t(i * 4 + b)] = char((uint32_t(header[i]) >> (8 * b)) & 0xFF);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& [name, t] = ck.tensors[i];
    BG_CHECK(name == shapes[i].first && t.shape() == shapes[i].second, kOp, "tensor ", i, " is \"",
             name, "\" ", shape_str(t.shape()), ", llm.c's is \"", shapes[i].first, "\" ",
             shape_str(shapes[i].second));
    const Tensor host = t.detach().to(Device::cpu(), h.dtype).contiguous();
    bytes.append(static_cast<const char*>(host.data_ptr()),
                 size_t(host.numel()) * dtype_size(h.dtype));
  }
  write_file_atomic(path, bytes, kOp);
}

}  // namespace bg
