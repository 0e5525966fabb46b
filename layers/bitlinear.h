// bitlinear.h: the BitLinear layer, model.linear: bitlinear (docs/bitlinear.md).
#pragma once
#include "linear.h"

namespace bg {

// BitNet b1.58 (core/bitlinear.h): latent f32 weights, ternary in the forward, int8 activations
// after a parameter-free norm, the exact integer product; straight-through gradients. The same
// parameters and names as Linear, so a checkpoint's latent weights load into nanoGPT.
class BitLinear : public LinearLayer {
 public:
  BitLinear(int64_t in, int64_t out, bool bias, const BitLinearOptions& opt, Generator& gen,
            double init_std = 0.02);
  Tensor forward(const Tensor& x, Consumer consumer = Consumer::any) const override;
  // The residual added in the int8 product's epilogue (training forward; the packed inference
  // forward adds it after), residual + forward(x) bit for bit.
  Tensor forward_onto(const Tensor& x, const Tensor& residual) const override;
  LinearKind kind() const override { return LinearKind::bitlinear; }
  const BitLinearOptions& options() const { return opt_; }
  // Inference on packed weights (a `bitgrad export --packed` file): the latent weight is
  // released and the forward runs bitlinear_packed, whose results equal the latent forward's
  // bit for bit. `packed` lives on the device the layer runs on.
  void use_packed(PackedTernary packed);
  const PackedTernary& packed() const { return packed_; }
  bool is_packed() const { return packed_.w2.defined(); }
  // Weights quantised ahead (quantize_bitlinear_weights) for the next forward, which takes them;
  // a forward finding none quantises its own. Either way the bits are the same.
  void set_quantized(TernaryWeights w) const { prepared_.weights = std::move(w); }
  const ActQuantOptions* input_quantizer() const override {
    return is_packed() ? nullptr : &opt_.act;
  }
  // The next forward takes q when its input is x itself (same data, shape and dtype).
  void set_quantized_input(const Tensor& x, QuantizedActivations q) const override;
  Tensor weight, bias;

 private:
  BitLinearPrepared take_prepared(const Tensor& x) const;
  BitLinearOptions opt_;
  PackedTernary packed_;
  mutable BitLinearPrepared prepared_;
  mutable Tensor prepared_input_of_;  // the x prepared_.input was made from
};

// Quantises the latent weight of every BitLinear layer under `roots` at once (ternary_quantize_all
// per weight scale; on CUDA three launches for the lot), with W~ in the backward's operand dtype
// while gradients are on, and hands each layer its result for its next forward. A model calls it
// at the start of a forward that runs every one of those layers once, so no result outlives the
// weights it was made from.
void quantize_bitlinear_weights(const std::vector<const Module*>& roots);

}  // namespace bg
