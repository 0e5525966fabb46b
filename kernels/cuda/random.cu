// random.cu: Philox streams on the device; element i uses counter offset + i, exactly as the
// CPU kernel does, so both produce the same numbers for the same (seed, offset).
#include <type_traits>

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
  // One Philox call per 4 elements (offset is 4-aligned): philox_uniform's numbers, a quarter
  // of the work.
  BG_GRID_LOOP(g, (n + 3) / 4) {
    const Philox4 r = philox4x32((offset >> 2) + uint64_t(g), seed);
    auto keeps = [&](int j) { return float(r.v[j] >> 8) * (1.0f / 16777216.0f) < keep; };
    if constexpr (std::is_same_v<T, float>) {
      if (4 * g + 3 < n &&
          (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(out)) % 16 == 0) {
        const float4 v = reinterpret_cast<const float4*>(x)[g];
        reinterpret_cast<float4*>(out)[g] =
            make_float4(keeps(0) ? v.x * s : 0.f, keeps(1) ? v.y * s : 0.f,
                        keeps(2) ? v.z * s : 0.f, keeps(3) ? v.w * s : 0.f);
        continue;
      }
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t i = 4 * g + j;
      if (i >= n) break;
      out[i] = from_float<T>(keeps(j) ? to_float(x[i]) * s : 0.f);
    }
  }
}

template <typename T>
__global__ void dropout_add_kernel(T* out, const T* x, const T* y, int64_t n, float keep,
                                   float scale, uint64_t seed, uint64_t offset) {
  const float s = to_float(from_float<T>(scale));
  BG_GRID_LOOP(g, (n + 3) / 4) {
    const Philox4 r = philox4x32((offset >> 2) + uint64_t(g), seed);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t i = 4 * g + j;
      if (i >= n) break;
      const bool kept = float(r.v[j] >> 8) * (1.0f / 16777216.0f) < keep;
      // The dropped value in T first, what dropout() would have stored; __fmul_rn keeps the
      // product from being fused with the add into an FMA.
      const float d = to_float(from_float<T>(kept ? __fmul_rn(to_float(y[i]), s) : 0.f));
      out[i] = from_float<T>(to_float(x[i]) + d);
    }
  }
}

}  // namespace

void dropout_add_apply(const KView& out, const KView& x, const KView& y, double keep, double scale,
                       uint64_t seed, uint64_t offset, StreamHandle stream) {
  if (!out.contiguous() || !x.contiguous() || !y.contiguous())
    kernel_fail("dropout_add", "views must be contiguous");
  if (offset % 4 != 0) kernel_fail("dropout_add", "offset must be 4-aligned (Generator::take)");
  const int64_t n = y.numel();
  if (n == 0) return;
  dispatch_float(y.dtype, "dropout_add", [&](auto zero) {
    using T = decltype(zero);
    dropout_add_kernel<T><<<grid_for((n + 3) / 4, 256), 256, 0, as_stream(stream)>>>(
        static_cast<T*>(out.data), static_cast<const T*>(x.data), static_cast<const T*>(y.data), n,
        float(keep), float(scale), seed, offset);
  });
  BG_CUDA_LAUNCH_CHECK();
}

void dropout_apply(const KView& out, const KView& x, double keep, double scale, uint64_t seed,
                   uint64_t offset, StreamHandle stream) {
  if (!out.contiguous() || !x.contiguous()) kernel_fail("dropout", "views must be contiguous");
  if (offset % 4 != 0) kernel_fail("dropout", "offset must be 4-aligned (Generator::take)");
  const int64_t n = x.numel();
  if (n == 0) return;
  dispatch_float(x.dtype, "dropout", [&](auto zero) {
    using T = decltype(zero);
    dropout_kernel<T><<<grid_for((n + 3) / 4, 256), 256, 0, as_stream(stream)>>>(
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
