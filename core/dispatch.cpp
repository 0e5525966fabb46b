#include "dispatch.h"

namespace bg {

void fail_no_cuda(const char* kernel) {
  fail(kernel, "tensor is on CUDA but bitgrad was built without CUDA support");
}

DType compute_dtype(const Tensor& t) {
  if (t.device().is_cpu() && (t.dtype() == DType::f16 || t.dtype() == DType::bf16))
    return DType::f32;
  return t.dtype();
}

Tensor compute_input(const Tensor& t) {
  const DType want = compute_dtype(t);
  Tensor c = t.dtype() == want ? t : t.detach().to(want);
  return c.is_contiguous() ? c : c.detach().contiguous();
}

Tensor compute_output(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? t : t.detach().to(dtype);
}

Tensor incoming_gradient(const Tensor& g, DType input_dtype) {
  const Tensor gc = compute_input(g);
  if (gc.is_cuda() && gc.dtype() == DType::bf16 && input_dtype == DType::f32) return gc;
  return compute_output(gc, input_dtype);
}

DType stats_dtype(DType compute) { return compute == DType::f64 ? DType::f64 : DType::f32; }

void check_float(const Tensor& t, const char* op, const char* what) {
  BG_CHECK(t.defined(), op, what, " is undefined");
  BG_CHECK(dtype_is_float(t.dtype()), op, what, " must be a floating tensor, got ",
           dtype_name(t.dtype()));
  BG_CHECK(!(t.is_cuda() && t.dtype() == DType::f64), op, what,
           " is f64 on CUDA; f64 is a CPU dtype (gradient checks)");
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  BG_CHECK(a.device() == b.device(), op, "tensors on different devices: ", a.device().str(),
           " and ", b.device().str());
}

int normalize_dim(int dim, int ndim, const char* op) {
  const int d = dim < 0 ? dim + ndim : dim;
  BG_CHECK(d >= 0 && d < (ndim == 0 ? 1 : ndim), op, "dim ", dim, " out of range for ", ndim,
           "-d tensor");
  return d;
}

void* ScratchArena::get(size_t bytes) {
  blocks_.push_back(empty({int64_t((bytes + 15) / 16 * 16)}, DType::u8, device_));
  return blocks_.back().data_ptr();
}

KView null_view() { return KView{}; }
KView view_or_null(const Tensor& t) { return t.defined() ? t.kview() : null_view(); }

}  // namespace bg
