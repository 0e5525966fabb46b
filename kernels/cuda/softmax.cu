// softmax.cu: softmax / log_softmax over contiguous rows, one block per row (threads sized to
// the row, 32..256). Three passes over the row: max, sum of exp, write; the row stays in L1/L2.
// The reduction tree depends only on the row length: deterministic.
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

int threads_for(int64_t cols) {
  int t = 32;
  while (t < 256 && t < cols) t *= 2;
  return t;
}

template <typename T>
__global__ void softmax_forward_kernel(T* y, const T* x, int64_t cols, bool log) {
  __shared__ float scratch[32];
  const T* row = x + int64_t(blockIdx.x) * cols;
  T* out = y + int64_t(blockIdx.x) * cols;
  float mx = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) mx = fmaxf(mx, to_float(row[c]));
  mx = block_reduce<true>(mx, scratch);
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(to_float(row[c]) - mx);
  s = block_reduce<false>(s, scratch);
  const float lse = logf(s);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float z = to_float(row[c]) - mx - lse;
    out[c] = from_float<T>(log ? z : expf(z));
  }
}

template <typename T>
__global__ void softmax_backward_kernel(T* dx, const T* y, const T* dy, int64_t cols, bool log) {
  __shared__ float scratch[32];
  const int64_t base = int64_t(blockIdx.x) * cols;
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    s += log ? to_float(dy[base + c]) : to_float(dy[base + c]) * to_float(y[base + c]);
  s = block_reduce<false>(s, scratch);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float yi = to_float(y[base + c]), gi = to_float(dy[base + c]);
    dx[base + c] = from_float<T>(log ? gi - expf(yi) * s : yi * (gi - s));
  }
}

}  // namespace

void softmax_forward(const KView& y, const KView& x, bool log, StreamHandle stream) {
  const int64_t cols = x.shape[x.ndim - 1];
  if (cols == 0 || x.numel() == 0) return;
  const int64_t rows = x.numel() / cols;
  dispatch_float(x.dtype, "softmax", [&](auto zero) {
    using T = decltype(zero);
    softmax_forward_kernel<T><<<unsigned(rows), threads_for(cols), 0, as_stream(stream)>>>(
        static_cast<T*>(y.data), static_cast<const T*>(x.data), cols, log);
  });
  BG_CUDA_LAUNCH_CHECK();
}

void softmax_backward(const KView& dx, const KView& y, const KView& dy, bool log,
                      StreamHandle stream) {
  const int64_t cols = y.shape[y.ndim - 1];
  if (cols == 0 || y.numel() == 0) return;
  const int64_t rows = y.numel() / cols;
  dispatch_float(y.dtype, "softmax_backward", [&](auto zero) {
    using T = decltype(zero);
    softmax_backward_kernel<T><<<unsigned(rows), threads_for(cols), 0, as_stream(stream)>>>(
        static_cast<T*>(dx.data), static_cast<const T*>(y.data), static_cast<const T*>(dy.data),
        cols, log);
  });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
