// binary.cu: broadcasting binary ops (inputs arrive as strided views of the output's shape,
// stride 0 on broadcast dims), comparisons writing u8, and where(cond, a, b).
#include "../elementwise_math.h"
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

template <typename T, typename Out>
__global__ void binary_kernel(BinaryOp op, Out* out, const T* a, const T* b, Indexer ia, Indexer ib,
                              int64_t n) {
  BG_GRID_LOOP(i, n) {
    const float r = binary_scalar<float>(op, to_float(a[ia.offset(i)]), to_float(b[ib.offset(i)]));
    if constexpr (std::is_same_v<Out, uint8_t>) {
      out[i] = uint8_t(r != 0.f);
    } else {
      out[i] = from_float<Out>(r);
    }
  }
}

template <typename T>
__global__ void where_kernel(T* out, const uint8_t* cond, const T* a, const T* b, Indexer ic,
                             Indexer ia, Indexer ib, int64_t n) {
  BG_GRID_LOOP(i, n) { out[i] = cond[ic.offset(i)] ? a[ia.offset(i)] : b[ib.offset(i)]; }
}

}  // namespace

void binary_forward(BinaryOp op, const KView& out, const KView& a, const KView& b,
                    StreamHandle stream) {
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_float(a.dtype, "binary", [&](auto zero) {
    using T = decltype(zero);
    const unsigned grid = grid_for(n, 256);
    if (binary_is_comparison(op)) {
      binary_kernel<T, uint8_t><<<grid, 256, 0, as_stream(stream)>>>(
          op, static_cast<uint8_t*>(out.data), static_cast<const T*>(a.data),
          static_cast<const T*>(b.data), Indexer(a), Indexer(b), n);
    } else {
      binary_kernel<T, T><<<grid, 256, 0, as_stream(stream)>>>(
          op, static_cast<T*>(out.data), static_cast<const T*>(a.data),
          static_cast<const T*>(b.data), Indexer(a), Indexer(b), n);
    }
  });
  BG_CUDA_LAUNCH_CHECK();
}

void where_forward(const KView& out, const KView& cond, const KView& a, const KView& b,
                   StreamHandle stream) {
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_float(a.dtype, "where", [&](auto zero) {
    using T = decltype(zero);
    where_kernel<T><<<grid_for(n, 256), 256, 0, as_stream(stream)>>>(
        static_cast<T*>(out.data), static_cast<const uint8_t*>(cond.data),
        static_cast<const T*>(a.data), static_cast<const T*>(b.data), Indexer(cond), Indexer(a),
        Indexer(b), n);
  });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
