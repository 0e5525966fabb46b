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

void dropout_apply(const KView& out, const KView& x, double keep, double scale, uint64_t seed,
                   uint64_t offset, StreamHandle) {
  if (!out.contiguous() || !x.contiguous()) kernel_fail("dropout", "views must be contiguous");
  dispatch_float(x.dtype, "dropout", [&](auto zero) {
    using T = decltype(zero);
    const T* in = ptr<T>(x);
    T* o = ptr<T>(out);
    const T s = T(scale);
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      o[i] = philox_uniform(seed, offset + uint64_t(i)) < float(keep) ? in[i] * s : T(0);
  });
}

void dropout_add_apply(const KView& out, const KView& x, const KView& y, double keep, double scale,
                       uint64_t seed, uint64_t offset, StreamHandle) {
  if (!out.contiguous() || !x.contiguous() || !y.contiguous())
    kernel_fail("dropout_add", "views must be contiguous");
  dispatch_float(y.dtype, "dropout_add", [&](auto zero) {
    using T = decltype(zero);
    const T* base = ptr<T>(x);
    const T* in = ptr<T>(y);
    T* o = ptr<T>(out);
    const T s = T(scale);
    for (int64_t i = 0, n = y.numel(); i < n; ++i) {
      // volatile: the product is rounded on its own, as dropout() stores it, never fused with
      // the add into an FMA (x86-64-v3 builds contract by default).
      volatile T dropped =
          philox_uniform(seed, offset + uint64_t(i)) < float(keep) ? in[i] * s : T(0);
      o[i] = base[i] + dropped;
    }
  });
}

}  // namespace bg::cpu
