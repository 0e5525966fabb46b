// norms.h: LayerNorm and RMSNorm (PyTorch's parameter names: weight, bias).
#pragma once
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
