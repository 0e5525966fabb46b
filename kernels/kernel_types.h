// kernel_types.h: the only vocabulary kernels share with core. A kernel sees raw pointers,
// a dtype tag, sizes/strides (in elements) and an opaque stream; never a Tensor or a config.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace bg {

enum class DType : uint8_t { f32, f64, f16, bf16, i8, u8, i16, u16, i32, i64 };

// How a CUDA matmul of f32 operands runs: fp32 (CUDA cores), tf32 (tensor cores, 10-bit
// mantissa inputs) or bf16 (operands rounded to bf16, tensor cores); fp32 accumulation always.
// Softmax over the last dim of rows: log or not; logits multiplied by `scale` first; and, when
// causal_rows = T > 0, the rows form (T, S) matrices whose row i sees columns j <= i + S - T
// (causal attention, the key offset S - T covering cached keys); hidden columns output 0.
struct SoftmaxOptions {
  bool log = false;
  double scale = 1.0;
  int64_t causal_rows = 0;
};

enum class MatmulPrecision : uint8_t { fp32, tf32, bf16 };
constexpr int kNumDTypes = 10;

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::u16:
      return 2;
    case DType::i8:
    case DType::u8:
      return 1;
  }
  return 0;
}
inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i8:
      return "i8";
    case DType::u8:
      return "u8";
    case DType::i16:
      return "i16";
    case DType::u16:
      return "u16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
  }
  return "?";
}
inline bool dtype_is_float(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}

// Kernels report misuse with the same "[op] message" convention as the rest of bitgrad.
[[noreturn]] inline void kernel_fail(const char* op, const std::string& msg) {
  throw std::runtime_error(std::string("[") + op + "] " + msg);
}

constexpr int kMaxDims = 8;

// A strided view: element (i0..in) lives at data + sum(ik * strides[k]) elements.
struct KView {
  void* data = nullptr;
  DType dtype = DType::f32;
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
  }
  bool contiguous() const {
    int64_t expect = 1;
    for (int i = ndim - 1; i >= 0; --i) {
      if (shape[i] != 1 && strides[i] != expect) return false;
      expect *= shape[i];
    }
    return true;
  }
};

// Temporary memory on the launch's device for a kernel launcher. It stays valid until the
// launcher returns; later reuse is safe because work on one stream runs in order.
struct Scratch {
  virtual ~Scratch() = default;
  virtual void* get(size_t bytes) = 0;
};

// Opaque stream handle (cudaStream_t on the CUDA side, ignored on the CPU side).
using StreamHandle = void*;

enum class UnaryOp : uint8_t {
  exp,
  log,
  tanh,
  relu,
  gelu,      // tanh approximation (GPT-2, llm.c)
  gelu_erf,  // exact: 0.5 x (1 + erf(x / sqrt 2)) (PyTorch's nn.GELU(), nanoGPT)
  silu,
  sigmoid,
  neg,
  sqrt,
  rsqrt,
  abs,
  affine
};
enum class BinaryOp : uint8_t { add, sub, mul, div, maximum, minimum, eq, lt, gt };
enum class ReduceOp : uint8_t { sum, max };

}  // namespace bg
