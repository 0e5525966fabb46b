// layernorm_quantize.cu: a LayerNorm that also quantises its output for the BitLinear layer
// reading it (docs/bitlinear.md): y = layernorm(x) as layernorm_forward stores it, and x_q, step
// and the quantiser's statistics as act_quantize computes them from that stored y, in one pass
// over x instead of a LayerNorm pass and a quantiser pass that reads y back.
//
// One warp a row. The row goes to shared memory once, read in groups of four; the LayerNorm's
// sums then read it in the LayerNorm kernel's order (layernorm_row.cuh), and each lane computes
// y for its groups of four, stores them and holds them, as rounded to the stored dtype, for the
// quantiser (act_quantize_row.cuh). y is elementwise given the row's statistics, so any lane
// may compute any element. Rows up to kMaxWidth wide; wider ones run the two
// kernels in turn, with the same bits.
#include <cstdint>
#include <type_traits>

#include "act_quantize_row.cuh"
#include "cuda_common.cuh"
#include "cuda_kernels.h"
#include "layernorm_row.cuh"

namespace bg::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kMaxWidth = 1024;  // 4 KB of f32 a warp: 32 KB a block; 8 groups a lane

// Element i of a 16-byte (f32) or 8-byte (f16/bf16) group, from its raw bits.
__device__ __forceinline__ float unpack(const float4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
template <typename T>
__device__ __forceinline__ float unpack(const uint2& v, int i) {
  const uint32_t word = i < 2 ? v.x : v.y;
  const unsigned short bits = static_cast<unsigned short>(i % 2 ? word >> 16 : word & 0xffffu);
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(__ushort_as_half(bits));
  else
    return __bfloat162float(__ushort_as_bfloat16(bits));
}

// The n (1 to 4) values of T at p as floats, zeros after them: one 16- or 8-byte load where vec
// and n == 4.
template <typename T>
__device__ __forceinline__ float4 load4(const T* p, int n, bool vec) {
  float v[4] = {0.f, 0.f, 0.f, 0.f};
  if (vec && n == 4) {
    if constexpr (sizeof(T) == 4) {
      const float4 raw = *reinterpret_cast<const float4*>(p);
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = unpack(raw, i);
    } else {
      const uint2 raw = *reinterpret_cast<const uint2*>(p);
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = unpack<T>(raw, i);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (i < n) v[i] = to_float(p[i]);
  }
  return make_float4(v[0], v[1], v[2], v[3]);
}

// Stores the n (1 to 4) values o as TOut at p: one 16- or 8-byte store where vec and n == 4.
template <typename TOut>
__device__ __forceinline__ void store4(TOut* p, const TOut (&o)[4], int n, bool vec) {
  if (vec && n == 4) {
    if constexpr (sizeof(TOut) == 4) {
      *reinterpret_cast<float4*>(p) = make_float4(o[0], o[1], o[2], o[3]);
    } else {
      auto bits = [&](int i) {
        if constexpr (std::is_same_v<TOut, __half>)
          return uint32_t(__half_as_ushort(o[i]));
        else
          return uint32_t(__bfloat16_as_ushort(o[i]));
      };
      *reinterpret_cast<uint2*>(p) = make_uint2(bits(0) | bits(1) << 16, bits(2) | bits(3) << 16);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (i < n) p[i] = o[i];
  }
}

// kG: the quantiser's groups of four a lane (c <= 128 kG), kFull: c == 128 kG. vec: c % 4 == 0
// and x, y, weight and bias aligned to four elements, so groups move as one access each.
template <typename T, typename TOut, int kG, bool kFull>
__global__ void __launch_bounds__(kWarps * 32)
    layernorm_quantize_kernel(TOut* y, float* mean, float* rstd, const T* x, const T* w, const T* b,
                              int64_t rows, int c, float eps, bool rms, bool vec,
                              RowQuantizer quantizer) {
  __shared__ __align__(16) float staged[kWarps][128 * kG];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int64_t r = int64_t(blockIdx.x) * kWarps + warp;
  if (r >= rows) return;
  float* row = staged[warp];
  const T* xr = x + r * c;
  // The row into shared memory in the quantiser's groups (lane l: groups l, l + 32, ...).
#pragma unroll
  for (int j = 0; j < kG; ++j) {
    const int e0 = (lane + 32 * j) * 4, n = kFull ? 4 : max(0, min(4, c - e0));
    *reinterpret_cast<float4*>(row + e0) =
        n > 0 ? load4(xr + e0, n, vec) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  __syncwarp();
  // The LayerNorm's sums in its own order, then y computed, stored and held group by group.
  float mu, rs;
  layernorm_row_stats([&](int64_t j) { return row[j]; }, lane, c, eps, rms, mu, rs);
  if (lane == 0) {
    if (mean) mean[r] = mu;
    rstd[r] = rs;
  }
  TOut* yr = y + r * c;
  HeldRow<float, kG, true> held;
#pragma unroll
  for (int j = 0; j < kG; ++j) {
    const int e0 = (lane + 32 * j) * 4, n = kFull ? 4 : max(0, min(4, c - e0));
    if (n == 0) {  // past the row: zeros for the quantiser, nothing read or written
#pragma unroll
      for (int i = 0; i < 4; ++i) held.set(j, i, 0.0f);
      continue;
    }
    const float4 xv = *reinterpret_cast<const float4*>(row + e0);
    const float4 wv = w ? load4(w + e0, n, vec) : make_float4(1.f, 1.f, 1.f, 1.f);
    const float4 bv = b ? load4(b + e0, n, vec) : make_float4(0.f, 0.f, 0.f, 0.f);
    TOut out[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      out[i] = from_float<TOut>(layernorm_row_value(unpack(xv, i), mu, rs, w != nullptr,
                                                    unpack(wv, i), b != nullptr, unpack(bv, i)));
      held.set(j, i, i < n ? to_float(out[i]) : 0.0f);
    }
    store4(yr + e0, out, n, vec);
  }
  quantizer.quantize<kFull>(held, r, c, lane);
}

}  // namespace

void layernorm_quantize(const KView& y, const KView& mean, const KView& rstd, const KView& x,
                        const KView& weight, const KView& bias, double eps, bool rms,
                        const KView& xq, const KView& step, const KView& quant_scale,
                        const KView& q_mean, const KView& q_rstd, const ActQuantOptions& opt,
                        StreamHandle stream) {
  const int64_t c = x.shape[x.ndim - 1];
  if (c == 0 || x.numel() == 0) return;
  if (c > kMaxWidth) {  // the two passes, the same bits
    layernorm_forward(y, mean, rstd, x, weight, bias, eps, rms, stream);
    act_quantize(xq, step, quant_scale, q_mean, q_rstd, as_rows(y, c), opt, stream);
    return;
  }
  if (xq.dtype != DType::i8 || step.dtype != DType::f32)
    kernel_fail("layernorm_quantize", "xq must be i8 and step f32");
  const int64_t rows = x.numel() / c;
  const RowQuantizer quantizer = row_quantizer(xq, step, quant_scale, q_mean, q_rstd, opt);
  const unsigned grid = unsigned((rows + kWarps - 1) / kWarps);
  auto launch = [&](auto in, auto out) {
    using T = decltype(in);
    using TOut = decltype(out);
    auto aligned = [](const void* p, size_t bytes) {
      return reinterpret_cast<uintptr_t>(p) % (4 * bytes) == 0;
    };
    const bool vec = c % 4 == 0 && aligned(x.data, sizeof(T)) && aligned(y.data, sizeof(TOut)) &&
                     aligned(weight.data, sizeof(T)) && aligned(bias.data, sizeof(T));
    with_row_groups<8>((c + 127) / 128, [&](auto groups) {
      constexpr int kG = decltype(groups)::value;
      auto run = [&](auto kernel) {
        kernel<<<grid, kWarps * 32, 0, as_stream(stream)>>>(
            static_cast<TOut*>(y.data), static_cast<float*>(mean.data),
            static_cast<float*>(rstd.data), static_cast<const T*>(x.data),
            static_cast<const T*>(weight.data), static_cast<const T*>(bias.data), rows, int(c),
            float(eps), rms, vec, quantizer);
      };
      if (c == 128 * kG)
        run(layernorm_quantize_kernel<T, TOut, kG, true>);
      else
        run(layernorm_quantize_kernel<T, TOut, kG, false>);
    });
  };
  dispatch_float_or_bf16(x.dtype, y.dtype, "layernorm_quantize", "output", launch);
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
