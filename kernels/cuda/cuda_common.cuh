// cuda_common.cuh: error checks, dtype dispatch, strided indexing and launch helpers shared by
// the CUDA kernels. Every kernel computes in float (or double where noted) and stores in T.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "../kernel_types.h"

namespace bg::cuda {

inline void check_cuda(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess)
    kernel_fail("cuda", std::string(what) + ": " + cudaGetErrorString(err) + " at " + file + ":" +
                            std::to_string(line));
}
#define BG_CUDA_CHECK(call) ::bg::cuda::check_cuda((call), #call, __FILE__, __LINE__)

#define BG_CUDA_LAUNCH_CHECK() \
  ::bg::cuda::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

inline cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }

// Lets `kernel` launch with `bytes` of dynamic shared memory (needed above 48 KB). The setting
// belongs to the current device, so it is made on every launch (a host-side call, nothing on the
// stream): a flag kept after a first launch would leave a second GPU without it.
template <typename Kernel>
inline void allow_shared_memory(Kernel kernel, int bytes) {
  BG_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

// Calls f(T{}) with T = float, __half or __nv_bfloat16.
template <typename F>
void dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32:
      return f(float{});
    case DType::f16:
      return f(__half{});
    case DType::bf16:
      return f(__nv_bfloat16{});
    default:
      kernel_fail(op,
                  std::string("CUDA compute kernels take f32, f16 or bf16, got ") + dtype_name(t));
  }
}

// Calls f(T{}, P{}) for a kernel whose second tensor (an output, or a gradient) is stored either
// in the first's dtype T or, for an f32 first, in bf16: the one narrowing bf16 precision uses
// (an activation stored as the bf16 operand of its consuming matmul, and that activation's bf16
// gradient). `what` names the second tensor in the error.
template <typename F>
void dispatch_float_or_bf16(DType first, DType second, const char* op, const char* what, F&& f) {
  if (second == first) return dispatch_float(first, op, [&](auto zero) { f(zero, zero); });
  if (first == DType::f32 && second == DType::bf16) return f(float{}, __nv_bfloat16{});
  kernel_fail(op, std::string(what) + " dtype " + dtype_name(second) + " for input " +
                      dtype_name(first) + " (only f32 -> bf16 narrows)");
}

template <typename F>
void dispatch_index(DType t, const char* op, F&& f) {
  if (t == DType::i64) return f(int64_t{});
  if (t == DType::i32) return f(int32_t{});
  kernel_fail(op, std::string("indices must be i32 or i64, got ") + dtype_name(t));
}

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Shape + strides passed by value to kernels; offset() maps a row-major linear index.
struct Indexer {
  int ndim;
  int64_t shape[kMaxDims];
  int64_t strides[kMaxDims];
  bool contiguous;
  bool narrow;  // every offset fits 32 bits: cheaper integer division
  // Size-1 dims are dropped and adjacent dims that step like one are merged (each view on its
  // own: the merged dims enumerate the same offsets in the same order), so a permuted view
  // usually costs two or three divisions per element instead of one per dim.
  explicit Indexer(const KView& v) : ndim(0), contiguous(v.contiguous()) {
    int64_t numel = 1, max_offset = 0;
    for (int d = 0; d < v.ndim; ++d) {
      numel *= v.shape[d];
      max_offset += (v.shape[d] - 1) * (v.strides[d] < 0 ? -v.strides[d] : v.strides[d]);
      if (v.shape[d] == 1) continue;
      if (ndim > 0 && strides[ndim - 1] == v.strides[d] * v.shape[d]) {
        shape[ndim - 1] *= v.shape[d];
        strides[ndim - 1] = v.strides[d];
      } else {
        shape[ndim] = v.shape[d];
        strides[ndim] = v.strides[d];
        ++ndim;
      }
    }
    for (int i = ndim; i < kMaxDims; ++i) {
      shape[i] = 1;
      strides[i] = 0;
    }
    contiguous = contiguous || ndim == 0 || (ndim == 1 && strides[0] == 1);
    narrow = numel < (int64_t(1) << 31) && max_offset < (int64_t(1) << 31);
  }
  __device__ __forceinline__ int64_t offset(int64_t i) const {
    if (contiguous) return i;
    if (narrow) {
      uint32_t j = uint32_t(i);
      int32_t off = 0;
#pragma unroll
      for (int d = kMaxDims - 1; d >= 0; --d) {
        if (d >= ndim) continue;
        const uint32_t n = uint32_t(shape[d]), q = j / n;
        off += int32_t(j - q * n) * int32_t(strides[d]);
        j = q;
      }
      return off;
    }
    int64_t off = 0;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d >= ndim) continue;
      const int64_t q = i / shape[d];
      off += (i - q * shape[d]) * strides[d];
      i = q;
    }
    return off;
  }
};

// Four elements moved as one load/store (16 bytes of f32, 8 of f16/bf16).
template <typename T>
struct alignas(4 * sizeof(T)) Vec4 {
  T v[4];
};
template <typename T>
__host__ __device__ __forceinline__ bool vec4_aligned(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % sizeof(Vec4<T>) == 0;
}

inline unsigned grid_for(int64_t n, int threads, int64_t max_blocks = 65536 * 8) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > max_blocks) blocks = max_blocks;
  return unsigned(blocks < 1 ? 1 : blocks);
}

// Grid-stride loop over [0, n).
#define BG_GRID_LOOP(i, n)                                                  \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += int64_t(blockDim.x) * gridDim.x)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Block-wide sum/max in a fixed order (warp butterflies, then warp 0): deterministic.
// `scratch` holds 32 floats; the result is returned to every thread.
template <bool kMax>
__device__ float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float r = lane < warps ? scratch[lane] : (kMax ? -INFINITY : 0.f);
    r = kMax ? warp_max(r) : warp_sum(r);
    if (lane == 0) scratch[0] = r;
  }
  __syncthreads();
  return scratch[0];
}

}  // namespace bg::cuda
