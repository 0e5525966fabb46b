// kernel_types.h: the only vocabulary kernels share with core. A kernel sees raw pointers,
// a dtype tag, sizes/strides (in elements) and an opaque stream; never a Tensor or a config.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "enum_names.h"

namespace bg {

// Every storage type, one row each: its name, its size in bytes, whether it holds floating-point
// values, and the element type kernels load and store it as. Half and BFloat16 are each
// backend's own 16-bit float types (Eigen's on the CPU, CUDA's on the GPU), named by the
// backend before it expands the table. A new storage type costs one row here, plus its element
// type in each backend when that is not a plain C++ type: the enum, dtype_size, dtype_name,
// dtype_is_float and both backends' element loads and stores (kernels/*/copy.*) follow.
#define BG_DTYPES(X)         \
  X(f32, 4, true, float)     \
  X(f64, 8, true, double)    \
  X(f16, 2, true, Half)      \
  X(bf16, 2, true, BFloat16) \
  X(i8, 1, false, int8_t)    \
  X(u8, 1, false, uint8_t)   \
  X(i16, 2, false, int16_t)  \
  X(u16, 2, false, uint16_t) \
  X(i32, 4, false, int32_t)  \
  X(i64, 8, false, int64_t)

enum class DType : uint8_t {
#define BG_DTYPE_ENUM(name, bytes, is_float, element) name,
  BG_DTYPES(BG_DTYPE_ENUM)
#undef BG_DTYPE_ENUM
};

// Softmax over the last dim of rows: log or not; logits multiplied by `scale` first; and, when
// causal_rows = T > 0, the rows form (T, S) matrices whose row i sees columns j <= i + S - T
// (causal attention, the key offset S - T covering cached keys); hidden columns output 0.
struct SoftmaxOptions {
  bool log = false;
  double scale = 1.0;
  // Causal mask over (T = causal_rows, S) matrices: row i sees columns 0 .. i + causal_offset,
  // with causal_offset -1 meaning S - T (the queries are the last T of S positions).
  int64_t causal_rows = 0;
  int64_t causal_offset = -1;
};

// How a CUDA matmul of f32 operands runs: fp32 (CUDA cores), tf32 (tensor cores, 10-bit
// mantissa inputs) or bf16 (operands rounded to bf16, tensor cores); fp32 accumulation always.
#define BG_MATMUL_PRECISIONS(X) X(fp32, "fp32") X(tf32, "tf32") X(bf16, "bf16")
BG_NAMED_ENUM(MatmulPrecision, BG_MATMUL_PRECISIONS)

// How matmul_batch_invariant runs one product.
struct BatchInvariantGemm {
  MatmulPrecision precision = MatmulPrecision::fp32;
  // The product's K runs over the samples (a weight gradient, a^T g), so it has no rows to keep
  // apart: its configuration may follow the whole shape and split K, reduced in a fixed order.
  bool k_over_rows = false;
};
// BitLinear (BitNet b1.58): how the per-tensor weight scale beta is taken (W_q = clamp(rint(W /
// beta), -1, 1)), and what normalises a row before its activations are quantised.
#define BG_TERNARY_SCALES(X) X(absmean, "absmean") X(absmedian, "absmedian")
BG_NAMED_ENUM(TernaryScale, BG_TERNARY_SCALES)
// rms and layer have no affine parameters.
#define BG_BIT_NORMS(X) X(none, "none") X(rms, "rmsnorm") X(layer, "layernorm")
BG_NAMED_ENUM(BitNorm, BG_BIT_NORMS)
struct ActQuantOptions {
  BitNorm norm = BitNorm::rms;
  int bits = 8;  // 2..8: Q = 2^(bits-1) - 1, x_q in [-Q-1, Q]
  double eps = 1e-5;
};

#define BG_DTYPE_COUNT(name, bytes, is_float, element) +1
constexpr int kNumDTypes = 0 BG_DTYPES(BG_DTYPE_COUNT);
#undef BG_DTYPE_COUNT

inline size_t dtype_size(DType t) {
  switch (t) {
#define BG_DTYPE_SIZE(name, bytes, is_float, element) \
  case DType::name:                                   \
    return bytes;
    BG_DTYPES(BG_DTYPE_SIZE)
#undef BG_DTYPE_SIZE
  }
  return 0;
}
inline const char* dtype_name(DType t) {
  switch (t) {
#define BG_DTYPE_NAME(name, bytes, is_float, element) \
  case DType::name:                                   \
    return #name;
    BG_DTYPES(BG_DTYPE_NAME)
#undef BG_DTYPE_NAME
  }
  return "?";
}
inline bool dtype_is_float(DType t) {
  switch (t) {
#define BG_DTYPE_FLOAT(name, bytes, is_float, element) \
  case DType::name:                                    \
    return is_float;
    BG_DTYPES(BG_DTYPE_FLOAT)
#undef BG_DTYPE_FLOAT
  }
  return false;
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

// What a GEMM adds to its accumulators in its epilogue, before the one rounding to the output's
// dtype (kernel_list.h's matmul and matmul_batch_invariant). A view with data == nullptr adds
// nothing.
struct MatmulEpilogue {
  KView bias;      // N contiguous values of out's dtype, 16-byte aligned; one matrix
  KView residual;  // out's shape, dtype and strides, 16-byte aligned: out = residual + a @ b
  // When set (CUDA's standard algorithm only, no residual, one matrix, K > 0): out =
  // gelu_tanh(a @ b + bias) and gelu_input (out's shape, dtype and contiguous strides, 16-byte
  // aligned, N a multiple of 8) = a @ b + bias, the GELU's input its backward reads.
  KView gelu_input;
  // When set (CUDA's standard algorithm only, one matrix, K > 0, no bias and no GELU): receives
  // the sums of a's rows over K, M f32 values, contiguous and 16-byte aligned (cuBLASLt's
  // BGRADB: a weight-gradient product g^T x sums g's columns, the bias gradient, as it loads
  // them; written, never added to).
  KView a_row_sums;
  // When set (CUDA's cuBLASLt algorithms only, no bias, residual, GELU or row sums, one
  // matrix, K > 0): out = (a @ b) * gelu_tanh'(dgelu_input) (cuBLASLt's DGELU: an input
  // gradient g W for a GELU's output, turned into the gradient of the GELU's input in the same
  // pass; it rounds the product to out's dtype before the multiply, as a separate GELU backward
  // reads it). out's shape, dtype and contiguous strides, 16-byte aligned, N a multiple of 8.
  KView dgelu_input;
};

// Temporary memory on the launch's device for a kernel launcher. It stays valid until the
// launcher returns; later reuse is safe because work on one stream runs in order.
struct Scratch {
  virtual ~Scratch() = default;
  virtual void* get(size_t bytes) = 0;
};

// The Scratch of a call whose arguments need none (layernorm_backward without affine
// parameters): asking it for memory is a bug, reported as one.
struct NoScratch : Scratch {
  void* get(size_t) override { kernel_fail("scratch", "this call was given no scratch memory"); }
};

// A contiguous view as (rows, c): rows of its last dim c, what the row kernels (act_quantize)
// take.
inline KView as_rows(const KView& v, int64_t c) {
  KView rows = v;
  rows.ndim = 2;
  rows.shape[0] = c ? v.numel() / c : 0;
  rows.shape[1] = c;
  rows.strides[0] = c;
  rows.strides[1] = 1;
  return rows;
}

// One weight of ternary_quantize_group: w (N, K) f32 contiguous in, wq (N, K) i8 (rows padded
// as the int8 kernels read them) and beta (f32 scalar) out, and tilde (N, K) contiguous, W~ =
// beta * W_q in its own dtype, out where tilde.data is set.
struct TernaryTarget {
  KView wq, beta, w, tilde;
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
  affine,
  softplus,  // log(1 + e^x): a positive parameter from any feature (a scale, degrees of freedom)
  lgamma     // log Gamma(x), x > 0: the Student-t head's normaliser
};
enum class BinaryOp : uint8_t { add, sub, mul, div, maximum, minimum, eq, lt, gt };
// sum_squares: the sum of each element's square, the square rounded to f32 (f64 for f64 on the
// CPU) first: sum(x * x)'s bits for f32 and f64 x, in one pass over x.
enum class ReduceOp : uint8_t { sum, max, sum_squares };

}  // namespace bg
