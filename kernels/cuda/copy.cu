// copy.cu: strided copy with dtype conversion, and fill. Same-dtype contiguous copies are a
// plain memcpy; everything else goes through one kernel that loads/stores via double (a
// warp-uniform switch on the dtype tags), which keeps 100 dtype pairs to one instantiation.
// Half types round double -> float -> half, as the CPU does (Eigen converts from float).
#include <type_traits>

#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

// The element types of the two 16-bit floats in the dtype table (kernel_types.h).
using Half = __half;
using BFloat16 = __nv_bfloat16;

template <typename E>
__device__ __forceinline__ double to_double(E v) {
  if constexpr (std::is_same_v<E, Half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<E, BFloat16>)
    return __bfloat162float(v);
  else
    return double(v);
}
// Halves round double -> float -> half, as the CPU does.
template <typename E>
__device__ __forceinline__ E from_double(double x) {
  if constexpr (std::is_same_v<E, Half>)
    return __float2half_rn(float(x));
  else if constexpr (std::is_same_v<E, BFloat16>)
    return __float2bfloat16_rn(float(x));
  else
    return E(x);
}

__device__ __forceinline__ double load(const void* base, DType t, int64_t i) {
  switch (t) {
#define BG_LOAD(name, bytes, is_float, element) \
  case DType::name:                             \
    return to_double(static_cast<const element*>(base)[i]);
    BG_DTYPES(BG_LOAD)
#undef BG_LOAD
  }
  return 0;
}

__device__ __forceinline__ void store(void* base, DType t, int64_t i, double x) {
  switch (t) {
#define BG_STORE(name, bytes, is_float, element)              \
  case DType::name:                                           \
    static_cast<element*>(base)[i] = from_double<element>(x); \
    break;
    BG_DTYPES(BG_STORE)
#undef BG_STORE
  }
}

template <typename E>  // same-dtype strided copy by element bits
__global__ void copy_same_kernel(E* dst, const E* src, Indexer di, Indexer si, int64_t n) {
  BG_GRID_LOOP(i, n) { dst[di.offset(i)] = src[si.offset(i)]; }
}

__global__ void copy_convert_kernel(void* dst, DType dt, const void* src, DType st, Indexer di,
                                    Indexer si, int64_t n) {
  BG_GRID_LOOP(i, n) { store(dst, dt, di.offset(i), load(src, st, si.offset(i))); }
}

// Contiguous f32 <-> f16/bf16, four values per thread: the casts around half-precision
// matmuls. Same rounding as copy_convert_kernel (float -> half round-to-nearest-even).
// `vector`: both pointers aligned to their Vec4, so full groups move as one load and one store.
template <typename D, typename S>
__global__ void convert_contiguous_kernel(D* dst, const S* src, int64_t n, bool vector) {
  BG_GRID_LOOP(g, (n + 3) / 4) {
    if (vector && 4 * g + 3 < n) {
      const Vec4<S> in = reinterpret_cast<const Vec4<S>*>(src)[g];
      Vec4<D> o;
#pragma unroll
      for (int j = 0; j < 4; ++j) o.v[j] = from_float<D>(to_float(in.v[j]));
      reinterpret_cast<Vec4<D>*>(dst)[g] = o;
      continue;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t i = 4 * g + j;
      if (i < n) dst[i] = from_float<D>(to_float(src[i]));
    }
  }
}

template <typename F>
bool dispatch_half_pair(DType dst, DType src, F&& f) {
  if (dst == DType::f32 && src == DType::bf16) return f(float{}, __nv_bfloat16{}), true;
  if (dst == DType::f32 && src == DType::f16) return f(float{}, __half{}), true;
  if (dst == DType::bf16 && src == DType::f32) return f(__nv_bfloat16{}, float{}), true;
  if (dst == DType::f16 && src == DType::f32) return f(__half{}, float{}), true;
  return false;
}

__global__ void fill_kernel(void* dst, DType dt, Indexer di, int64_t n, double value) {
  BG_GRID_LOOP(i, n) { store(dst, dt, di.offset(i), value); }
}

}  // namespace

void copy(const KView& dst, const KView& src, StreamHandle stream) {
  const int64_t n = dst.numel();
  if (n != src.numel()) kernel_fail("copy", "element counts differ");
  if (n == 0) return;
  auto s = as_stream(stream);
  if (dst.dtype == src.dtype && dst.contiguous() && src.contiguous()) {
    BG_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, size_t(n) * dtype_size(dst.dtype),
                                  cudaMemcpyDefault, s));
    return;
  }
  const unsigned grid = grid_for(n, 256);
  if (dst.contiguous() && src.contiguous() &&
      dispatch_half_pair(dst.dtype, src.dtype, [&](auto d, auto sv) {
        using D = decltype(d);
        using S = decltype(sv);
        const bool vector = vec4_aligned<D>(dst.data) && vec4_aligned<S>(src.data);
        convert_contiguous_kernel<D, S><<<grid_for((n + 3) / 4, 256), 256, 0, s>>>(
            static_cast<D*>(dst.data), static_cast<const S*>(src.data), n, vector);
      })) {
    BG_CUDA_LAUNCH_CHECK();
    return;
  }
  if (dst.dtype == src.dtype) {
    switch (dtype_size(dst.dtype)) {
      case 1:
        copy_same_kernel<<<grid, 256, 0, s>>>((uint8_t*)dst.data, (const uint8_t*)src.data,
                                              Indexer(dst), Indexer(src), n);
        break;
      case 2:
        copy_same_kernel<<<grid, 256, 0, s>>>((uint16_t*)dst.data, (const uint16_t*)src.data,
                                              Indexer(dst), Indexer(src), n);
        break;
      case 4:
        copy_same_kernel<<<grid, 256, 0, s>>>((uint32_t*)dst.data, (const uint32_t*)src.data,
                                              Indexer(dst), Indexer(src), n);
        break;
      default:
        copy_same_kernel<<<grid, 256, 0, s>>>((uint64_t*)dst.data, (const uint64_t*)src.data,
                                              Indexer(dst), Indexer(src), n);
        break;
    }
  } else {
    copy_convert_kernel<<<grid, 256, 0, s>>>(dst.data, dst.dtype, src.data, src.dtype, Indexer(dst),
                                             Indexer(src), n);
  }
  BG_CUDA_LAUNCH_CHECK();
}

void fill(const KView& dst, double value, StreamHandle stream) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  fill_kernel<<<grid_for(n, 256), 256, 0, as_stream(stream)>>>(dst.data, dst.dtype, Indexer(dst), n,
                                                               value);
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
