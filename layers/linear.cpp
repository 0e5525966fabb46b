#include "linear.h"

#include "bitlinear.h"

namespace bg {

const Settings<BitLinearOptions>& bitlinear_settings() {
  static const Settings<BitLinearOptions> s = [] {
    Settings<BitLinearOptions> s;
    s.choice("bitlinear.weight_scale", [](auto& o) -> auto& { return o.weight_scale; },
             "ternary weight scale: absmean or absmedian of |W|", kArchitecture);
    s.integer("bitlinear.act_bits", [](auto& o) -> auto& { return o.act.bits; }, 2, 8,
              "activation bits per row after the norm (2 to 8)", kArchitecture);
    s.choice("bitlinear.norm", [](auto& o) -> auto& { return o.act.norm; },
             "parameter-free norm before the activation quantiser", kArchitecture);
    return s;
  }();
  return s;
}

const Settings<LinearSpec>& linear_settings() {
  static const Settings<LinearSpec> s = [] {
    Settings<LinearSpec> s("gpt");
    // Files before model.linear had dense layers.
    s.choice("model.linear", [](auto& l) -> auto& { return l.kind; },
             "the projections' layer kind, dense or bitlinear (BitNet b1.58)",
             kArchitecture | kOptional);
    s.when([](const LinearSpec& l) { return l.kind == LinearKind::bitlinear; },
           [](const LinearSpec&) { return std::string("model.linear is dense"); });
    s.nested(bitlinear_settings(), [](auto& l) -> auto& { return l.bitlinear; });
    return s;
  }();
  return s;
}

Linear::Linear(int64_t in, int64_t out, bool with_bias, Generator& gen, double init_std) {
  BG_CHECK(in > 0 && out > 0, "linear", "sizes must be positive, got in ", in, ", out ", out);
  weight = register_parameter("weight", randn({out, in}, gen, 0.0, init_std));
  if (with_bias) bias = register_parameter("bias", zeros({out}));
}

Tensor Linear::forward(const Tensor& x, Consumer consumer) const {
  // linear() adds a bias in the product's epilogue, before a narrowed output's one rounding.
  return linear(x, weight, bias, compute_mode().at(site()), consumer);
}

GeluOutput Linear::forward_gelu(const Tensor& x) const {
  const ComputeMode mode = compute_mode().at(site());
  // The epilogue's product and GELU run in the site's mode; elsewhere the two layers' ops as
  // the base class runs them (the GELU stored for the module's mode).
  if (!gelu_in_epilogue(mode, x, weight, bias)) return LinearLayer::forward_gelu(x);
  GeluOutput h;
  h.act = linear_gelu(x, weight, bias, mode, &h.pre);
  return h;
}

Tensor Linear::forward_after_gelu(const GeluOutput& h, const Tensor& residual) const {
  return linear(h.act, weight, bias, compute_mode().at(site()), Consumer::any, residual, h.pre);
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
