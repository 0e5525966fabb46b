// llmc_format.h: llm.c's GPT-2 checkpoint files (gpt2_124M.bin, gpt2_124M_bf16.bin, and what
// train_gpt2.cu writes), read and written. A file is a header of 256 little-endian int32 (magic
// 20240326; version 3 for fp32 parameters, 5 for bf16; max_seq_len, vocab_size, num_layers,
// num_heads, channels, padded_vocab_size), then the 16 parameter tensors back to back in llm.c's
// fixed order, each layer's weights stacked over the layers, PyTorch's (out, in) layout:
//   wte (Vp, C), wpe (maxT, C), ln1w (L, C), ln1b (L, C), qkvw (L, 3C, C), qkvb (L, 3C),
//   attprojw (L, C, C), attprojb (L, C), ln2w (L, C), ln2b (L, C), fcw (L, 4C, C), fcb (L, 4C),
//   fcprojw (L, C, 4C), fcprojb (L, C), lnfw (C), lnfb (C).
// Opening a file checks the header (magic, version, every size positive, bounded and
// consistent) and that the file holds exactly the parameters it declares, before anything is
// allocated; each failure is a one-line error naming the file.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace bg {

struct LlmcHeader {
  int64_t max_seq_len = 0, vocab_size = 0, num_layers = 0, num_heads = 0, channels = 0,
          padded_vocab_size = 0;
  DType dtype = DType::f32;  // f32 (version 3) or bf16 (version 5)
};

inline constexpr int32_t kLlmcMagic = 20240326;
inline constexpr int kLlmcHeaderInts = 256;

// The 16 tensors' names and shapes for `h`, in the file's order.
std::vector<std::pair<std::string, Shape>> llmc_parameter_shapes(const LlmcHeader& h);

struct LlmcCheckpoint {
  LlmcHeader header;
  std::vector<std::pair<std::string, Tensor>> tensors;  // llmc_parameter_shapes' order, CPU
};

// Reads and checks `path` (see above).
LlmcCheckpoint read_llmc(const std::string& path);
// The header of `path`, checked as read_llmc checks it (the file's size included), without
// reading the parameters.
LlmcHeader read_llmc_header(const std::string& path);
// Writes `ckpt` atomically; every tensor must have its llmc_parameter_shapes shape (any dtype:
// each is converted to the header's).
void write_llmc(const std::string& path, const LlmcCheckpoint& ckpt);

}  // namespace bg
