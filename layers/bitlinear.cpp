#include "bitlinear.h"

namespace bg {

BitLinear::BitLinear(int64_t in, int64_t out, bool with_bias, const BitLinearOptions& opt,
                     Generator& gen, double init_std)
    : opt_(opt) {
  BG_CHECK(in > 0 && out > 0, "bitlinear", "sizes must be positive, got in ", in, ", out ", out);
  weight = register_parameter("weight", randn({out, in}, gen, 0.0, init_std));
  if (with_bias) bias = register_parameter("bias", zeros({out}));
}

void BitLinear::use_packed(PackedTernary packed) {
  BG_CHECK(packed.k == weight.size(1) && packed.out_features() == weight.size(0), "bitlinear",
           "packed weights of ", packed.out_features(), " x ", packed.k, " for a ", weight.size(0),
           " x ", weight.size(1), " layer");
  packed_ = std::move(packed);
  release_parameter("weight");
  weight = Tensor();
}

Tensor BitLinear::forward(const Tensor& x, Consumer consumer) const {
  const ComputeMode mode = compute_mode().at(site());
  if (is_packed()) return bitlinear_packed(x, packed_, bias, opt_, mode, consumer);
  return bitlinear(x, weight, bias, opt_, mode, consumer);
}

Tensor BitLinear::forward_onto(const Tensor& x, const Tensor& residual) const {
  if (is_packed()) return residual + forward(x);
  return bitlinear(x, weight, bias, opt_, compute_mode().at(site()), Consumer::any, residual);
}

}  // namespace bg
