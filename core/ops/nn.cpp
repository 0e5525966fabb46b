// nn.cpp: embedding, dropout, layernorm/rmsnorm and (composed) causal self-attention.
#include <cmath>

#include "../bitlinear.h"
#include "../dispatch.h"
#include "../ops.h"

namespace bg {

Tensor embedding(const Tensor& weight, const Tensor& idx) {
  check_float(weight, "embedding", "weight");
  check_same_device(weight, idx, "embedding");
  BG_CHECK(weight.ndim() == 2, "embedding", "weight must be (V, C), got ",
           shape_str(weight.shape()));
  BG_CHECK(idx.dtype() == DType::i64 || idx.dtype() == DType::i32, "embedding",
           "indices must be i32 or i64, got ", dtype_name(idx.dtype()));
  const Tensor wc = compute_input(weight);
  const Tensor ic = idx.detach().contiguous();
  Shape out_shape = idx.shape();
  out_shape.push_back(weight.size(1));
  Tensor out = empty(out_shape, wc.dtype(), weight.device());
  BG_DISPATCH(weight.device(), embedding_forward, out.kview(), wc.kview(), ic.kview(),
              stream_for(weight.device()));
  out = compute_output(out, weight.dtype());
  const Shape wshape = weight.shape();
  const DType wdt = wc.dtype(), dt = weight.dtype();
  const int64_t c = weight.size(1);
  record(out, "embedding", {weight}, [=](const Tensor& g) {
    const Tensor gc = compute_input(g).reshape({-1, c});
    Tensor dw = empty(wshape, wdt, gc.device());
    ScratchArena scratch(gc.device());
    BG_DISPATCH(gc.device(), embedding_backward, dw.kview(), gc.kview(), ic.kview(), scratch,
                stream_for(gc.device()));
    return std::vector<Tensor>{compute_output(dw, dt)};
  });
  return out;
}

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  BG_CHECK(p >= 0.0 && p < 1.0, "dropout", "p must be in [0, 1), got ", p);
  if (!training || p == 0.0) return x;
  check_float(x, "dropout", "input");
  // No mask tensor: the kernel draws bernoulli(1 - p)'s numbers from (seed, offset) in the
  // forward and again in the backward.
  const double keep = 1.0 - p, scale = 1.0 / (1.0 - p);
  const uint64_t seed = gen.seed, offset = gen.take(uint64_t(x.numel()));
  const uint64_t* shift = gen.device_shift;
  const Tensor xc = compute_input(x);
  Tensor y = empty(xc.shape(), xc.dtype(), xc.device());
  BG_DISPATCH(x.device(), dropout_apply, y.kview(), xc.kview(), keep, scale, seed, offset,
              shift, stream_for(x.device()));
  Tensor out = compute_output(y, x.dtype());
  const DType dt = x.dtype();
  const Device dev = x.device();
  record(out, "dropout", {x}, [=](const Tensor& g) {
    const Tensor gc = compute_input(g);
    Tensor dx = empty(gc.shape(), gc.dtype(), dev);
    BG_DISPATCH(dev, dropout_apply, dx.kview(), gc.kview(), keep, scale, seed, offset,
                shift, stream_for(dev));
    return std::vector<Tensor>{compute_output(dx, dt)};
  });
  return out;
}

Tensor dropout_add(const Tensor& x, const Tensor& y, double p, bool training, Generator& gen) {
  BG_CHECK(p >= 0.0 && p < 1.0, "dropout_add", "p must be in [0, 1), got ", p);
  if (!training || p == 0.0) return x + y;
  check_float(y, "dropout_add", "input");
  check_same_device(x, y, "dropout_add");
  BG_CHECK(x.shape() == y.shape() && x.dtype() == y.dtype(), "dropout_add",
           "x and y must share shape and dtype, got ", shape_str(x.shape()), " ",
           dtype_name(x.dtype()), " and ", shape_str(y.shape()), " ", dtype_name(y.dtype()));
  // dropout(y)'s counters, so the fused op draws the very mask the two ops would.
  const double keep = 1.0 - p, scale = 1.0 / (1.0 - p);
  const uint64_t seed = gen.seed, offset = gen.take(uint64_t(y.numel()));
  const uint64_t* shift = gen.device_shift;
  const Tensor xc = compute_input(x), yc = compute_input(y);
  Tensor out = empty(yc.shape(), yc.dtype(), yc.device());
  BG_DISPATCH(y.device(), dropout_add_apply, out.kview(), xc.kview(), yc.kview(), keep, scale, seed,
              offset, shift, stream_for(y.device()));
  out = compute_output(out, y.dtype());
  const DType dt = y.dtype();
  const Device dev = y.device();
  record(out, "dropout_add", {x, y}, [=](const Tensor& g) {
    const Tensor gc = compute_input(g);
    Tensor dy = empty(gc.shape(), gc.dtype(), dev);
    BG_DISPATCH(dev, dropout_apply, dy.kview(), gc.kview(), keep, scale, seed, offset,
                shift, stream_for(dev));
    return std::vector<Tensor>{g, compute_output(dy, dt)};
  });
  return out;
}

namespace {

// out_dtype: x's, or bf16 for f32 x (stored directly by the CUDA kernel: the operand of the
// bf16 matmul that consumes it, without a cast pass).
// With `quantize`, also act_quantize of the output as stored into *quantized: in the kernel's
// pass where it stores y as the reader sees it (the CPU narrows y afterwards, and quantises after
// that).
Tensor norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, bool rms,
            DType out_dtype, const ActQuantOptions* quantize = nullptr,
            QuantizedActivations* quantized = nullptr) {
  const char* name = rms ? "rmsnorm" : "layernorm";
  check_float(x, name, "input");
  BG_CHECK(x.ndim() >= 1, name, "needs at least 1-D input");
  const int64_t c = x.size(-1);
  for (const Tensor* p : {&weight, &bias}) {
    if (!p->defined()) continue;
    check_same_device(x, *p, name);
    BG_CHECK(p->ndim() == 1 && p->size(0) == c, name, "expected parameter of shape (", c,
             ",), got ", shape_str(p->shape()));
    // f32 parameters may scale a 16-bit input (train.activations: bf16 keeps them f32).
    const bool f32_for_narrow = p->dtype() == DType::f32 &&
                                (x.dtype() == DType::bf16 || x.dtype() == DType::f16);
    BG_CHECK(p->dtype() == x.dtype() || f32_for_narrow, name, "parameter dtype ",
             dtype_name(p->dtype()), " differs from input dtype ", dtype_name(x.dtype()));
  }
  if (weight.defined() && bias.defined())
    BG_CHECK(weight.dtype() == bias.dtype(), name, "weight dtype ", dtype_name(weight.dtype()),
             " differs from bias dtype ", dtype_name(bias.dtype()));
  BG_CHECK(eps > 0, name, "eps must be positive, got ", eps);
  const bool narrow = out_dtype != x.dtype();
  BG_CHECK(!narrow || (x.dtype() == DType::f32 && out_dtype == DType::bf16), name, "output dtype ",
           dtype_name(out_dtype), " for input ", dtype_name(x.dtype()),
           ": only f32 -> bf16 narrows");
  const Tensor xc = compute_input(x);
  const Tensor wc = weight.defined() ? compute_input(weight) : Tensor();
  const Tensor bc = bias.defined() ? compute_input(bias) : Tensor();
  const int64_t rows = c ? x.numel() / c : 0;
  const DType sd = stats_dtype(xc.dtype());
  Tensor y = empty(xc.shape(), narrow && x.is_cuda() ? out_dtype : xc.dtype(), x.device());
  Tensor mu = rms ? Tensor() : empty({rows}, sd, x.device());
  Tensor rstd = empty({rows}, sd, x.device());
  // The quantising kernel takes parameters of x's dtype.
  const bool fused = quantize && y.dtype() == out_dtype && (!wc.defined() || wc.dtype() == xc.dtype());
  if (fused) {
    *quantized = empty_quantized(rows, c, stats_dtype(compute_dtype(y)), *quantize, x.device());
    BG_DISPATCH(x.device(), layernorm_quantize, y.kview(), view_or_null(mu), rstd.kview(),
                xc.kview(), view_or_null(wc), view_or_null(bc), eps, rms, quantized->q.kview(),
                quantized->step.kview(), quantized->quant_scale.kview(),
                view_or_null(quantized->mean), view_or_null(quantized->rstd), *quantize,
                stream_for(x.device()));
  } else {
    BG_DISPATCH(x.device(), layernorm_forward, y.kview(), view_or_null(mu), rstd.kview(),
                xc.kview(), view_or_null(wc), view_or_null(bc), eps, rms, stream_for(x.device()));
  }
  Tensor out = compute_output(y, out_dtype);
  if (quantize && !fused) *quantized = act_quantize(out.reshape({rows, c}), *quantize);
  const DType dt = x.dtype();
  const bool has_w = weight.defined(), has_b = bias.defined();
  // The parameters' gradients in their own dtype (f32 for f32 parameters of a bf16 input).
  const DType pdt = has_w ? weight.dtype() : has_b ? bias.dtype() : dt;
  const DType pcdt = has_w ? wc.dtype() : has_b ? bc.dtype() : xc.dtype();
  // The backward folds the gradient pending for x (the residual stream's, in a pre-norm
  // transformer) into dx in its kernel when it has x's compute dtype.
  record_folding(out, name, {x, weight, bias}, 0, [=](const Tensor& g, const Tensor& pending) {
    const Tensor gc = incoming_gradient(g, xc.dtype());
    const bool fold = pending.defined() && pending.dtype() == dt && dt == xc.dtype() &&
                      pending.device() == xc.device() && pending.is_contiguous();
    Tensor dx = empty(xc.shape(), xc.dtype(), xc.device());
    Tensor dw = has_w ? empty({c}, pcdt, xc.device()) : Tensor();
    Tensor db = has_b ? empty({c}, pcdt, xc.device()) : Tensor();
    ScratchArena scratch(xc.device());
    BG_DISPATCH(xc.device(), layernorm_backward, dx.kview(), fold ? pending.kview() : null_view(),
                view_or_null(dw), view_or_null(db), gc.kview(), xc.kview(), view_or_null(wc),
                view_or_null(mu), rstd.kview(), rms, scratch, stream_for(xc.device()));
    Tensor dx_out = compute_output(dx, dt);
    if (pending.defined() && !fold) dx_out = add(pending, dx_out);
    return std::vector<Tensor>{dx_out, has_w ? compute_output(dw, pdt) : Tensor(),
                               has_b ? compute_output(db, pdt) : Tensor()};
  });
  return out;
}

}  // namespace

Tensor layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  return norm(x, weight, bias, eps, false, x.dtype());
}
Tensor layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                 DType out_dtype) {
  return norm(x, weight, bias, eps, false, out_dtype);
}
Tensor layernorm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                 const ComputeMode& consumer) {
  return layernorm(x, weight, bias, eps,
                   stored_dtype(consumer, Consumer::matmul, x.dtype(), x.device()));
}
NormedActivations layernorm_quantize(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                     double eps, DType out_dtype, const ActQuantOptions& opt) {
  NormedActivations out;
  out.y = norm(x, weight, bias, eps, false, out_dtype, &opt, &out.q);
  return out;
}
Tensor rmsnorm(const Tensor& x, const Tensor& weight, double eps) {
  return norm(x, weight, Tensor(), eps, true, x.dtype());
}

Tensor causal_self_attention(const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p,
                             bool training, Generator& gen, const ComputeMode& mode) {
  BG_CHECK(q.ndim() == 4 && q.shape() == k.shape() && q.shape() == v.shape(), "attention",
           "q, k, v must share a (B, H, T, D) shape, got ", shape_str(q.shape()), ", ",
           shape_str(k.shape()), ", ", shape_str(v.shape()));
  const int64_t d = q.size(3);
  const Tensor scores = matmul(q, k.transpose(-2, -1), mode);
  const Tensor att =
      dropout(causal_softmax(scores, 1.0 / std::sqrt(double(d))), dropout_p, training, gen);
  return matmul(att, v, mode);
}

}  // namespace bg
