// optimizer.cpp (CPU): AdamW (decoupled weight decay, bias-corrected) and SGD with momentum.
// grad_scale, when given, multiplies the gradient first (gradient clipping without a host sync).
#include <cmath>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {

void adamw_step(const KView& param, const KView& grad, const KView& m, const KView& v,
                const AdamWParams& p, const KView& grad_scale, StreamHandle) {
  float* w = ptr<float>(param);
  const float* g = ptr<float>(grad);
  float* mm = ptr<float>(m);
  float* vv = ptr<float>(v);
  const float scale = grad_scale.data ? *ptr<float>(grad_scale) : 1.0f;
  const float bc1 = p.hyper ? p.hyper[1] : p.bias_correction1,
              bc2 = p.hyper ? p.hyper[2] : p.bias_correction2;
  const float lr = p.hyper ? p.hyper[0] : p.lr;
  for (int64_t i = 0, n = param.numel(); i < n; ++i) {
    const float gi = g[i] * scale;
    mm[i] = p.beta1 * mm[i] + (1.0f - p.beta1) * gi;
    vv[i] = p.beta2 * vv[i] + (1.0f - p.beta2) * gi * gi;
    const float mhat = mm[i] / bc1, vhat = vv[i] / bc2;
    w[i] -= lr * (mhat / (std::sqrt(vhat) + p.eps) + p.weight_decay * w[i]);
  }
}

void sgd_step(const KView& param, const KView& grad, const KView& momentum_buf, float lr,
              float momentum, float weight_decay, const KView& grad_scale, StreamHandle) {
  float* w = ptr<float>(param);
  const float* g = ptr<float>(grad);
  float* buf = ptr<float>(momentum_buf);
  const float scale = grad_scale.data ? *ptr<float>(grad_scale) : 1.0f;
  for (int64_t i = 0, n = param.numel(); i < n; ++i) {
    const float gi = g[i] * scale + weight_decay * w[i];
    buf[i] = momentum * buf[i] + gi;
    w[i] -= lr * buf[i];
  }
}

void mark_first_nonfinite(const KView& flag, const KView& value, int64_t step, StreamHandle) {
  int64_t* f = ptr<int64_t>(flag);
  if (*f == 0 && !std::isfinite(*ptr<float>(value))) *f = step;
}

}  // namespace bg::cpu
