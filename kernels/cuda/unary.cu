// unary.cu: elementwise unary ops and their backward. Formulas come from elementwise_math.h
// (shared with the CPU reference); T is the storage type, math runs in float.
#include "../elementwise_math.h"
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

// kOp >= 0 fixes the op at compile time (GELU, the hot one in GPT's MLP, in both forms: its
// tanh or erf then runs without the per-element switch); -1 reads it at run time. Eight elements
// per thread, moved as two Vec4s when every pointer is aligned to them (`vector`), every load
// issued before any value is used: a bf16 Vec4 is only 8 bytes, and one per thread leaves too few
// bytes in flight to keep HBM busy.
constexpr int kVecs = 2;               // Vec4s per thread
constexpr int kPerThread = 4 * kVecs;  // elements per thread

template <typename T, typename TOut, int kOp>
__global__ void unary_forward_kernel(UnaryOp op, TOut* out, const T* x, int64_t n, float a, float b,
                                     bool vector) {
  if (kOp >= 0) op = UnaryOp(kOp);
  BG_GRID_LOOP(g, (n + kPerThread - 1) / kPerThread) {
    const int64_t first = kPerThread * g;
    if (vector && first + kPerThread - 1 < n) {
      Vec4<T> in[kVecs];
#pragma unroll
      for (int k = 0; k < kVecs; ++k) in[k] = reinterpret_cast<const Vec4<T>*>(x)[kVecs * g + k];
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        Vec4<TOut> o;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          o.v[j] = from_float<TOut>(unary_scalar<float>(op, to_float(in[k].v[j]), a, b));
        reinterpret_cast<Vec4<TOut>*>(out)[kVecs * g + k] = o;
      }
      continue;
    }
    for (int64_t i = first; i < n && i < first + kPerThread; ++i)
      out[i] = from_float<TOut>(unary_scalar<float>(op, to_float(x[i]), a, b));
  }
}

// Backward of ops whose gradient needs x (GELU's does) or y; the other may be null.
template <typename T, typename TG, int kOp>
__global__ void unary_backward_kernel(UnaryOp op, T* dx, const T* x, const T* y, const TG* dy,
                                      int64_t n, float a, bool vector) {
  if (kOp >= 0) op = UnaryOp(kOp);
  BG_GRID_LOOP(g, (n + kPerThread - 1) / kPerThread) {
    const int64_t first = kPerThread * g;
    if (vector && first + kPerThread - 1 < n) {
      Vec4<TG> g4[kVecs];
      Vec4<T> x4[kVecs]{}, y4[kVecs]{};
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        g4[k] = reinterpret_cast<const Vec4<TG>*>(dy)[kVecs * g + k];
        if (x) x4[k] = reinterpret_cast<const Vec4<T>*>(x)[kVecs * g + k];
        if (y) y4[k] = reinterpret_cast<const Vec4<T>*>(y)[kVecs * g + k];
      }
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        Vec4<T> o;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          o.v[j] = from_float<T>(unary_scalar_grad<float>(op, x ? to_float(x4[k].v[j]) : 0.f,
                                                          y ? to_float(y4[k].v[j]) : 0.f,
                                                          to_float(g4[k].v[j]), a));
        reinterpret_cast<Vec4<T>*>(dx)[kVecs * g + k] = o;
      }
      continue;
    }
    for (int64_t i = first; i < n && i < first + kPerThread; ++i) {
      const float xi = x ? to_float(x[i]) : 0.f, yi = y ? to_float(y[i]) : 0.f;
      dx[i] = from_float<T>(unary_scalar_grad<float>(op, xi, yi, to_float(dy[i]), a));
    }
  }
}

}  // namespace

void unary_forward(UnaryOp op, const KView& out, const KView& x, double a, double b,
                   StreamHandle stream) {
  const int64_t n = x.numel();
  if (n == 0) return;
  auto launch = [&](auto in, auto o) {
    using T = decltype(in);
    using TOut = decltype(o);
    auto kernel = op == UnaryOp::gelu       ? unary_forward_kernel<T, TOut, int(UnaryOp::gelu)>
                  : op == UnaryOp::gelu_erf ? unary_forward_kernel<T, TOut, int(UnaryOp::gelu_erf)>
                                            : unary_forward_kernel<T, TOut, -1>;
    kernel<<<grid_for((n + kPerThread - 1) / kPerThread, 256), 256, 0, as_stream(stream)>>>(
        op, static_cast<TOut*>(out.data), static_cast<const T*>(x.data), n, float(a), float(b),
        vec4_aligned<TOut>(out.data) && vec4_aligned<T>(x.data));
  };
  dispatch_float_or_bf16(x.dtype, out.dtype, "unary", "output", launch);
  BG_CUDA_LAUNCH_CHECK();
}

void unary_backward(UnaryOp op, const KView& dx, const KView& x, const KView& y, const KView& dy,
                    double a, StreamHandle stream) {
  const int64_t n = dy.numel();
  if (n == 0) return;
  auto launch = [&](auto xt, auto gt) {
    using T = decltype(xt);
    using TG = decltype(gt);
    auto kernel = op == UnaryOp::gelu       ? unary_backward_kernel<T, TG, int(UnaryOp::gelu)>
                  : op == UnaryOp::gelu_erf ? unary_backward_kernel<T, TG, int(UnaryOp::gelu_erf)>
                                            : unary_backward_kernel<T, TG, -1>;
    kernel<<<grid_for((n + kPerThread - 1) / kPerThread, 256), 256, 0, as_stream(stream)>>>(
        op, static_cast<T*>(dx.data), static_cast<const T*>(x.data), static_cast<const T*>(y.data),
        static_cast<const TG*>(dy.data), n, float(a),
        vec4_aligned<T>(dx.data) && vec4_aligned<T>(x.data) && vec4_aligned<T>(y.data) &&
            vec4_aligned<TG>(dy.data));
  };
  dispatch_float_or_bf16(dx.dtype, dy.dtype, "unary_backward", "gradient", launch);
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
