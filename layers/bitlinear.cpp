#include "bitlinear.h"

#include <algorithm>
#include <optional>

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

void BitLinear::set_quantized_input(const Tensor& x, QuantizedActivations q) const {
  prepared_.input = std::move(q);
  prepared_input_of_ = x;
}

BitLinearPrepared BitLinear::take_prepared(const Tensor& x) const {
  BitLinearPrepared p = std::move(prepared_);
  const Tensor& of = prepared_input_of_;
  const bool same_input = of.defined() && of.data_ptr() == x.data_ptr() &&
                          of.shape() == x.shape() && of.dtype() == x.dtype() &&
                          of.strides() == x.strides();
  if (!same_input) p.input = QuantizedActivations();
  prepared_ = BitLinearPrepared();
  prepared_input_of_ = Tensor();
  return p;
}

Tensor BitLinear::forward(const Tensor& x, Consumer consumer) const {
  const ComputeMode mode = compute_mode().at(site());
  if (is_packed()) return bitlinear_packed(x, packed_, bias, opt_, mode, consumer);
  return bitlinear(x, weight, bias, opt_, mode, consumer, Tensor(), take_prepared(x));
}

Tensor BitLinear::forward_onto(const Tensor& x, const Tensor& residual) const {
  if (is_packed()) return residual + forward(x);
  return bitlinear(x, weight, bias, opt_, compute_mode().at(site()), Consumer::any, residual,
                   take_prepared(x));
}

void quantize_bitlinear_weights(const std::vector<const Module*>& roots) {
  // One ternary_quantize_all per (weight scale, W~ dtype): a GPT's layers all share one.
  struct Batch {
    TernaryScale method;
    std::optional<DType> tilde;
    std::vector<const BitLinear*> layers;
    std::vector<Tensor> weights;
  };
  std::vector<Batch> batches;
  const bool grads = grad_enabled();
  std::vector<const BitLinear*> found;
  for (const Module* root : roots) {
    if (const auto* layer = dynamic_cast<const BitLinear*>(root)) found.push_back(layer);
    for (const auto& named : root->named_modules())
      if (const auto* layer = dynamic_cast<const BitLinear*>(named.second.get()))
        found.push_back(layer);
  }
  for (const BitLinear* layer : found) {
    if (layer->is_packed()) continue;
    std::optional<DType> tilde;
    if (grads && layer->weight.requires_grad())
      tilde =
          bitlinear_operand_dtype(layer->compute_mode().at(layer->site()), layer->weight.device());
    const TernaryScale method = layer->options().weight_scale;
    auto same = [&](const Batch& b) {
      return b.method == method && b.tilde == tilde &&
             b.weights[0].device() == layer->weight.device();
    };
    auto it = std::find_if(batches.begin(), batches.end(), same);
    if (it == batches.end()) it = batches.insert(batches.end(), Batch{method, tilde, {}, {}});
    it->layers.push_back(layer);
    it->weights.push_back(layer->weight);
  }
  for (const Batch& b : batches) {
    std::vector<TernaryWeights> q = ternary_quantize_all(b.weights, b.method, b.tilde);
    for (size_t i = 0; i < q.size(); ++i) b.layers[i]->set_quantized(std::move(q[i]));
  }
}

}  // namespace bg
