// softmax.cu: softmax / log_softmax over contiguous rows, one block per row (threads sized to
// the row, 32..256). Three passes over the row: max, sum of exp, write; the row stays in L1/L2.
// The reduction tree depends only on the row length: deterministic. Optional logit scale and
// causal mask (SoftmaxOptions): hidden columns are neither read into the sums nor nonzero.
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

int threads_for(int64_t cols) {
  int t = 32;
  while (t < 256 && t < cols) t *= 2;
  return t;
}

// Columns row r may see: all, or i + offset + 1 for row i = r mod T of a causal (T, S) matrix.
__device__ __forceinline__ int64_t visible_columns(int64_t causal_rows, int64_t causal_offset,
                                                   int64_t r, int64_t cols) {
  if (causal_rows <= 0) return cols;
  return min(cols, r % causal_rows + causal_offset + 1);
}

template <typename T>
__global__ void softmax_forward_kernel(T* y, const T* x, int64_t cols, bool log, float scale,
                                       int64_t causal_rows, int64_t causal_offset) {
  __shared__ float scratch[32];
  const T* row = x + int64_t(blockIdx.x) * cols;
  T* out = y + int64_t(blockIdx.x) * cols;
  const int64_t n = visible_columns(causal_rows, causal_offset, blockIdx.x, cols);
  float mx = -INFINITY;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) mx = fmaxf(mx, scale * to_float(row[c]));
  mx = block_reduce<true>(mx, scratch);
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) s += expf(scale * to_float(row[c]) - mx);
  s = block_reduce<false>(s, scratch);
  const float lse = logf(s);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = 0.f;
    if (c < n) {
      const float z = scale * to_float(row[c]) - mx - lse;
      v = log ? z : expf(z);
    }
    out[c] = from_float<T>(v);
  }
}

template <typename T>
__global__ void softmax_backward_kernel(T* dx, const T* y, const T* dy, int64_t cols, bool log,
                                        float scale, int64_t causal_rows, int64_t causal_offset) {
  __shared__ float scratch[32];
  const int64_t base = int64_t(blockIdx.x) * cols;
  const int64_t n = visible_columns(causal_rows, causal_offset, blockIdx.x, cols);
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x)
    s += log ? to_float(dy[base + c]) : to_float(dy[base + c]) * to_float(y[base + c]);
  s = block_reduce<false>(s, scratch);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float d = 0.f;
    if (c < n) {
      const float yi = to_float(y[base + c]), gi = to_float(dy[base + c]);
      d = scale * (log ? gi - expf(yi) * s : yi * (gi - s));
    }
    dx[base + c] = from_float<T>(d);
  }
}

int64_t causal_offset_of(const SoftmaxOptions& opt, int64_t cols) {
  return opt.causal_offset >= 0 ? opt.causal_offset : cols - opt.causal_rows;
}

}  // namespace

void softmax_forward(const KView& y, const KView& x, const SoftmaxOptions& opt,
                     StreamHandle stream) {
  const int64_t cols = x.shape[x.ndim - 1];
  if (cols == 0 || x.numel() == 0) return;
  const int64_t rows = x.numel() / cols;
  dispatch_float(x.dtype, "softmax", [&](auto zero) {
    using T = decltype(zero);
    softmax_forward_kernel<T><<<unsigned(rows), threads_for(cols), 0, as_stream(stream)>>>(
        static_cast<T*>(y.data), static_cast<const T*>(x.data), cols, opt.log, float(opt.scale),
        opt.causal_rows, causal_offset_of(opt, cols));
  });
  BG_CUDA_LAUNCH_CHECK();
}

void softmax_backward(const KView& dx, const KView& y, const KView& dy, const SoftmaxOptions& opt,
                      StreamHandle stream) {
  const int64_t cols = y.shape[y.ndim - 1];
  if (cols == 0 || y.numel() == 0) return;
  const int64_t rows = y.numel() / cols;
  dispatch_float(y.dtype, "softmax_backward", [&](auto zero) {
    using T = decltype(zero);
    softmax_backward_kernel<T><<<unsigned(rows), threads_for(cols), 0, as_stream(stream)>>>(
        static_cast<T*>(dx.data), static_cast<const T*>(y.data), static_cast<const T*>(dy.data),
        cols, opt.log, float(opt.scale), opt.causal_rows, causal_offset_of(opt, cols));
  });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
