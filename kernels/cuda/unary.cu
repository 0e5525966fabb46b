// unary.cu: elementwise unary ops and their backward. Formulas come from elementwise_math.h
// (shared with the CPU reference); T is the storage type, math runs in float.
#include "../elementwise_math.h"
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

template <typename T>
__global__ void unary_forward_kernel(UnaryOp op, T* out, const T* x, int64_t n, float a, float b) {
  BG_GRID_LOOP(i, n) { out[i] = from_float<T>(unary_scalar<float>(op, to_float(x[i]), a, b)); }
}

template <typename T>
__global__ void unary_backward_kernel(UnaryOp op, T* dx, const T* x, const T* y, const T* dy,
                                      int64_t n, float a) {
  BG_GRID_LOOP(i, n) {
    const float xi = x ? to_float(x[i]) : 0.f, yi = y ? to_float(y[i]) : 0.f;
    dx[i] = from_float<T>(unary_scalar_grad<float>(op, xi, yi, to_float(dy[i]), a));
  }
}

}  // namespace

void unary_forward(UnaryOp op, const KView& out, const KView& x, double a, double b,
                   StreamHandle stream) {
  const int64_t n = x.numel();
  if (n == 0) return;
  dispatch_float(x.dtype, "unary", [&](auto zero) {
    using T = decltype(zero);
    unary_forward_kernel<T><<<grid_for(n, 256), 256, 0, as_stream(stream)>>>(
        op, static_cast<T*>(out.data), static_cast<const T*>(x.data), n, float(a), float(b));
  });
  BG_CUDA_LAUNCH_CHECK();
}

void unary_backward(UnaryOp op, const KView& dx, const KView& x, const KView& y, const KView& dy,
                    double a, StreamHandle stream) {
  const int64_t n = dy.numel();
  if (n == 0) return;
  dispatch_float(dy.dtype, "unary_backward", [&](auto zero) {
    using T = decltype(zero);
    unary_backward_kernel<T><<<grid_for(n, 256), 256, 0, as_stream(stream)>>>(
        op, static_cast<T*>(dx.data), static_cast<const T*>(x.data), static_cast<const T*>(y.data),
        static_cast<const T*>(dy.data), n, float(a));
  });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
