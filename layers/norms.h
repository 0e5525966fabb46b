// norms.h: LayerNorm and RMSNorm (PyTorch's parameter names: weight, bias).
#pragma once
#include "core/bitlinear.h"
#include "module.h"

namespace bg {

class LayerNorm : public Module {
 public:
  LayerNorm(int64_t dim, bool bias, double eps = 1e-5);
  Tensor forward(const Tensor& x) const { return layernorm(x, weight, bias, eps_); }
  // For an output whose only readers are matmuls of this module's mode: stored in the dtype
  // they read (core's stored_dtype rule), with no separate cast pass.
  Tensor forward_for_matmul(const Tensor& x) const {
    return layernorm(x, weight, bias, eps_, compute_mode());
  }
  // forward_for_matmul's output and, in the same pass, its activations quantised with `opt` for
  // the BitLinear layer that reads it (layernorm_quantize).
  NormedActivations forward_quantized(const Tensor& x, const ActQuantOptions& opt) const;
  Tensor weight, bias;

 private:
  double eps_;
};

class RMSNorm : public Module {
 public:
  RMSNorm(int64_t dim, double eps = 1e-6);
  Tensor forward(const Tensor& x) const { return rmsnorm(x, weight, eps_); }
  Tensor weight;

 private:
  double eps_;
};

}  // namespace bg
