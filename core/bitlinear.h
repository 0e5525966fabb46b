// bitlinear.h: BitNet b1.58's ops (docs/bitlinear.md). Weights are quantised per tensor to
// {-1, 0, +1} times beta, activations per row to int8 (act_bits) after a parameter-free norm, and
// the product of the two runs in exact integers, rescaled once. Training sees it through
// `bitlinear`, whose backward is the straight-through estimator of both quantisers.
//
// Scale convention (microsoft/BitNet PR #616 shows why it must be said): every scale here
// multiplies to dequantise. W~ = beta * W_q with beta = mean|W| (or the median), and x~ = step *
// x_q with step = gamma / Q, gamma = max|x_n| of the row. y = fma(float(x_q . W_q) * step, beta,
// bias): that is the one float rescale, the same on the CPU and CUDA.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "compute_mode.h"
#include "tensor.h"

namespace bg {

struct BitLinearOptions {
  TernaryScale weight_scale = TernaryScale::absmean;
  ActQuantOptions act;  // the norm before quantisation, act_bits, the norm's eps
};

// W (N, K) f32 -> q (N, K) i8 in {-1, 0, 1}, a view whose rows are padded to 16 bytes with
// zeros (what the int8 kernels read), and beta, an f32 scalar tensor. Deterministic: the mean
// sums in one fixed tree, the median is exact.
// An (rows, k) i8 view of a (rows, k rounded up to 16) allocation: what the int8 kernels take.
Tensor padded_int8(int64_t rows, int64_t k, Device device);

struct TernaryWeights {
  Tensor q, beta;
  // W~ = beta * W_q (N, K), int8_dequantize's bits, where it was asked for: what bitlinear's
  // backward multiplies by.
  Tensor tilde;
};
TernaryWeights ternary_quantize(const Tensor& weight, TernaryScale method);
// Several weights of one device at once: ternary_quantize of each, bit for bit (a weight's
// results do not depend on the others), with W~ in tilde_dtype beside each where one is given
// (f32, or bf16 on CUDA; f64 on the CPU). On CUDA absmean takes three launches for up to 48
// weights: a model quantises all its BitLinear weights so once a forward.
std::vector<TernaryWeights> ternary_quantize_all(const std::vector<Tensor>& weights,
                                                 TernaryScale method,
                                                 std::optional<DType> tilde_dtype = std::nullopt);

// x (M, K) -> q (M, K) i8 (rows padded as above), step (M) = gamma / Q, quant_scale (M) =
// Q / gamma (what x_n was multiplied by before rounding), and the norm's statistics for its
// backward (rstd (M); mean (M) for layernorm). The statistics alone recompute q from x
// (bitlinear_input_backward), so the backward need not keep q.
struct QuantizedActivations {
  Tensor q, step, quant_scale, mean, rstd;
  int bits = 8;  // act_bits: at 2 the values are ternary, -1, 0 or 1
};
QuantizedActivations act_quantize(const Tensor& x, const ActQuantOptions& opt);
// The tensors act_quantize fills for m rows of k features (statistics in `stats`), after checking
// opt (act_bits in [2, 8], eps > 0).
QuantizedActivations empty_quantized(int64_t m, int64_t k, DType stats, const ActQuantOptions& opt,
                                     Device device);

// layernorm(x, weight, bias, eps, out_dtype) and act_quantize of its output as stored (rows of
// the last dim), in one pass over x on CUDA where rows are up to 1024 wide: both results equal
// the two ops' in turn, bit for bit. y carries layernorm's gradient; q carries none (bitlinear's
// backward passes straight through its quantiser to y). What a LayerNorm runs for the BitLinear
// layer that reads its output.
struct NormedActivations {
  Tensor y;
  QuantizedActivations q;
};
NormedActivations layernorm_quantize(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                     double eps, DType out_dtype, const ActQuantOptions& opt);

// y (M, N) = fma(float(x.q . w.q^T) * x.step, w.beta, bias or 0) in out_dtype (f32, or bf16 on
// CUDA; f64 when x's statistics are f64). Exact integer product (int8 tensor cores on CUDA).
// A residual (M, N) of out_dtype is added in the epilogue, after y's rounding: residual + y
// bit for bit, in one pass.
Tensor int8_linear(const QuantizedActivations& x, const TernaryWeights& w, const Tensor& bias,
                   DType out_dtype, const Tensor& residual = Tensor());

// The input side of bitlinear's backward in one pass over x (M, K), the tensor act_quantize
// quantised into `stats`: x~ = step * x_q in x_tilde_dtype, x_q recomputed from x (equal to
// int8_dequantize(stats.q, stats.step) bit for bit), and dx, the parameter-free norm's backward
// of dxn (M, K) (layernorm_backward's bits; dxn itself for norm none). dxn has x's dtype, or
// bf16 for f32 x on CUDA.
struct BitLinearInputGradients {
  Tensor dx, x_tilde;
};
BitLinearInputGradients bitlinear_input_backward(const Tensor& dxn, const Tensor& x,
                                                 const QuantizedActivations& stats,
                                                 const ActQuantOptions& opt, DType x_tilde_dtype);
// q (R, C) i8 -> q * row_scale[r] * tensor_scale in out_dtype; either scale may be undefined.
Tensor int8_dequantize(const Tensor& q, const Tensor& row_scale, const Tensor& tensor_scale,
                       DType out_dtype);

// The 2-bit export layout (docs/bitlinear.md): w.q (N, K) -> (N, ceil(K / 4)) u8, four weights a
// byte, code w + 1 at bits 2 (k % 4) of byte k / 4, codes past K zero weights. unpack_ternary
// restores the padded i8 view the int8 kernels read; beta travels beside it unchanged.
Tensor pack_ternary(const TernaryWeights& w);
TernaryWeights unpack_ternary(const Tensor& packed, int64_t k, const Tensor& beta);

// Inference on packed weights (docs/bitlinear.md, "Inference kernels"). The W2A8 form: the 2-bit
// codes in the kernels' layout (kernel_list.h, w2_layout), (N, 32 ceil(K / 128)) u8, beside the
// same beta. Made from the export layout; K is any positive width.
struct PackedTernary {
  Tensor w2, beta;
  int64_t k = 0;
  int64_t out_features() const { return w2.defined() ? w2.size(0) : 0; }
};
PackedTernary w2_from_packed(const Tensor& packed, int64_t k, const Tensor& beta);
// int8_linear's result, bit for bit, read from the 2-bit weights: a dp4a GEMV at one row, int8
// tensor cores with the codes unpacked in registers above.
Tensor w2a8_linear(const QuantizedActivations& x, const PackedTernary& w, const Tensor& bias,
                   DType out_dtype);

// The bit-plane form (TritNet): a ternary matrix (R, K) as two bit planes, +1 and -1, each row
// 16 ceil(K / 128) bytes. bitplane_linear equals int8_linear bit for bit on ternary operands:
// activations quantised with act_bits 2 (or any i8 rows of -1, 0, 1, such as binary +-1).
struct TernaryPlanes {
  Tensor planes;  // (2, R, bytes) u8
  int64_t k = 0;
};
TernaryPlanes bitplanes(const Tensor& q);  // q (R, K) i8 in {-1, 0, 1}
Tensor bitplane_linear(const TernaryPlanes& x, const Tensor& step, const TernaryPlanes& w,
                       const Tensor& beta, const Tensor& bias, DType out_dtype);

// BitLinear's forward on packed weights (inference only: no gradient): the same activation
// quantiser and output dtype as `bitlinear`, the product by w2a8_linear, so the result equals
// bitlinear's with the weights the packing came from, bit for bit.
Tensor bitlinear_packed(const Tensor& x, const PackedTernary& w, const Tensor& bias,
                        const BitLinearOptions& opt, const ComputeMode& mode,
                        Consumer consumer = Consumer::any);

// What a caller may make ahead for bitlinear: the weights quantised (ternary_quantize_all: a
// model's weights in one pass, with the backward's W~) and the input quantised with the layer's
// act options (layernorm_quantize: by the kernel that wrote x). Undefined parts bitlinear makes.
struct BitLinearPrepared {
  TernaryWeights weights;
  QuantizedActivations input;
};

// The dtype of bitlinear's backward operands (W~, x~, dy) for inputs computed in `natural` (f32,
// or f64 in gradient checks): bf16 under bf16 precision on CUDA, else `natural`. What a W~ made
// ahead must have for the backward to use it.
DType bitlinear_operand_dtype(const ComputeMode& mode, Device device, DType natural = DType::f32);

// "" when bitlinear runs `mode` on `device`; else why not, in one line. An allowlist: the
// ternary product is exact integer arithmetic, and its backward products run the exact
// algorithms only.
std::string bitlinear_supports(const ComputeMode& mode, Device device);

// BitLinear for x (..., K), weight (N, K) latent f32, optional bias (N): the fake-quantised
// product above, with gradients by the straight-through estimator: dx_n = dy W~ (then the
// norm's backward), dW = dy^T x~, computed by the mode's matmul (operands rounded to bf16 under
// bf16 precision; dx_n rounded once to x's dtype where x is narrower than f32). The forward
// keeps x and the quantiser's statistics, not x_q (the backward recomputes it). The output is
// stored as stored_dtype(mode, consumer) says.
// A residual of the output's shape is added after the output's rounding (residual + bitlinear
// bit for bit), in the product's epilogue when it has the output's dtype.
// `prepared` holds what a caller made ahead, each what bitlinear would make itself, bit for bit.
Tensor bitlinear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                 const BitLinearOptions& opt, const ComputeMode& mode,
                 Consumer consumer = Consumer::any, const Tensor& residual = Tensor(),
                 const BitLinearPrepared& prepared = BitLinearPrepared());

}  // namespace bg
