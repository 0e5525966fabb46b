// bitlinear_inference.cpp: BitLinear on packed weights (core/bitlinear.h): the W2A8 layout and
// product, the bit planes and their product, and the packed layer's forward.
#include "../bitlinear.h"
#include "../dispatch.h"
#include "../ops.h"

namespace bg {
namespace {

void check_weight_scale(const Tensor& beta, const char* op) {
  BG_CHECK(beta.defined() && beta.numel() == 1 && beta.dtype() == DType::f32, op,
           "the weight scale must be one f32 value, got ",
           beta.defined() ? std::to_string(beta.numel()) : std::string("none"));
}

Tensor bias_for(const Tensor& bias, int64_t n, DType dtype, const char* op) {
  if (!bias.defined()) return Tensor();
  BG_CHECK(bias.ndim() == 1 && bias.size(0) == n, op, "bias ", shape_str(bias.shape()),
           " does not match ", n, " outputs");
  return bias.detach().to(dtype).contiguous();
}

}  // namespace

PackedTernary w2_from_packed(const Tensor& packed, int64_t k, const Tensor& beta) {
  BG_CHECK(packed.dtype() == DType::u8 && packed.ndim() == 2, "w2_from_packed",
           "packed weights must be an (out, ceil(in / 4)) u8 array, got ",
           dtype_name(packed.dtype()), " ", shape_str(packed.shape()));
  BG_CHECK(k >= 1 && (k + 3) / 4 == packed.size(1), "w2_from_packed", "in = ", k, " needs ",
           (k + 3) / 4, " bytes a row, the packed array has ", packed.size(1));
  check_weight_scale(beta, "w2_from_packed");
  const Tensor src = packed.contiguous();
  PackedTernary w;
  w.k = k;
  w.w2 = empty({src.size(0), (k + 127) / 128 * 32}, DType::u8, src.device());
  w.beta = beta.reshape({}).to(src.device());
  BG_DISPATCH(src.device(), w2_layout, w.w2.kview(), src.kview(), k, stream_for(src.device()));
  return w;
}

Tensor w2a8_linear(const QuantizedActivations& x, const PackedTernary& w, const Tensor& bias,
                   DType out_dtype) {
  BG_CHECK(x.q.size(1) == w.k, "w2a8_linear", "activations have ", x.q.size(1),
           " features, the weights ", w.k);
  check_same_device(x.q, w.w2, "w2a8_linear");
  const int64_t n = w.out_features();
  const Tensor b = bias_for(bias, n, x.step.dtype(), "w2a8_linear");
  Tensor y = empty({x.q.size(0), n}, out_dtype, x.q.device());
  BG_DISPATCH(y.device(), w2a8_linear, y.kview(), x.q.kview(), w.w2.kview(), x.step.kview(),
              w.beta.kview(), view_or_null(b), stream_for(y.device()));
  return y;
}

TernaryPlanes bitplanes(const Tensor& q) {
  BG_CHECK(q.dtype() == DType::i8 && q.ndim() == 2 && q.strides()[1] == 1, "bitplanes",
           "expects (rows, K) i8 rows, got ", dtype_name(q.dtype()), " ", shape_str(q.shape()));
  TernaryPlanes p;
  p.k = q.size(1);
  p.planes =
      empty({2, q.size(0), std::max<int64_t>((p.k + 127) / 128, 1) * 16}, DType::u8, q.device());
  BG_DISPATCH(q.device(), bitplane_pack, p.planes.kview(), q.kview(), stream_for(q.device()));
  return p;
}

Tensor bitplane_linear(const TernaryPlanes& x, const Tensor& step, const TernaryPlanes& w,
                       const Tensor& beta, const Tensor& bias, DType out_dtype) {
  BG_CHECK(x.k == w.k, "bitplane_linear", "activations have ", x.k, " features, the weights ", w.k);
  check_same_device(x.planes, w.planes, "bitplane_linear");
  check_weight_scale(beta, "bitplane_linear");
  const int64_t m = x.planes.size(1), n = w.planes.size(1);
  BG_CHECK(step.ndim() == 1 && step.size(0) == m, "bitplane_linear", "step ",
           shape_str(step.shape()), " does not match ", m, " rows");
  const Tensor b = bias_for(bias, n, step.dtype(), "bitplane_linear");
  Tensor y = empty({m, n}, out_dtype, x.planes.device());
  BG_DISPATCH(y.device(), bitplane_linear, y.kview(), x.planes.kview(), w.planes.kview(),
              step.kview(), beta.kview(), view_or_null(b), stream_for(y.device()));
  return y;
}

Tensor bitlinear_packed(const Tensor& x, const PackedTernary& w, const Tensor& bias,
                        const BitLinearOptions& opt, const ComputeMode& mode, Consumer consumer) {
  check_float(x, "bitlinear", "input");
  check_same_device(x, w.w2, "bitlinear");
  BG_CHECK(!grad_enabled() || !x.requires_grad(), "bitlinear",
           "packed weights are for inference: no gradient flows through them");
  BG_CHECK(x.ndim() >= 1 && x.size(-1) == w.k, "bitlinear", "input ", shape_str(x.shape()),
           " does not match packed weights of ", w.k, " inputs");
  Shape out_shape = x.shape();
  out_shape.back() = w.out_features();
  // The steps of `bitlinear`'s forward, in its order and dtypes.
  const QuantizedActivations xq = act_quantize(compute_input(x.reshape({-1, w.k})), opt.act);
  const DType out_dtype = stored_dtype(mode, consumer, xq.step.dtype(), x.device());
  return w2a8_linear(xq, w, bias, out_dtype).reshape(out_shape);
}

}  // namespace bg
