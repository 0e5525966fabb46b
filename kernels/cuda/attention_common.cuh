// attention_common.cuh: what the two families of fused causal attention kernels share: the
// portable mma.sync ones (attention.cu, sm_80 and later) and the Hopper wgmma ones
// (attention_wgmma.cu, sm_90a). Both give each warp 16 rows of a 64-row tile and hold a 16 x 64
// f32 tile in the same registers (thread lane: rows lane / 4 and lane / 4 + 8, columns
// 8n + 2 (lane % 4) + {0, 1}, as acc[n][0..1] and acc[n][2..3]), so the softmax, dropout and
// store code below serves both.
#pragma once
#include <cuda_bf16.h>

#include "../attention_dropout.h"
#include "cuda_common.cuh"

namespace bg::cuda::attn {

constexpr int kHeadDim = 64;   // the one head size the kernels are built for (GPT-2's)
constexpr int kTile = 64;      // rows of a query or key tile
constexpr int kThreads = 128;  // 4 warps (one warpgroup), 16 rows of a tile each
constexpr float kLog2e = 1.4426950408889634f;

using bf16 = __nv_bfloat16;

// Row t of head (b, h): element pointer math on a (B, H, T, D) view.
template <typename T>
struct HeadsView {
  T* data;
  int64_t sb, sh, st;
  __device__ T* row(int b, int h, int t) const {
    return data + int64_t(b) * sb + int64_t(h) * sh + int64_t(t) * st;
  }
};

template <typename T>
inline HeadsView<T> heads(const KView& v) {
  return HeadsView<T>{static_cast<T*>(v.data), v.strides[0], v.strides[1], v.strides[2]};
}

struct AttnShape {
  int heads, t;      // H and T; blockIdx.y enumerates B * H
  float scale_log2;  // softmax scale * log2(e)
  float scale;
  float keep_scale;  // drop.keep_scale in f32
  AttentionDropout drop;
};

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ void store2(float* p, float a, float b) {
  *reinterpret_cast<float2*>(p) = make_float2(a, b);
}
__device__ __forceinline__ void store2(bf16* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}
__device__ __forceinline__ void store2(__half* p, float a, float b) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
}

// An accumulator (16 x 64, f32) as A fragments (bf16) for the next product.
__device__ __forceinline__ void acc_to_a(uint32_t a[4][4], const float acc[8][4]) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    a[kk][0] = pack_bf16(acc[2 * kk][0], acc[2 * kk][1]);
    a[kk][1] = pack_bf16(acc[2 * kk][2], acc[2 * kk][3]);
    a[kk][2] = pack_bf16(acc[2 * kk + 1][0], acc[2 * kk + 1][1]);
    a[kk][3] = pack_bf16(acc[2 * kk + 1][2], acc[2 * kk + 1][3]);
  }
}

__device__ __forceinline__ void zero(float acc[8][4]) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[n][e] = 0.f;
}

// Dropout factors of this thread's 16 values of one row in a key tile (columns
// kv0 + 8n + 2 (lane % 4) + {0, 1}): two Philox calls, see attention_dropout.h.
__device__ __forceinline__ void dropout_row(float z[8][2], const AttentionDropout& d,
                                            float keep_scale, int64_t row, int t, int kv0,
                                            int lane) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const Philox4 r =
        philox4x32(attention_dropout_counter(d, row, t, kv0 + half * 32 + 2 * (lane & 3)), d.seed);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      z[half * 4 + w][0] = (r.v[w] & 0xFFFFu) < d.keep_threshold ? keep_scale : 0.f;
      z[half * 4 + w][1] = (r.v[w] >> 16) < d.keep_threshold ? keep_scale : 0.f;
    }
  }
}

// Dropout factors of both of this thread's rows (r0 and r0 + 8) in key tile kt.
__device__ __forceinline__ void dropout_rows(float z[2][8][2], const AttnShape& s, int bh, int r0,
                                             int kt, int lane) {
  for (int i = 0; i < 2; ++i)
    dropout_row(z[i], s.drop, s.keep_scale, int64_t(bh) * s.t + r0 + 8 * i, s.t, kt * kTile, lane);
}

// Output rows of this thread: r0 = first of the warp's 16 + lane / 4, and r0 + 8.
template <typename T>
__device__ __forceinline__ void store_rows(const HeadsView<T>& out, int b, int h, int r0, int t,
                                           const float acc[8][4], float mul0, float mul1,
                                           int lane) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = r0 + 8 * i;
    if (r >= t) continue;
    const float mul = i ? mul1 : mul0;
    T* p = out.row(b, h, r) + 2 * (lane & 3);
#pragma unroll
    for (int n = 0; n < 8; ++n) store2(p + 8 * n, acc[n][2 * i] * mul, acc[n][2 * i + 1] * mul);
  }
}

// Per-row softmax statistics in base 2; rows past T get lse = +inf (P = 0) and delta = 0.
__device__ __forceinline__ void row_stats(float lse2[2], float dl[2], const float* lse,
                                          const float* delta, int bh, int r0, int t) {
  for (int i = 0; i < 2; ++i) {
    const int r = r0 + 8 * i;
    lse2[i] = r < t ? lse[int64_t(bh) * t + r] * kLog2e : INFINITY;
    dl[i] = r < t ? delta[int64_t(bh) * t + r] : 0.f;
  }
}

// One key tile of the forward's online softmax for this thread's rows r0 and r0 + 8: p holds
// their raw scores and becomes the (dropped) probabilities that multiply V; the running max m,
// sum l and output o are rescaled. Only the diagonal tile has keys after a row to mask.
__device__ __forceinline__ void softmax_step(float p[8][4], float o[8][4], float m[2], float l[2],
                                             const AttnShape& s, int bh, int r0, int kt,
                                             bool diagonal, int lane) {
  float z[2][8][2];
  if (s.drop.active()) dropout_rows(z, s, bh, r0, kt, lane);
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float mx = -INFINITY;
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = kt * kTile + 8 * n + 2 * (lane & 3) + e;
        float& x = p[n][2 * i + e];
        x = diagonal && col > r0 + 8 * i ? -INFINITY : x * s.scale_log2;
        mx = fmaxf(mx, x);
      }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m[i], mx);  // finite: column kt * 64 <= every row of the tile
    const float correction = exp2f(m[i] - m_new);
    m[i] = m_new;
    l[i] *= correction;
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      o[n][2 * i] *= correction;
      o[n][2 * i + 1] *= correction;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = p[n][2 * i + e];
        x = exp2f(x - m_new);
        l[i] += x;  // the softmax sums undropped probabilities
        if (s.drop.active()) x *= z[i][n][e];
      }
    }
  }
}

// The forward's end: each row's log-sum-exp (natural base) and o / l stored.
template <typename T>
__device__ __forceinline__ void finish_forward(const HeadsView<T>& y, float* lse, float o[8][4],
                                               float m[2], float l[2], int bh, int b, int h, int r0,
                                               int t, int lane) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
    const int r = r0 + 8 * i;
    if ((lane & 3) == 0 && r < t) lse[int64_t(bh) * t + r] = (m[i] + log2f(l[i])) / kLog2e;
  }
  store_rows(y, b, h, r0, t, o, 1.f / l[0], 1.f / l[1], lane);
}

// From the scores (p) and dy v^T (ds) of this thread's rows r0, r0 + 8 in key tile kt: p gets
// P * z (the dropped probabilities that multiplied V), ds gets dS = P (z dy.v - delta), the
// softmax gradient of the scaled scores.
__device__ __forceinline__ void probs_and_grads(float p[8][4], float ds[8][4], const float lse2[2],
                                                const float delta[2], int bh, int r0, int kt,
                                                bool diagonal, const AttnShape& s, int lane) {
  float z[2][8][2];
  if (s.drop.active()) dropout_rows(z, s, bh, r0, kt, lane);
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = kt * kTile + 8 * n + 2 * (lane & 3) + e;
        const float zf = s.drop.active() ? z[i][n][e] : 1.f;
        float& x = p[n][2 * i + e];
        x = diagonal && col > r0 + 8 * i ? 0.f : exp2f(x * s.scale_log2 - lse2[i]);
        float& g = ds[n][2 * i + e];
        g = x * (g * zf - delta[i]);
        x *= zf;
      }
}

// The Hopper kernels (attention_wgmma.cu), for bf16 views whose rows start 16-byte aligned;
// `heads_total` is B * H. The backward reads delta (attention.cu's delta kernel fills it).
void forward_wgmma(const HeadsView<bf16>& y, float* lse, const HeadsView<const bf16>& q,
                   const HeadsView<const bf16>& k, const HeadsView<const bf16>& v,
                   const AttnShape& s, int heads_total, cudaStream_t stream);
void backward_wgmma(const HeadsView<bf16>& dq, const HeadsView<bf16>& dk, const HeadsView<bf16>& dv,
                    const HeadsView<const bf16>& q, const HeadsView<const bf16>& k,
                    const HeadsView<const bf16>& v, const HeadsView<const bf16>& dy,
                    const float* lse, const float* delta, const AttnShape& s, int heads_total,
                    cudaStream_t stream);

}  // namespace bg::cuda::attn
