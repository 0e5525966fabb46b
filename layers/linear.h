// linear.h: linear layers and the one factory that picks them. A model asks make_linear for
// each projection (attention's c_attn/c_proj, the MLP's c_fc/c_proj), so a kind of linear layer
// (dense, BitLinear) is one class and one case here, not a fork in every layer.
#pragma once
#include <memory>
#include <string>

#include "core/bitlinear.h"
#include "core/settings.h"
#include "module.h"

namespace bg {

// model.linear: which layer the projections are.
#define BG_LINEAR_KINDS(X) X(dense, "dense") X(bitlinear, "bitlinear")
BG_NAMED_ENUM(LinearKind, BG_LINEAR_KINDS)

// A projection's kind and, for BitLinear, its quantisers (the bitlinear.* keys).
struct LinearSpec {
  LinearKind kind = LinearKind::dense;
  BitLinearOptions bitlinear;
};

// Their declared fields (core/settings.h): model.linear, and bitlinear.* under BitLinear.
const Settings<BitLinearOptions>& bitlinear_settings();
const Settings<LinearSpec>& linear_settings();

// A GELU's output as forward_gelu made it: act = gelu(pre), tanh form. pre is defined where the
// dense layer's epilogue made act (with the product's record): the projection that reads act
// may then hand pre its gradient itself (forward_after_gelu).
struct GeluOutput {
  Tensor act, pre;
};

// y = x W^T (+ b) for x (..., in), in the module's compute mode. Parameters follow PyTorch's
// layout and names (weight (out, in), bias (out)) so checkpoints map onto nanoGPT's state_dict.
class LinearLayer : public Module {
 public:
  // consumer == Consumer::matmul: y is read only by matmuls (or the attention kernel, or GELU
  // under autocast) of the same mode, so the layer may store it narrowed (stored_dtype), a bias
  // added before the one rounding (linear()).
  virtual Tensor forward(const Tensor& x, Consumer consumer = Consumer::any) const = 0;
  // residual + forward(x): a projection onto the residual stream. The dense layer adds it in its
  // GEMM's epilogue (one pass writes the stream); others add it after.
  virtual Tensor forward_onto(const Tensor& x, const Tensor& residual) const {
    return residual + forward(x);
  }
  // gelu(forward(x)) (tanh form), stored for the matmul that reads it. The dense layer applies
  // the GELU in its GEMM's epilogue where linear_gelu can (and then returns its input too).
  virtual GeluOutput forward_gelu(const Tensor& x) const {
    return {gelu(forward(x, Consumer::matmul), compute_mode()), Tensor()};
  }
  // forward_onto(h.act, residual), or forward(h.act) without a residual. The dense layer's
  // backward turns its input gradient into h.pre's in the GEMM's epilogue where linear can
  // (its gelu_input: GELU's backward without a pass of its own).
  virtual Tensor forward_after_gelu(const GeluOutput& h, const Tensor& residual) const {
    return residual.defined() ? forward_onto(h.act, residual) : forward(h.act);
  }
  virtual LinearKind kind() const = 0;
  // The quantiser this layer runs on its input, where it has one (BitLinear's). The kernel that
  // writes the layer's input may run it too (layernorm_quantize) and hand the result over.
  virtual const ActQuantOptions* input_quantizer() const { return nullptr; }
  // x quantised with input_quantizer's options, for the next forward whose input is x.
  virtual void set_quantized_input(const Tensor&, QuantizedActivations) const {}
  // Where the layer sits (lmul.scope picks sites): its products run in compute_mode().at(site).
  MatmulSite site() const { return site_; }
  void set_site(MatmulSite site) { site_ = site; }

 private:
  MatmulSite site_ = MatmulSite::projection;
};

// The dense layer: one matmul (cuBLAS or the mode's algorithm) plus the bias.
class Linear : public LinearLayer {
 public:
  // Weight N(0, init_std), bias zero.
  Linear(int64_t in, int64_t out, bool bias, Generator& gen, double init_std = 0.02);
  Tensor forward(const Tensor& x, Consumer consumer = Consumer::any) const override;
  Tensor forward_onto(const Tensor& x, const Tensor& residual) const override;
  GeluOutput forward_gelu(const Tensor& x) const override;
  Tensor forward_after_gelu(const GeluOutput& h, const Tensor& residual) const override;
  LinearKind kind() const override { return LinearKind::dense; }
  Tensor weight, bias;
};

// The factory: a linear layer of `spec.kind` at `site`, its initial values drawn from `gen` in
// the order the dense layer draws them.
std::shared_ptr<LinearLayer> make_linear(const LinearSpec& spec, int64_t in, int64_t out, bool bias,
                                         Generator& gen, double init_std = 0.02,
                                         MatmulSite site = MatmulSite::projection);

}  // namespace bg
