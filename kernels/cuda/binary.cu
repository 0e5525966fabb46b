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

// One operand read through a transpose: out, viewed as R x C rows, takes t[c * R + r] (t a
// contiguous C x R matrix: the transposed view an (in, out) weight gradient makes of an (out, in)
// slot) and the other operand s contiguous. The generic kernel reads t down its columns, a
// 32-way uncoalesced load per warp; here a 32 x 32 tile of t goes through shared memory, read
// along its rows and written along out's. The same scalar op per element: the same bits.
constexpr int kTile = 32, kTileRows = 8;

template <typename T, bool kTransposedFirst>
__global__ void binary_transposed_kernel(BinaryOp op, T* out, const T* s, const T* t, int64_t rows,
                                         int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t r0 = int64_t(blockIdx.x) * kTile, c0 = int64_t(blockIdx.y) * kTile;
  for (int k = threadIdx.y; k < kTile; k += kTileRows) {  // t's row c0 + k, along r
    const int64_t c = c0 + k, r = r0 + threadIdx.x;
    if (c < cols && r < rows) tile[k][threadIdx.x] = to_float(t[c * rows + r]);
  }
  __syncthreads();
  for (int k = threadIdx.y; k < kTile; k += kTileRows) {  // out's row r0 + k, along c
    const int64_t r = r0 + k, c = c0 + threadIdx.x;
    if (r >= rows || c >= cols) continue;
    const float tv = tile[threadIdx.x][k], sv = to_float(s[r * cols + c]);
    out[r * cols + c] = from_float<T>(kTransposedFirst ? binary_scalar<float>(op, tv, sv)
                                                       : binary_scalar<float>(op, sv, tv));
  }
}

// Whether v, as out's R x C rows, is the transpose of a contiguous C x R matrix: R in *rows.
bool transposed_2d(const Indexer& v, int64_t* rows) {
  if (v.ndim != 2 || v.strides[0] != 1 || v.strides[1] != v.shape[0]) return false;
  *rows = v.shape[0];
  return true;
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
    const Indexer ia(a), ib(b);
    int64_t rows = 0;
    const bool a_t = transposed_2d(ia, &rows) && ib.contiguous && out.contiguous();
    const bool b_t = !a_t && transposed_2d(ib, &rows) && ia.contiguous && out.contiguous();
    // Not in place over the transposed operand itself (tiles read it while others write).
    const char* t_begin = static_cast<const char*>(a_t ? a.data : b.data);
    const char* o_begin = static_cast<const char*>(out.data);
    const int64_t bytes = n * int64_t(sizeof(T));
    const bool apart = t_begin + bytes <= o_begin || o_begin + bytes <= t_begin;
    if (!binary_is_comparison(op) && (a_t || b_t) && apart && n / rows <= 65535 * int64_t(kTile)) {
      const int64_t cols = n / rows;
      const dim3 grid(unsigned((rows + kTile - 1) / kTile), unsigned((cols + kTile - 1) / kTile));
      const dim3 block(kTile, kTileRows);
      T* o = static_cast<T*>(out.data);
      const T* pa = static_cast<const T*>(a.data);
      const T* pb = static_cast<const T*>(b.data);
      if (a_t)
        binary_transposed_kernel<T, true><<<grid, block, 0, as_stream(stream)>>>(op, o, pb, pa, rows, cols);
      else
        binary_transposed_kernel<T, false><<<grid, block, 0, as_stream(stream)>>>(op, o, pa, pb, rows, cols);
    } else if (binary_is_comparison(op)) {
      binary_kernel<T, uint8_t><<<grid, 256, 0, as_stream(stream)>>>(
          op, static_cast<uint8_t*>(out.data), static_cast<const T*>(a.data),
          static_cast<const T*>(b.data), ia, ib, n);
    } else {
      binary_kernel<T, T><<<grid, 256, 0, as_stream(stream)>>>(
          op, static_cast<T*>(out.data), static_cast<const T*>(a.data),
          static_cast<const T*>(b.data), ia, ib, n);
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
