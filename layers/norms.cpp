#include "norms.h"

namespace bg {

LayerNorm::LayerNorm(int64_t dim, bool with_bias, double eps) : eps_(eps) {
  weight = register_parameter("weight", ones({dim}));
  if (with_bias) bias = register_parameter("bias", zeros({dim}));
}

RMSNorm::RMSNorm(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", ones({dim}));
}

}  // namespace bg
