// layernorm_row.cuh: LayerNorm's arithmetic on one row a warp reads, in one place: the
// warp-per-row forward kernel (layernorm.cu) and the one that also quantises its output for a
// BitLinear layer (layernorm_quantize.cu) run this code, so they give the same bits. Lane l
// folds elements l, l + 32, ... in order; lanes combine by warp_sum.
//
// Every rounding is spelled out (__fadd_rn, __fmaf_rn, ...): left to the compiler, whether a
// multiply and an add fuse into one rounding depends on the code around them, so two kernels
// inlining the same expression can round it differently. These are the operations the forward
// kernel has always compiled to (its SASS): the squares fused into the sum, the output's
// multiplies and bias add rounded one by one.
#pragma once
#include <cstdint>

#include "cuda_common.cuh"

namespace bg::cuda {

// The row's mean (0 for RMSNorm) and 1 / sqrt(var + eps); at(j) reads element j of the row.
template <typename At>
__device__ __forceinline__ void layernorm_row_stats(const At& at, int lane, int64_t c, float eps,
                                                    bool rms, float& mu, float& rs) {
  mu = 0.f;
  if (!rms) {
    for (int64_t j = lane; j < c; j += 32) mu = __fadd_rn(mu, at(j));
    mu = __fdiv_rn(warp_sum(mu), float(c));
  }
  float var = 0.f;
  for (int64_t j = lane; j < c; j += 32) {
    const float d = __fsub_rn(at(j), mu);
    var = __fmaf_rn(d, d, var);
  }
  rs = rsqrtf(__fadd_rn(__fdiv_rn(warp_sum(var), float(c)), eps));
}

// An element's output before its rounding to the stored dtype: ((x - mu) rs) w + b, each step
// rounded, from its weight wj (has_w) and bias bj (has_b). Without a weight the bias add is
// fused, fma(x - mu, rs, b), as the kernel has always computed it.
__device__ __forceinline__ float layernorm_row_value(float x, float mu, float rs, bool has_w,
                                                     float wj, bool has_b, float bj) {
  const float d = __fsub_rn(x, mu);
  if (!has_w) return has_b ? __fmaf_rn(d, rs, bj) : __fmul_rn(d, rs);
  const float v = __fmul_rn(__fmul_rn(d, rs), wj);
  return has_b ? __fadd_rn(v, bj) : v;
}

}  // namespace bg::cuda
