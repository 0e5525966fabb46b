#include "bitlinear.h"

namespace bg {

BitLinear::BitLinear(int64_t in, int64_t out, bool with_bias, const BitLinearOptions& opt,
                     Generator& gen, double init_std)
    : opt_(opt) {
  BG_CHECK(in > 0 && out > 0, "bitlinear", "sizes must be positive, got in ", in, ", out ", out);
  weight = register_parameter("weight", randn({out, in}, gen, 0.0, init_std));
  if (with_bias) bias = register_parameter("bias", zeros({out}));
}

Tensor BitLinear::forward(const Tensor& x, Consumer consumer) const {
  return bitlinear(x, weight, bias, opt_, compute_mode(), consumer);
}

}  // namespace bg
