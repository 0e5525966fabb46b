// linear.cpp: linear (PyTorch's (out, in) weight layout) and linear_gelu, GELU in the product's
// epilogue where the mode has one; both run matmul_rows (matmul.cpp), the weight's transpose a
// view.
#include "../dispatch.h"
#include "../ops.h"
#include "matmul_rows.h"

namespace bg {

bool gelu_in_epilogue(const ComputeMode& mode, const Tensor& x, const Tensor& weight,
                      const Tensor& bias) {
  const bool operands = (x.dtype() == DType::f32 || x.dtype() == DType::bf16) &&
                        (weight.dtype() == DType::f32 || weight.dtype() == DType::bf16) &&
                        (!bias.defined() || bias.dtype() == weight.dtype());
  return x.is_cuda() && gelu_epilogues(mode) && mode.precision == MatmulPrecision::bf16 &&
         operands && weight.ndim() == 2 &&
         weight.size(1) > 0 && weight.size(0) % 8 == 0 &&
         stored_dtype(mode, Consumer::matmul, DType::f32, x.device()) == DType::bf16;
}

Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                   const ComputeMode& mode, Tensor* pre_out) {
  if (pre_out) *pre_out = Tensor();
  if (!gelu_in_epilogue(mode, x, weight, bias))
    return gelu(linear(x, weight, bias, mode, Consumer::matmul), mode);
  BG_CHECK(x.size(-1) == weight.size(1), "linear", "input ", shape_str(x.shape()),
           " does not match weight ", shape_str(weight.shape()));
  if (bias.defined())
    BG_CHECK(bias.ndim() == 1 && bias.size(0) == weight.size(0) && bias.device() == weight.device(),
             "linear", "bias ", shape_str(bias.shape()), " does not match weight ",
             shape_str(weight.shape()));
  check_same_device(x, weight, "linear");
  Shape out_shape = x.shape();
  out_shape.back() = weight.size(0);
  Tensor act;
  ProductExtras extras;
  extras.bias = bias;
  extras.gelu_out = &act;
  extras.weight = weight;
  const Tensor pre = matmul_rows(x.reshape({-1, weight.size(1)}), weight.transpose(0, 1), mode,
                                 Consumer::matmul, Rows::kept_apart, extras);
  if (pre_out) *pre_out = pre.reshape(out_shape);
  return attach_gelu_backward(pre, act).reshape(out_shape);
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const ComputeMode& mode,
              Consumer consumer, const Tensor& residual, const Tensor& gelu_input) {
  BG_CHECK(weight.ndim() == 2, "linear", "weight must be (out, in), got ",
           shape_str(weight.shape()));
  BG_CHECK(x.ndim() >= 1 && x.size(-1) == weight.size(1), "linear", "input ", shape_str(x.shape()),
           " does not match weight ", shape_str(weight.shape()));
  Shape out_shape = x.shape();
  out_shape.back() = weight.size(0);
  if (bias.defined()) {
    BG_CHECK(bias.ndim() == 1 && bias.size(0) == weight.size(0), "linear", "bias ",
             shape_str(bias.shape()), " does not match weight ", shape_str(weight.shape()));
    check_same_device(bias, weight, "linear");
  }
  if (residual.defined()) {
    BG_CHECK(residual.shape() == out_shape, "linear", "residual ", shape_str(residual.shape()),
             " does not match the output ", shape_str(out_shape));
    check_same_device(residual, weight, "linear");
  }
  // Flatten to 2-D so the weight gradient is one GEMM, not a batched GEMM plus a reduction.
  const Tensor x2 = x.reshape({-1, weight.size(1)}), wt = weight.transpose(0, 1);
  // The bias and the residual in the GEMM's epilogue where the algorithm has one: one pass over
  // the output, and a narrowed output rounded once, after the bias. The reference algorithms add
  // them separately (their output then stays in its natural dtype: rounding first would round
  // twice); so does a product with K = 0 its residual.
  const bool epilogue = bias_in_epilogue(mode);
  const Tensor fused_bias =
      epilogue && bias.defined() && bias.dtype() == weight.dtype() ? bias : Tensor();
  const Tensor fused_residual = epilogue && residual.defined() && x2.size(1) > 0
                                    ? residual.reshape({-1, weight.size(0)})
                                    : Tensor();
  // GELU's input as the product's a is laid out (matmul_rows checks the rest).
  const Tensor gelu_input2 = gelu_input.defined() && gelu_input.shape() == x.shape()
                                 ? gelu_input.reshape({-1, weight.size(1)})
                                 : Tensor();
  ProductExtras extras;
  extras.bias = fused_bias;
  extras.residual = fused_residual;
  extras.weight = weight;
  extras.a_gelu_input = gelu_input2;
  Tensor out =
      matmul_rows(x2, wt, mode, bias.defined() && !fused_bias.defined() ? Consumer::any : consumer,
                  Rows::kept_apart, extras);
  if (bias.defined() && !fused_bias.defined()) out = out + bias;
  out = out.reshape(out_shape);
  return residual.defined() && !fused_residual.defined() ? residual + out : out;
}

}  // namespace bg
