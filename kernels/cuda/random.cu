// random.cu: Philox streams on the device; element i uses counter offset + i, exactly as the
// CPU kernel does, so both produce the same numbers for the same (seed, offset).
#include "../philox.h"
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

template <typename T>
__global__ void random_kernel(T* out, int64_t n, RandomKind kind, double p0, double p1,
                              uint64_t seed, uint64_t offset) {
  BG_GRID_LOOP(i, n) {
    const uint64_t c = offset + uint64_t(i);
    float v;
    switch (kind) {
      case RandomKind::uniform:
        v = float(p0 + (p1 - p0) * double(philox_uniform(seed, c)));
        break;
      case RandomKind::normal:
        v = float(p0 + p1 * philox_normal(seed, c));
        break;
      default:
        v = philox_uniform(seed, c) < float(p0) ? float(p1) : 0.f;
        break;
    }
    out[i] = from_float<T>(v);
  }
}

template <typename T>
__global__ void dropout_kernel(T* out, const T* x, int64_t n, float keep, float scale,
                               uint64_t seed, uint64_t offset) {
  // The scale rounded to T first: the product bernoulli's T-valued mask would give.
  const float s = to_float(from_float<T>(scale));
  BG_GRID_LOOP(i, n) {
    const bool kept = philox_uniform(seed, offset + uint64_t(i)) < keep;
    out[i] = from_float<T>(kept ? to_float(x[i]) * s : 0.f);
  }
}

}  // namespace

void dropout_apply(const KView& out, const KView& x, double keep, double scale, uint64_t seed,
                   uint64_t offset, StreamHandle stream) {
  if (!out.contiguous() || !x.contiguous()) kernel_fail("dropout", "views must be contiguous");
  const int64_t n = x.numel();
  if (n == 0) return;
  dispatch_float(x.dtype, "dropout", [&](auto zero) {
    using T = decltype(zero);
    dropout_kernel<T><<<grid_for(n, 256), 256, 0, as_stream(stream)>>>(
        static_cast<T*>(out.data), static_cast<const T*>(x.data), n, float(keep), float(scale),
        seed, offset);
  });
  BG_CUDA_LAUNCH_CHECK();
}

void random_fill(const KView& dst, RandomKind kind, double p0, double p1, uint64_t seed,
                 uint64_t offset, StreamHandle stream) {
  if (!dst.contiguous()) kernel_fail("random", "destination must be contiguous");
  const int64_t n = dst.numel();
  if (n == 0) return;
  dispatch_float(dst.dtype, "random", [&](auto zero) {
    using T = decltype(zero);
    random_kernel<T><<<grid_for(n, 256), 256, 0, as_stream(stream)>>>(static_cast<T*>(dst.data), n,
                                                                      kind, p0, p1, seed, offset);
  });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
