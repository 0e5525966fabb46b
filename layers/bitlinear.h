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
  LinearKind kind() const override { return LinearKind::bitlinear; }
  const BitLinearOptions& options() const { return opt_; }
  Tensor weight, bias;

 private:
  BitLinearOptions opt_;
};

}  // namespace bg
