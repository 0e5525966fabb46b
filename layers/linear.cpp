#include "linear.h"

#include "bitlinear.h"

namespace bg {

Linear::Linear(int64_t in, int64_t out, bool with_bias, Generator& gen, double init_std) {
  BG_CHECK(in > 0 && out > 0, "linear", "sizes must be positive, got in ", in, ", out ", out);
  weight = register_parameter("weight", randn({out, in}, gen, 0.0, init_std));
  if (with_bias) bias = register_parameter("bias", zeros({out}));
}

Tensor Linear::forward(const Tensor& x, Consumer consumer) const {
  // linear() adds a bias in the product's epilogue, before a narrowed output's one rounding.
  return linear(x, weight, bias, compute_mode().at(site()), consumer);
}

Tensor Linear::forward_onto(const Tensor& x, const Tensor& residual) const {
  return linear(x, weight, bias, compute_mode().at(site()), Consumer::any, residual);
}

std::shared_ptr<LinearLayer> make_linear(const LinearSpec& spec, int64_t in, int64_t out, bool bias,
                                         Generator& gen, double init_std, MatmulSite site) {
  std::shared_ptr<LinearLayer> layer;
  switch (spec.kind) {
    case LinearKind::dense:
      layer = std::make_shared<Linear>(in, out, bias, gen, init_std);
      break;
    case LinearKind::bitlinear:
      layer = std::make_shared<BitLinear>(in, out, bias, spec.bitlinear, gen, init_std);
      break;
  }
  BG_CHECK(layer, "linear", "unknown linear kind ", int(spec.kind));
  layer->set_site(site);
  return layer;
}

}  // namespace bg
