// random.cpp (CPU): Philox streams; element i uses counter offset + i (see philox.h).
#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {

void random_fill(const KView& dst, RandomKind kind, double p0, double p1, uint64_t seed,
                 uint64_t offset, StreamHandle) {
  if (!dst.contiguous()) kernel_fail("random", "destination must be contiguous");
  dispatch_float(dst.dtype, "random", [&](auto zero) {
    using T = decltype(zero);
    T* out = ptr<T>(dst);
    const int64_t n = dst.numel();
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t c = offset + uint64_t(i);
      switch (kind) {
        case RandomKind::uniform:
          out[i] = T(p0 + (p1 - p0) * double(philox_uniform(seed, c)));
          break;
        case RandomKind::normal:
          out[i] = T(float(p0 + p1 * philox_normal(seed, c)));
          break;
        case RandomKind::bernoulli:
          out[i] = philox_uniform(seed, c) < float(p0) ? T(p1) : T(0);
          break;
      }
    }
  });
}

namespace {

// out = dropped, or residual + dropped: y * scale where bernoulli(keep) draws 1, else 0.
void apply_dropout(const char* op, const KView& out, const KView* residual, const KView& y,
                   double keep, double scale, uint64_t seed, uint64_t offset) {
  if (!out.contiguous() || !y.contiguous() || (residual && !residual->contiguous()))
    kernel_fail(op, "views must be contiguous");
  dispatch_float(y.dtype, op, [&](auto zero) {
    using T = decltype(zero);
    const T* in = ptr<T>(y);
    const T* res = residual ? ptr<T>(*residual) : nullptr;
    T* o = ptr<T>(out);
    const T s = T(scale);
    for (int64_t i = 0, n = y.numel(); i < n; ++i) {
      // volatile: the product is rounded on its own, as dropout() stores it, never fused with
      // a residual add into an FMA (x86-64-v3 builds contract by default).
      volatile T dropped =
          philox_uniform(seed, offset + uint64_t(i)) < float(keep) ? in[i] * s : T(0);
      o[i] = res ? res[i] + dropped : dropped;
    }
  });
}

}  // namespace

void dropout_apply(const KView& out, const KView& x, double keep, double scale, uint64_t seed,
                   uint64_t offset, const uint64_t* offset_shift, StreamHandle) {
  if (offset_shift) kernel_fail("dropout", "a device offset shift is CUDA's alone");
  apply_dropout("dropout", out, nullptr, x, keep, scale, seed, offset);
}

void dropout_add_apply(const KView& out, const KView& x, const KView& y, double keep, double scale,
                       uint64_t seed, uint64_t offset, const uint64_t* offset_shift,
                       StreamHandle) {
  if (offset_shift) kernel_fail("dropout_add", "a device offset shift is CUDA's alone");
  apply_dropout("dropout_add", out, &x, y, keep, scale, seed, offset);
}

}  // namespace bg::cpu
