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
  Tensor weight, bias;

 private:
  BitLinearOptions opt_;
  PackedTernary packed_;
};

}  // namespace bg
