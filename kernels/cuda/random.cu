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

// out = dropped, or residual + dropped when a residual is given, where dropped = y * scale where
// bernoulli(keep) draws 1, else 0: philox_uniform's numbers from one Philox call per 4 elements
// (offset is 4-aligned). `dropped` is rounded to T first, as dropout() stores it (the scale too,
// as bernoulli's T-valued mask would), and __fmul_rn keeps the product out of an FMA with the
// add, so dropout_add equals the two ops bit for bit. `vector`: every pointer Vec4-aligned.
template <typename T>
__global__ void dropout_kernel(T* out, const T* residual, const T* y, int64_t n, float keep,
                               float scale, uint64_t seed, uint64_t offset,
                               const uint64_t* offset_shift, bool vector) {
  const float s = to_float(from_float<T>(scale));
  if (offset_shift) offset += *offset_shift;
  BG_GRID_LOOP(g, (n + 3) / 4) {
    const Philox4 r = philox4x32((offset >> 2) + uint64_t(g), seed);
    auto result = [&](int j, T yj, const T* res) {
      const bool kept = float(r.v[j] >> 8) * (1.0f / 16777216.0f) < keep;
      const T dropped = from_float<T>(kept ? __fmul_rn(to_float(yj), s) : 0.f);
      return res ? from_float<T>(to_float(*res) + to_float(dropped)) : dropped;
    };
    if (vector && 4 * g + 3 < n) {
      const Vec4<T> in = reinterpret_cast<const Vec4<T>*>(y)[g];
      Vec4<T> res{}, o;
      if (residual) res = reinterpret_cast<const Vec4<T>*>(residual)[g];
#pragma unroll
      for (int j = 0; j < 4; ++j) o.v[j] = result(j, in.v[j], residual ? &res.v[j] : nullptr);
      reinterpret_cast<Vec4<T>*>(out)[g] = o;
      continue;
    }
    for (int j = 0; j < 4 && 4 * g + j < n; ++j) {
      const int64_t i = 4 * g + j;
      out[i] = result(j, y[i], residual ? residual + i : nullptr);
    }
  }
}

void launch_dropout(const char* op, const KView& out, const KView* residual, const KView& y,
                    double keep, double scale, uint64_t seed, uint64_t offset,
                    const uint64_t* offset_shift, StreamHandle stream) {
  if (!out.contiguous() || !y.contiguous() || (residual && !residual->contiguous()))
    kernel_fail(op, "views must be contiguous");
  if (offset % 4 != 0) kernel_fail(op, "offset must be 4-aligned (Generator::take)");
  const int64_t n = y.numel();
  if (n == 0) return;
  dispatch_float(y.dtype, op, [&](auto zero) {
    using T = decltype(zero);
    const T* res = residual ? static_cast<const T*>(residual->data) : nullptr;
    const bool vector =
        vec4_aligned<T>(out.data) && vec4_aligned<T>(y.data) && vec4_aligned<T>(res);
    dropout_kernel<T><<<grid_for((n + 3) / 4, 256), 256, 0, as_stream(stream)>>>(
        static_cast<T*>(out.data), res, static_cast<const T*>(y.data), n, float(keep), float(scale),
        seed, offset, offset_shift, vector);
  });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace

void dropout_add_apply(const KView& out, const KView& x, const KView& y, double keep, double scale,
                       uint64_t seed, uint64_t offset, const uint64_t* offset_shift,
                       StreamHandle stream) {
  launch_dropout("dropout_add", out, &x, y, keep, scale, seed, offset, offset_shift, stream);
}

void dropout_apply(const KView& out, const KView& x, double keep, double scale, uint64_t seed,
                   uint64_t offset, const uint64_t* offset_shift, StreamHandle stream) {
  launch_dropout("dropout", out, nullptr, x, keep, scale, seed, offset, offset_shift, stream);
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
