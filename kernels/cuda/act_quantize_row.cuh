// act_quantize_row.cuh: the activation quantiser's work on one row a warp holds in registers,
// shared by act_quantize (bitlinear.cu) and the LayerNorm that quantises its own output for the
// BitLinear layer after it (layernorm_quantize.cu), so both give the same bits as
// kernels/cpu/bitlinear.cpp. Element e of the row sits in lane (e / 4) % 32; the lane folds its
// elements in order, and lanes combine by an xor butterfly: the order kernel_list.h states.
#pragma once
#include <cstdint>
#include <type_traits>

#include "bitlinear_common.cuh"
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {

constexpr float kActMinScale = 1e-5f;  // BitNet's clamp of gamma

// Four consecutive elements of T, as held raw in registers (8 bytes of f16/bf16, 16 of f32) and
// read back as floats.
template <typename T>
struct Group4 {
  using Raw = std::conditional_t<sizeof(T) == 4, float4, uint2>;
  Raw raw;
  // n elements from p (0 <= n <= 4), zeros after them. p must point into the row even for
  // n = 0: the compiler may then issue the vector load and discard it.
  __device__ __forceinline__ void load(const T* p, int n, bool vec) {
    if (vec && n == 4) {
      raw = *reinterpret_cast<const Raw*>(p);
    } else {
      T* h = reinterpret_cast<T*>(&raw);
#pragma unroll
      for (int i = 0; i < 4; ++i) h[i] = i < n ? p[i] : from_float<T>(0.0f);
    }
  }
  __device__ __forceinline__ float operator[](int i) const {
    return to_float(reinterpret_cast<const T*>(&raw)[i]);
  }
};

// A lane's kG groups of a row: as floats (kFloats), normalised in place once the norm's
// statistics are known, or raw (2-byte inputs of long rows: half the registers), converted and
// normalised at each pass. Group j of lane l holds elements 4 (l + 32 j) .. + 3.
template <typename T, int kG, bool kFloats>
struct HeldRow {
  Group4<T> raw[kFloats ? 1 : kG];
  float held[kFloats ? kG : 1][4];
  __device__ __forceinline__ void set(int j, const Group4<T>& g) {
    if constexpr (kFloats) {
#pragma unroll
      for (int i = 0; i < 4; ++i) held[j][i] = g[i];
    } else {
      raw[j] = g;
    }
  }
  __device__ __forceinline__ void set(int j, int i, float v) {
    static_assert(kFloats, "values are set one by one only in a row held as floats");
    held[j][i] = v;
  }
  __device__ __forceinline__ float value(int j, int i) const {
    if constexpr (kFloats)
      return held[j][kFloats ? i : 0];
    else
      return raw[kFloats ? 0 : j][i];
  }
};

// The quantiser's outputs and options. quantize() runs act_quantize's arithmetic on a held row r
// of k elements (kFull: k = 128 kG, every group whole) and writes its int8s (row bytes apart,
// zeros in the padding) and statistics.
struct RowQuantizer {
  int8_t* xq;
  float *step, *scale_out, *mean_out, *rstd_out;
  int64_t row;
  BitNorm norm;
  float q_max, eps;

  template <bool kFull, typename T, int kG, bool kFloats>
  __device__ __forceinline__ void quantize(HeldRow<T, kG, kFloats>& h, int64_t r, int k,
                                           int lane) const {
    auto in_row = [&](int j, int i) { return kFull || (lane + 32 * j) * 4 + i < k; };
    float mu = 0.0f, rs = 1.0f;
    if (norm == BitNorm::layer) {
      float s = 0.0f;
#pragma unroll
      for (int j = 0; j < kG; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (in_row(j, i)) s = __fadd_rn(s, h.value(j, i));
      mu = __fdiv_rn(warp_sum(s), float(k));
    }
    if (norm != BitNorm::none) {
      float ss = 0.0f;
#pragma unroll
      for (int j = 0; j < kG; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          if (in_row(j, i)) {
            const float d = __fsub_rn(h.value(j, i), mu);
            ss = __fmaf_rn(d, d, ss);
          }
      rs = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(warp_sum(ss), float(k)), eps)));
    }
    auto normalise = [&](float v) {
      return norm == BitNorm::none ? v : __fmul_rn(__fsub_rn(v, mu), rs);
    };
    if constexpr (kFloats) {
#pragma unroll
      for (int j = 0; j < kG; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) h.held[j][i] = normalise(h.held[j][i]);
    }
    auto normed = [&](int j, int i) {
      if constexpr (kFloats)
        return h.value(j, i);
      else
        return normalise(h.value(j, i));
    };
    float gamma = 0.0f;
#pragma unroll
    for (int j = 0; j < kG; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        if (in_row(j, i)) gamma = fmaxf(gamma, fabsf(normed(j, i)));
    gamma = fmaxf(warp_max(gamma), kActMinScale);
    const float inv = __fdiv_rn(q_max, gamma), lo = -q_max - 1.0f;
    int8_t* out = xq + r * row;
#pragma unroll
    for (int j = 0; j < kG; ++j) {
      const int e0 = (lane + 32 * j) * 4;
      if (!kFull && e0 >= row) continue;  // row <= 128 kG: the padded row is covered
      uint32_t b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        b[i] = in_row(j, i) ? rounded_bits(__fmul_rn(normed(j, i), inv), lo, q_max) : kRoundedZero;
      *reinterpret_cast<uint32_t*>(out + e0) = pack_int8(b[0], b[1], b[2], b[3]);
    }
    if (lane == 0) {
      step[r] = __fdiv_rn(gamma, q_max);
      if (scale_out) scale_out[r] = inv;
      if (rstd_out) rstd_out[r] = rs;
      if (mean_out) mean_out[r] = mu;
    }
  }
};

// The quantiser writing act_quantize's outputs with its options.
inline RowQuantizer row_quantizer(const KView& xq, const KView& step, const KView& quant_scale,
                                  const KView& mean, const KView& rstd,
                                  const ActQuantOptions& opt) {
  return {static_cast<int8_t*>(xq.data),
          static_cast<float*>(step.data),
          static_cast<float*>(quant_scale.data),
          static_cast<float*>(mean.data),
          static_cast<float*>(rstd.data),
          xq.strides[0],
          opt.norm,
          float((1 << (opt.bits - 1)) - 1),
          float(opt.eps)};
}

// The quantiser kernels' sizes of kG, groups of four a lane.
constexpr int kRowGroupSizes[] = {1, 2, 3, 4, 6, 8, 12, 16, 24};

// Calls f(std::integral_constant<int, kG>{}) with the smallest kG of kRowGroupSizes that holds
// `groups` groups of four a lane, at most kMaxGroups (itself one of the sizes; the caller keeps
// its rows within 128 kMaxGroups).
template <int kMaxGroups, int kIndex = 0, typename F>
void with_row_groups(int64_t groups, F&& f) {
  constexpr int kG = kRowGroupSizes[kIndex];
  if constexpr (kG >= kMaxGroups)
    f(std::integral_constant<int, kG>());
  else if (groups <= kG)
    f(std::integral_constant<int, kG>());
  else
    with_row_groups<kMaxGroups, kIndex + 1>(groups, f);
}

}  // namespace bg::cuda
