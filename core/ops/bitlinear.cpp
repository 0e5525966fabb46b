// bitlinear.cpp: BitNet b1.58's ops (core/bitlinear.h): the quantisers, the exact int8 product
// and the autograd op whose backward is the straight-through estimator.
#include "../bitlinear.h"

#include "../dispatch.h"
#include "../ops.h"

namespace bg {
Tensor padded_int8(int64_t rows, int64_t k, Device device) {
  constexpr int64_t kRowAlign = 16;  // int8 rows padded to whole 16-byte groups
  const int64_t row = (k + kRowAlign - 1) / kRowAlign * kRowAlign;
  return empty({rows, std::max<int64_t>(row, kRowAlign)}, DType::i8, device).slice(1, 0, k);
}

TernaryWeights ternary_quantize(const Tensor& weight, TernaryScale method) {
  return ternary_quantize_all({weight}, method)[0];
}

std::vector<TernaryWeights> ternary_quantize_all(const std::vector<Tensor>& weights,
                                                 TernaryScale method,
                                                 std::optional<DType> tilde_dtype) {
  std::vector<TernaryWeights> out;
  if (weights.empty()) return out;
  const Device device = weights[0].device();
  if (tilde_dtype) {
    const DType t = *tilde_dtype;
    const bool ok = t == DType::f32 || (device.is_cuda() ? t == DType::bf16 : t == DType::f64);
    BG_CHECK(ok, "ternary_quantize", "W~ can be f32 or ", device.is_cuda() ? "bf16" : "f64",
             " on this device, not ", dtype_name(t));
  }
  std::vector<Tensor> kept;  // the f32 contiguous weights, alive until the kernels are queued
  std::vector<TernaryTarget> targets;
  for (const Tensor& weight : weights) {
    check_float(weight, "ternary_quantize", "weight");
    BG_CHECK(weight.ndim() == 2, "ternary_quantize", "weight must be (out, in), got ",
             shape_str(weight.shape()));
    check_same_device(weight, weights[0], "ternary_quantize");
    kept.push_back(weight.detach().to(DType::f32).contiguous());
    const Tensor& w = kept.back();
    TernaryWeights q{padded_int8(w.size(0), w.size(1), device), empty({}, DType::f32, device),
                     tilde_dtype ? empty(w.shape(), *tilde_dtype, device) : Tensor()};
    targets.push_back({q.q.kview(), q.beta.kview(), w.kview(), view_or_null(q.tilde)});
    out.push_back(std::move(q));
  }
  ScratchArena scratch(device);
  BG_DISPATCH(device, ternary_quantize_group, targets.data(), int(targets.size()), method, scratch,
              stream_for(device));
  return out;
}

QuantizedActivations empty_quantized(int64_t m, int64_t k, DType stats, const ActQuantOptions& opt,
                                     Device device) {
  BG_CHECK(opt.bits >= 2 && opt.bits <= 8, "act_quantize", "act_bits must be in [2, 8], got ",
           opt.bits);
  BG_CHECK(opt.eps > 0, "act_quantize", "eps must be positive, got ", opt.eps);
  QuantizedActivations out;
  out.q = padded_int8(m, k, device);
  out.step = empty({m}, stats, device);
  out.quant_scale = empty({m}, stats, device);
  out.bits = opt.bits;
  if (opt.norm != BitNorm::none) out.rstd = empty({m}, stats, device);
  if (opt.norm == BitNorm::layer) out.mean = empty({m}, stats, device);
  return out;
}

QuantizedActivations act_quantize(const Tensor& x, const ActQuantOptions& opt) {
  check_float(x, "act_quantize", "input");
  BG_CHECK(x.ndim() == 2, "act_quantize", "input must be (rows, features), got ",
           shape_str(x.shape()));
  const Tensor xc = compute_input(x);
  QuantizedActivations out =
      empty_quantized(xc.size(0), xc.size(1), stats_dtype(xc.dtype()), opt, x.device());
  BG_DISPATCH(x.device(), act_quantize, out.q.kview(), out.step.kview(), out.quant_scale.kview(),
              view_or_null(out.mean), view_or_null(out.rstd), xc.kview(), opt,
              stream_for(x.device()));
  return out;
}

BitLinearInputGradients bitlinear_input_backward(const Tensor& dxn, const Tensor& x,
                                                 const QuantizedActivations& stats,
                                                 const ActQuantOptions& opt, DType x_tilde_dtype) {
  check_float(x, "bitlinear_input_backward", "input");
  BG_CHECK(x.ndim() == 2 && x.is_contiguous() && x.dtype() == compute_dtype(x),
           "bitlinear_input_backward", "input must be a contiguous (rows, features) tensor in ",
           "its compute dtype, got ", dtype_name(x.dtype()), " ", shape_str(x.shape()));
  const int64_t m = x.size(0);
  BG_CHECK(stats.step.defined() && stats.quant_scale.defined() && stats.step.numel() == m &&
               stats.quant_scale.numel() == m,
           "bitlinear_input_backward", "the quantiser's statistics do not cover ", m, " rows");
  BG_CHECK(opt.norm == BitNorm::none ||
               (stats.rstd.defined() && (opt.norm != BitNorm::layer || stats.mean.defined())),
           "bitlinear_input_backward", "the quantiser's statistics lack the norm's");
  BitLinearInputGradients out;
  out.x_tilde = empty(x.shape(), x_tilde_dtype, x.device());
  Tensor dxn_c;
  if (opt.norm != BitNorm::none) {
    BG_CHECK(dxn.shape() == x.shape(), "bitlinear_input_backward", "dx_n ", shape_str(dxn.shape()),
             " does not match the input ", shape_str(x.shape()));
    dxn_c = dxn.contiguous();
    out.dx = empty(x.shape(), x.dtype(), x.device());
  } else {
    out.dx = dxn;
  }
  BG_DISPATCH(x.device(), bitlinear_input_backward,
              opt.norm == BitNorm::none ? null_view() : out.dx.kview(), out.x_tilde.kview(),
              view_or_null(dxn_c), x.kview(), view_or_null(stats.mean), view_or_null(stats.rstd),
              stats.step.kview(), stats.quant_scale.kview(), opt, stream_for(x.device()));
  return out;
}

Tensor int8_linear(const QuantizedActivations& x, const TernaryWeights& w, const Tensor& bias,
                   DType out_dtype, const Tensor& residual) {
  BG_CHECK(x.q.size(1) == w.q.size(1), "int8_linear", "activations have ", x.q.size(1),
           " features, the weights ", w.q.size(1));
  const int64_t n = w.q.size(0);
  Tensor b;
  if (bias.defined()) {
    BG_CHECK(bias.ndim() == 1 && bias.size(0) == n, "int8_linear", "bias ", shape_str(bias.shape()),
             " does not match ", n, " outputs");
    b = bias.detach().to(x.step.dtype()).contiguous();
  }
  Tensor y = empty({x.q.size(0), n}, out_dtype, x.q.device());
  Tensor r;
  if (residual.defined()) {
    BG_CHECK(residual.shape() == y.shape() && residual.dtype() == out_dtype, "int8_linear",
             "residual ", dtype_name(residual.dtype()), " ", shape_str(residual.shape()),
             " does not match the output ", dtype_name(out_dtype), " ", shape_str(y.shape()));
    check_same_device(residual, y, "int8_linear");
    r = residual.detach().contiguous();
  }
  BG_DISPATCH(y.device(), int8_linear, y.kview(), x.q.kview(), w.q.kview(), x.step.kview(),
              w.beta.kview(), view_or_null(b), view_or_null(r), stream_for(y.device()));
  return y;
}

Tensor int8_dequantize(const Tensor& q, const Tensor& row_scale, const Tensor& tensor_scale,
                       DType out_dtype) {
  Tensor out = empty({q.size(0), q.size(1)}, out_dtype, q.device());
  BG_DISPATCH(q.device(), int8_dequantize, out.kview(), q.kview(), view_or_null(row_scale),
              view_or_null(tensor_scale), stream_for(q.device()));
  return out;
}

Tensor pack_ternary(const TernaryWeights& w) {
  const int64_t n = w.q.size(0), k = w.q.size(1);
  Tensor packed = empty({n, (k + 3) / 4}, DType::u8, w.q.device());
  BG_DISPATCH(w.q.device(), pack_ternary, packed.kview(), w.q.kview(), stream_for(w.q.device()));
  return packed;
}

TernaryWeights unpack_ternary(const Tensor& packed, int64_t k, const Tensor& beta) {
  BG_CHECK(packed.dtype() == DType::u8 && packed.ndim() == 2 && packed.is_contiguous(),
           "unpack_ternary",
           "packed weights must be a contiguous (out, ceil(in / 4)) u8 array, got ",
           dtype_name(packed.dtype()), " ", shape_str(packed.shape()));
  BG_CHECK(k >= 1 && (k + 3) / 4 == packed.size(1), "unpack_ternary", "in = ", k, " needs ",
           (k + 3) / 4, " bytes a row, the packed array has ", packed.size(1));
  BG_CHECK(beta.numel() == 1 && beta.dtype() == DType::f32, "unpack_ternary",
           "the scale must be one f32 value, got ", beta.numel(), " ", dtype_name(beta.dtype()));
  TernaryWeights w{padded_int8(packed.size(0), k, packed.device()),
                   beta.reshape({}).to(packed.device()), Tensor()};
  BG_DISPATCH(packed.device(), unpack_ternary, w.q.kview(), packed.kview(),
              stream_for(packed.device()));
  return w;
}

DType bitlinear_operand_dtype(const ComputeMode& mode, Device device, DType natural) {
  if (!device.is_cuda()) return natural;
  switch (mode.precision) {  // every precision answered: a new one is a compile error
    case MatmulPrecision::fp32:
    case MatmulPrecision::tf32:
      return natural;
    case MatmulPrecision::bf16:
      return DType::bf16;
  }
  return natural;
}

std::string bitlinear_supports(const ComputeMode& mode, Device device) {
  if (mode.on(device) != mode)
    return str_cat(enum_name(mode.precision), " precision is a CUDA mode; the CPU computes fp32");
  switch (mode.algo) {
    case MatmulAlgo::standard:
    case MatmulAlgo::naive:
    case MatmulAlgo::batch_invariant:
      return matmul_supports(mode, device);  // the backward's two products
    case MatmulAlgo::lmul:
      return "the ternary product is exact integer arithmetic; L-Mul (lmul.scope) cannot apply "
             "to a BitLinear layer";
  }
  return str_cat("the matmul algorithm '", enum_name(mode.algo), "' is not known to BitLinear");
}

Tensor bitlinear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                 const BitLinearOptions& opt, const ComputeMode& mode, Consumer consumer,
                 const Tensor& residual, const BitLinearPrepared& prepared) {
  check_float(x, "bitlinear", "input");
  check_float(weight, "bitlinear", "weight");
  check_same_device(x, weight, "bitlinear");
  BG_CHECK(weight.ndim() == 2, "bitlinear", "weight must be (out, in), got ",
           shape_str(weight.shape()));
  BG_CHECK(x.ndim() >= 1 && x.size(-1) == weight.size(1), "bitlinear", "input ",
           shape_str(x.shape()), " does not match weight ", shape_str(weight.shape()));
  const std::string unsupported = bitlinear_supports(mode, x.device());
  BG_CHECK(unsupported.empty(), "bitlinear", unsupported);
  const int64_t k = weight.size(1), n = weight.size(0);
  Shape out_shape = x.shape();
  out_shape.back() = n;
  if (residual.defined()) {
    BG_CHECK(residual.shape() == out_shape, "bitlinear", "residual ", shape_str(residual.shape()),
             " does not match the output ", shape_str(out_shape));
    check_same_device(residual, x, "bitlinear");
  }
  const TernaryWeights& ahead = prepared.weights;
  if (ahead.q.defined())
    BG_CHECK(ahead.q.ndim() == 2 && ahead.q.size(0) == n && ahead.q.size(1) == k &&
                 ahead.q.device() == weight.device(),
             "bitlinear", "the quantised weights ", shape_str(ahead.q.shape()),
             " were not made from this ", shape_str(weight.shape()), " weight");
  const Tensor xc = compute_input(x.reshape({-1, k}));
  const QuantizedActivations& given = prepared.input;
  if (given.q.defined()) {
    const int64_t m = xc.size(0);
    const bool stats = given.step.defined() && given.step.numel() == m &&
                       given.step.dtype() == stats_dtype(xc.dtype()) &&
                       (opt.act.norm == BitNorm::none || given.rstd.defined()) &&
                       (opt.act.norm != BitNorm::layer || given.mean.defined());
    BG_CHECK(given.q.ndim() == 2 && given.q.size(0) == m && given.q.size(1) == k &&
                 given.bits == opt.act.bits && stats && given.q.device() == x.device(),
             "bitlinear", "the quantised input ", shape_str(given.q.shape()), " (act_bits ",
             given.bits, ") was not made from this ", shape_str(xc.shape()),
             " input with act_bits ", opt.act.bits);
  }
  TernaryWeights wq = ahead.q.defined() ? ahead : ternary_quantize(weight, opt.weight_scale);
  QuantizedActivations stats = given.q.defined() ? given : act_quantize(xc, opt.act);
  // The statistics' dtype is the computation's: f64 for f64 inputs (gradient checks), else f32.
  const DType natural = stats.step.dtype();
  const DType out_dtype = stored_dtype(mode, consumer, natural, x.device());
  // The residual in the epilogue when it has the output's dtype; otherwise added after.
  const bool fused_residual = residual.defined() && residual.dtype() == out_dtype;
  Tensor y = int8_linear(stats, wq, bias, out_dtype,
                         fused_residual ? residual.reshape({-1, n}) : Tensor());
  stats.q = Tensor();  // the backward recomputes x_q from x: one i8 copy fewer kept per layer
  const DType x_dtype = x.dtype(), w_dtype = weight.dtype();
  const DType b_dtype = bias.defined() ? bias.dtype() : natural;
  const Shape x_shape = x.shape();
  const bool has_bias = bias.defined();
  const ActQuantOptions act = opt.act;
  // Under bf16 precision the surrogate operands are dequantised straight to bf16 (one rounding);
  // otherwise in the computation's dtype.
  const DType operand = bitlinear_operand_dtype(mode, x.device(), natural);
  // A W~ made beside the quantised weights serves the backward when it has the operand's dtype;
  // else it is dropped here, not kept until the backward.
  if (wq.tilde.defined() && wq.tilde.dtype() != operand) wq.tilde = Tensor();
  std::vector<Tensor> inputs{x, weight, bias};
  if (fused_residual) inputs.push_back(residual);
  record(y, "bitlinear", inputs, [=](const Tensor& g) {
    const Tensor g2 = g.reshape({-1, n});
    // dy rounded to the operand dtype once for both products, contiguous, so the weight
    // gradient's transposed operand is a view and not a strided cast.
    const Tensor g_op = g2.dtype() == operand ? g2.contiguous() : g2.contiguous().to(operand);
    const Tensor w_tilde =
        wq.tilde.defined() ? wq.tilde : int8_dequantize(wq.q, Tensor(), wq.beta, operand);
    // dx_n straight from the product's epilogue in x's dtype where x is bf16 (the rounding the
    // norm's backward would read it with); f32 otherwise.
    const bool narrow = operand == DType::bf16 && xc.dtype() == DType::bf16;
    const Tensor dxn = gradient_product(g_op, w_tilde, mode, false, narrow);
    const BitLinearInputGradients in = bitlinear_input_backward(
        act.norm == BitNorm::none ? dxn : incoming_gradient(dxn.to(xc.dtype()), xc.dtype()), xc,
        stats, act, operand);
    const Tensor dw = gradient_product(g_op.transpose(0, 1), in.x_tilde, mode, true);
    std::vector<Tensor> grads{compute_output(in.dx, x_dtype).reshape(x_shape),
                              compute_output(dw, w_dtype),
                              has_bias ? column_sums(g2).to(b_dtype) : Tensor()};
    if (fused_residual) grads.push_back(g.reshape(out_shape));  // y = residual + ...
    return grads;
  });
  y = y.reshape(out_shape);
  return residual.defined() && !fused_residual ? residual + y : y;
}

}  // namespace bg
