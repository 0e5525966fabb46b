// optimizer.cu: one fused kernel per optimizer step over a flat f32 buffer: reads grad, param
// and state once, writes param and state once. grad_scale (device scalar, may be null) applies
// gradient clipping without a host round trip.
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

__global__ void adamw_kernel(float* w, const float* g, float* m, float* v, int64_t n, AdamWParams p,
                             const float* grad_scale) {
  const float scale = grad_scale ? *grad_scale : 1.f;
  const float lr = p.hyper ? p.hyper[0] : p.lr;
  const float bc1 = p.hyper ? p.hyper[1] : p.bias_correction1,
              bc2 = p.hyper ? p.hyper[2] : p.bias_correction2;
  BG_GRID_LOOP(i, n) {
    const float gi = g[i] * scale;
    const float mi = p.beta1 * m[i] + (1.f - p.beta1) * gi;
    const float vi = p.beta2 * v[i] + (1.f - p.beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float mhat = mi / bc1, vhat = vi / bc2;
    w[i] -= lr * (mhat / (sqrtf(vhat) + p.eps) + p.weight_decay * w[i]);
  }
}

__global__ void sgd_kernel(float* w, const float* g, float* buf, int64_t n, float lr,
                           float momentum, float weight_decay, const float* grad_scale) {
  const float scale = grad_scale ? *grad_scale : 1.f;
  BG_GRID_LOOP(i, n) {
    const float gi = g[i] * scale + weight_decay * w[i];
    const float b = momentum * buf[i] + gi;
    buf[i] = b;
    w[i] -= lr * b;
  }
}

__global__ void mark_first_nonfinite_kernel(int64_t* flag, const float* value, int64_t step) {
  if (*flag == 0 && !isfinite(*value)) *flag = step;
}

}  // namespace

void adamw_step(const KView& param, const KView& grad, const KView& m, const KView& v,
                const AdamWParams& p, const KView& grad_scale, StreamHandle stream) {
  const int64_t n = param.numel();
  if (n == 0) return;
  adamw_kernel<<<grid_for(n, 256), 256, 0, as_stream(stream)>>>(
      static_cast<float*>(param.data), static_cast<const float*>(grad.data),
      static_cast<float*>(m.data), static_cast<float*>(v.data), n, p,
      static_cast<const float*>(grad_scale.data));
  BG_CUDA_LAUNCH_CHECK();
}

void sgd_step(const KView& param, const KView& grad, const KView& momentum_buf, float lr,
              float momentum, float weight_decay, const KView& grad_scale, StreamHandle stream) {
  const int64_t n = param.numel();
  if (n == 0) return;
  sgd_kernel<<<grid_for(n, 256), 256, 0, as_stream(stream)>>>(
      static_cast<float*>(param.data), static_cast<const float*>(grad.data),
      static_cast<float*>(momentum_buf.data), n, lr, momentum, weight_decay,
      static_cast<const float*>(grad_scale.data));
  BG_CUDA_LAUNCH_CHECK();
}

void mark_first_nonfinite(const KView& flag, const KView& value, int64_t step,
                          StreamHandle stream) {
  mark_first_nonfinite_kernel<<<1, 1, 0, as_stream(stream)>>>(
      static_cast<int64_t*>(flag.data), static_cast<const float*>(value.data), step);
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
