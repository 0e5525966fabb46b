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
#include <string>

#include "compute_mode.h"
#include "tensor.h"

namespace bg {

struct BitLinearOptions {
  TernaryScale weight_scale = TernaryScale::absmean;
  ActQuantOptions act;  // the norm before quantisation, act_bits, the norm's eps
};

const char* ternary_scale_name(TernaryScale s);
bool parse_ternary_scale(const std::string& name, TernaryScale* out);  // absmean | absmedian
const char* bit_norm_name(BitNorm n);
bool parse_bit_norm(const std::string& name, BitNorm* out);  // rmsnorm | layernorm | none

// W (N, K) f32 -> q (N, K) i8 in {-1, 0, 1}, a view whose rows are padded to 16 bytes with
// zeros (what the int8 kernels read), and beta, an f32 scalar tensor. Deterministic: the mean
// sums in one fixed tree, the median is exact.
struct TernaryWeights {
  Tensor q, beta;
};
TernaryWeights ternary_quantize(const Tensor& weight, TernaryScale method);

// x (M, K) -> q (M, K) i8 (rows padded as above), step (M) = gamma / Q, and the norm's
// statistics for its backward (rstd (M); mean (M) for layernorm).
struct QuantizedActivations {
  Tensor q, step, mean, rstd;
};
QuantizedActivations act_quantize(const Tensor& x, const ActQuantOptions& opt);

// y (M, N) = fma(float(x.q . w.q^T) * x.step, w.beta, bias or 0) in out_dtype (f32, or bf16 on
// CUDA; f64 when x's statistics are f64). Exact integer product (int8 tensor cores on CUDA).
Tensor int8_linear(const QuantizedActivations& x, const TernaryWeights& w, const Tensor& bias,
                   DType out_dtype);
// q (R, C) i8 -> q * row_scale[r] * tensor_scale in out_dtype; either scale may be undefined.
Tensor int8_dequantize(const Tensor& q, const Tensor& row_scale, const Tensor& tensor_scale,
                       DType out_dtype);

// The 2-bit export layout (docs/bitlinear.md): w.q (N, K) -> (N, ceil(K / 4)) u8, four weights a
// byte, code w + 1 at bits 2 (k % 4) of byte k / 4, codes past K zero weights. unpack_ternary
// restores the padded i8 view the int8 kernels read; beta travels beside it unchanged.
Tensor pack_ternary(const TernaryWeights& w);
TernaryWeights unpack_ternary(const Tensor& packed, int64_t k, const Tensor& beta);

// BitLinear for x (..., K), weight (N, K) latent f32, optional bias (N): the fake-quantised
// product above, with gradients by the straight-through estimator: dx_n = dy W~ (then the
// norm's backward), dW = dy^T x~, computed by the mode's matmul (operands rounded to bf16 under
// bf16 precision). The output is stored as stored_dtype(mode, consumer) says.
Tensor bitlinear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                 const BitLinearOptions& opt, const ComputeMode& mode,
                 Consumer consumer = Consumer::any);

}  // namespace bg
