#include "norms.h"

namespace bg {

LayerNorm::LayerNorm(int64_t dim, bool with_bias, double eps) : eps_(eps) {
  weight = register_parameter("weight", ones({dim}));
  if (with_bias) bias = register_parameter("bias", zeros({dim}));
}

NormedActivations LayerNorm::forward_quantized(const Tensor& x, const ActQuantOptions& opt) const {
  return layernorm_quantize(x, weight, bias, eps_,
                            stored_dtype(compute_mode(), Consumer::matmul, x.dtype(), x.device()),
                            opt);
}

RMSNorm::RMSNorm(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", ones({dim}));
}

}  // namespace bg
