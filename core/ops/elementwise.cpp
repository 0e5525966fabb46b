// elementwise.cpp: broadcasting binary ops, comparisons, unary ops, affine, where and
// masked_fill, with their backward.
#include <optional>

#include "../dispatch.h"
#include "../ops.h"

namespace bg {
namespace {

const char* binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::add:
      return "add";
    case BinaryOp::sub:
      return "sub";
    case BinaryOp::mul:
      return "mul";
    case BinaryOp::div:
      return "div";
    case BinaryOp::maximum:
      return "maximum";
    case BinaryOp::minimum:
      return "minimum";
    case BinaryOp::eq:
      return "eq";
    case BinaryOp::lt:
      return "lt";
    case BinaryOp::gt:
      return "gt";
  }
  return "binary";
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    BG_CHECK(da == db || da == 1 || db == 1, op, "shapes ", shape_str(a), " and ", shape_str(b),
             " cannot broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// t's elements seen with out's shape: aligned right, stride 0 on broadcast dims.
KView broadcast_view(const Tensor& t, const Shape& out) {
  KView v = t.kview();
  const int lead = int(out.size()) - t.ndim();
  v.ndim = int(out.size());
  BG_CHECK(v.ndim <= kMaxDims, "broadcast", "at most ", kMaxDims, " dims");
  for (int i = v.ndim - 1; i >= 0; --i) {
    const int src = i - lead;
    const int64_t have = src >= 0 ? t.shape()[size_t(src)] : 1;
    v.shape[i] = out[size_t(i)];
    v.strides[i] = (src >= 0 && have == out[size_t(i)]) ? t.strides()[size_t(src)] : 0;
  }
  return v;
}

// Runs the binary kernel on already-checked operands; no autograd.
Tensor binary_raw(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  check_same_device(a, b, name);
  BG_CHECK(a.dtype() == b.dtype(), name, "dtype mismatch: ", dtype_name(a.dtype()), " and ",
           dtype_name(b.dtype()));
  check_float(a, name, "input");
  const Shape out_shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor ac = compute_dtype(a) == a.dtype() ? a : a.detach().to(compute_dtype(a));
  Tensor bc = compute_dtype(b) == b.dtype() ? b : b.detach().to(compute_dtype(b));
  const bool cmp = binary_is_comparison(op);
  Tensor out = empty(out_shape, cmp ? DType::u8 : ac.dtype(), a.device());
  BG_DISPATCH(a.device(), binary_forward, op, out.kview(), broadcast_view(ac, out_shape),
              broadcast_view(bc, out_shape), stream_for(a.device()));
  return cmp ? out : compute_output(out, a.dtype());
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor out = binary_raw(op, a, b);
  if (binary_is_comparison(op)) return out;
  const Tensor ad = a.detach(), bd = b.detach(), od = out.detach();
  const Shape sa = a.shape(), sb = b.shape();
  record(out, binary_name(op), {a, b}, [=](const Tensor& g) -> std::vector<Tensor> {
    switch (op) {
      case BinaryOp::add:
        return {sum_to(g, sa), sum_to(g, sb)};
      case BinaryOp::sub:
        return {sum_to(g, sa), sum_to(neg(g), sb)};
      case BinaryOp::mul:
        return {sum_to(g * bd, sa), sum_to(g * ad, sb)};
      case BinaryOp::div:
        return {sum_to(g / bd, sa), sum_to(neg(g * od / bd), sb)};
      case BinaryOp::maximum: {
        const Tensor to_b = lt(ad, bd), zero = zeros({}, g.dtype(), g.device());
        return {sum_to(where(to_b, zero, g), sa), sum_to(where(to_b, g, zero), sb)};
      }
      case BinaryOp::minimum: {
        const Tensor to_b = gt(ad, bd), zero = zeros({}, g.dtype(), g.device());
        return {sum_to(where(to_b, zero, g), sa), sum_to(where(to_b, g, zero), sb)};
      }
      default:
        return {};
    }
  });
  return out;
}

const char* unary_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::exp:
      return "exp";
    case UnaryOp::log:
      return "log";
    case UnaryOp::tanh:
      return "tanh";
    case UnaryOp::relu:
      return "relu";
    case UnaryOp::gelu:
      return "gelu";
    case UnaryOp::gelu_erf:
      return "gelu_erf";
    case UnaryOp::silu:
      return "silu";
    case UnaryOp::sigmoid:
      return "sigmoid";
    case UnaryOp::neg:
      return "neg";
    case UnaryOp::sqrt:
      return "sqrt";
    case UnaryOp::rsqrt:
      return "rsqrt";
    case UnaryOp::abs:
      return "abs";
    case UnaryOp::affine:
      return "affine";
    case UnaryOp::softplus:
      return "softplus";
    case UnaryOp::lgamma:
      return "lgamma";
  }
  return "unary";
}

// A unary op's backward from its saved input xs (compute dtype) and output ys (undefined when
// the output was narrowed: ops whose gradient needs x alone), the gradient in dtype dt.
BackwardFn unary_backward_of(UnaryOp op, const Tensor& xs, const Tensor& ys, double a, DType dt) {
  return [=](const Tensor& g) {
    const Tensor gc = incoming_gradient(g, xs.dtype());
    Tensor dx = empty(xs.shape(), xs.dtype(), xs.device());
    BG_DISPATCH(xs.device(), unary_backward, op, dx.kview(), xs.kview(),
                ys.defined() ? ys.kview() : null_view(), gc.kview(), a, stream_for(xs.device()));
    return std::vector<Tensor>{compute_output(dx, dt)};
  };
}

// out_dtype (default: x's) may narrow f32 to bf16: the CUDA kernel then stores bf16 directly.
// Only for ops whose gradient needs x alone (the backward sees no y then).
Tensor unary(UnaryOp op, const Tensor& x, double a = 1.0, double b = 0.0,
             std::optional<DType> out_dtype = std::nullopt) {
  const char* name = unary_name(op);
  check_float(x, name, "input");
  const Tensor xc = compute_input(x);
  const bool narrow = out_dtype && *out_dtype != x.dtype();
  BG_CHECK(!narrow || (x.dtype() == DType::f32 && *out_dtype == DType::bf16), name, "output dtype ",
           dtype_name(out_dtype.value_or(x.dtype())), " for input ", dtype_name(x.dtype()),
           ": only f32 -> bf16 narrows");
  const bool narrow_in_kernel = narrow && x.is_cuda();
  Tensor y = empty(xc.shape(), narrow_in_kernel ? *out_dtype : xc.dtype(), xc.device());
  BG_DISPATCH(x.device(), unary_forward, op, y.kview(), xc.kview(), a, b, stream_for(x.device()));
  Tensor out = compute_output(y, out_dtype.value_or(x.dtype()));
  const Tensor xs = xc.detach(), ys = narrow ? Tensor() : y.detach();
  record(out, name, {x}, unary_backward_of(op, xs, ys, a, x.dtype()));
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::div, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::minimum, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary_raw(BinaryOp::eq, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_raw(BinaryOp::lt, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary_raw(BinaryOp::gt, a, b); }

void add_(const Tensor& dst, const Tensor& src) {
  check_same_device(dst, src, "add_");
  BG_CHECK(dst.dtype() == src.dtype(), "add_", "dtype mismatch: ", dtype_name(dst.dtype()), " and ",
           dtype_name(src.dtype()));
  BG_CHECK(dst.is_contiguous() && compute_dtype(dst) == dst.dtype(), "add_",
           "destination must be contiguous in a compute dtype");
  BG_CHECK(broadcast_shapes(dst.shape(), src.shape(), "add_") == dst.shape(), "add_", "cannot add ",
           shape_str(src.shape()), " into ", shape_str(dst.shape()));
  // Elementwise in place: each output element reads only its own dst element.
  BG_DISPATCH(dst.device(), binary_forward, BinaryOp::add, dst.kview(),
              broadcast_view(dst, dst.shape()), broadcast_view(src, dst.shape()),
              stream_for(dst.device()));
}

Tensor affine(const Tensor& x, double a, double b) { return unary(UnaryOp::affine, x, a, b); }
Tensor add_scalar(const Tensor& x, double s) { return affine(x, 1.0, s); }
Tensor mul_scalar(const Tensor& x, double s) { return affine(x, s, 0.0); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::exp, x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::log, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::tanh, x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::relu, x); }
Tensor gelu(const Tensor& x) { return unary(UnaryOp::gelu, x); }
Tensor gelu(const Tensor& x, DType out_dtype) {
  return unary(UnaryOp::gelu, x, 1.0, 0.0, out_dtype);
}
Tensor gelu_erf(const Tensor& x) { return unary(UnaryOp::gelu_erf, x); }
Tensor gelu_erf(const Tensor& x, DType out_dtype) {
  return unary(UnaryOp::gelu_erf, x, 1.0, 0.0, out_dtype);
}
Tensor attach_gelu_backward(const Tensor& x, const Tensor& y) {
  check_float(x, "gelu", "input");
  BG_CHECK(y.shape() == x.shape() && y.dtype() == x.dtype() && y.device() == x.device(), "gelu",
           "an output made elsewhere must have its input's shape, dtype and device");
  Tensor out = y.detach();
  record(out, "gelu", {x},
         unary_backward_of(UnaryOp::gelu, compute_input(x).detach(), compute_input(y).detach(),
                           1.0, x.dtype()));
  return out;
}

Tensor gelu(const Tensor& x, const ComputeMode& consumer) {
  return gelu(x, stored_dtype(consumer, Consumer::matmul, x.dtype(), x.device()));
}
Tensor gelu_erf(const Tensor& x, const ComputeMode& consumer) {
  return gelu_erf(x, stored_dtype(consumer, Consumer::matmul, x.dtype(), x.device()));
}
Tensor silu(const Tensor& x) { return unary(UnaryOp::silu, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::sigmoid, x); }
Tensor neg(const Tensor& x) { return unary(UnaryOp::neg, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary(UnaryOp::rsqrt, x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::abs, x); }
Tensor softplus(const Tensor& x) { return unary(UnaryOp::softplus, x); }
Tensor lgamma(const Tensor& x) { return unary(UnaryOp::lgamma, x); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  BG_CHECK(cond.dtype() == DType::u8, "where", "condition must be u8, got ",
           dtype_name(cond.dtype()));
  check_same_device(cond, a, "where");
  check_same_device(a, b, "where");
  BG_CHECK(a.dtype() == b.dtype(), "where", "dtype mismatch: ", dtype_name(a.dtype()), " and ",
           dtype_name(b.dtype()));
  check_float(a, "where", "input");
  const Shape out_shape =
      broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  const Tensor ac = compute_dtype(a) == a.dtype() ? a : a.detach().to(compute_dtype(a));
  const Tensor bc = compute_dtype(b) == b.dtype() ? b : b.detach().to(compute_dtype(b));
  Tensor out = empty(out_shape, ac.dtype(), a.device());
  BG_DISPATCH(a.device(), where_forward, out.kview(), broadcast_view(cond, out_shape),
              broadcast_view(ac, out_shape), broadcast_view(bc, out_shape), stream_for(a.device()));
  out = compute_output(out, a.dtype());
  const Tensor cd = cond.detach();
  const Shape sa = a.shape(), sb = b.shape();
  record(out, "where", {a, b}, [=](const Tensor& g) {
    const Tensor zero = zeros({}, g.dtype(), g.device());
    return std::vector<Tensor>{sum_to(where(cd, g, zero), sa), sum_to(where(cd, zero, g), sb)};
  });
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  return where(mask, full({}, value, x.dtype(), x.device()), x);
}

}  // namespace bg
