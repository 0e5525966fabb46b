// lmul_gemm.cu: the matmul of MatmulAlgo::lmul (kernels/lmul.h, docs/lmul.md): every multiply
// an L-Mul, each output one f32 chain of adds over k in order from zero, as the CPU reference
// (kernels/cpu/lmul.cpp) computes it, so the two agree bit for bit.
//
// Tiles of 128 x 128 outputs over K steps of 8, 256 threads of 8 x 8 outputs (rows 4ty..4ty+3
// and 64 + the same, columns likewise in tx), operands rounded to the mantissa width as they are
// staged in shared memory. Each of the fixed order's chunks (kLmulChunk k) runs in its own block;
// with several, their sums go to a workspace that a second kernel adds in chunk order. The
// inner loop has two forms, chosen per K step for the whole block:
// - fast, when every staged operand is zero or has an exponent in [2^-63, 2^64): then no
//   product can underflow or overflow, and the bare integer form is exact. One IADD3 gives the
//   product's bits, sign included (the sign bits' sum carries out of the word). A zero operand is
//   staged as its sign | offset, so the sum is its partner's bits (finite), and an FFMA by a 0/1
//   mask adds +-0: acc + r * 1 is the same rounding as acc + r, and adding +-0 leaves a sum that
//   started at +0 unchanged. Only one side may hold zeros (the mask comes from that side).
// - exact otherwise: kernels/lmul.h's lmul() with every edge case, on the staged values.
// Both forms give lmul()'s result for every pair, so the choice never changes a bit.
#include <algorithm>
#include <cstdint>

#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

constexpr int kTile = 128, kK = 8, kThreads = 256;

struct GemmStrides {
  int64_t a0, a1, a2, b0, b1, b2, o0, o1, o2;
};

enum : int { kHasZero = 1, kNotOrdinary = 2 };

// Stages x (rounded) as the fast form's bits and its 0/1 mask; returns the class flags.
__device__ __forceinline__ int stage(float x, int m, uint32_t offset, uint32_t* enc, float* mask) {
  const uint32_t u = lmul_bits_of(lmul_round(x, m));
  const uint32_t e = (u >> 23) & 0xFFu;
  if (e == 0) {  // zero (denormals were flushed)
    *enc = (u & 0x80000000u) | offset;
    *mask = 0.0f;
    return kHasZero;
  }
  *enc = u;
  *mask = 1.0f;
  return e < 64 || e > 190 ? kNotOrdinary : 0;
}

// The staged value back as the rounded operand (a zero's sign kept).
__device__ __forceinline__ float staged_value(uint32_t enc, float mask) {
  return lmul_float_of(mask == 0.0f ? enc & 0x80000000u : enc);
}

// blockIdx.z = batch * chunks + chunk: a block sums one chunk of K (all of K when it fits one)
// into out, or with several chunks into the workspace (chunk, batch, m, n).
__global__ void __launch_bounds__(kThreads, 2)  // two blocks an SM: 128 registers
    lmul_gemm_kernel(float* out, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                     GemmStrides s, int bits, uint32_t offset, int64_t chunks) {
  __shared__ __align__(16) uint32_t ea[kK][kTile], eb[kK][kTile];
  __shared__ __align__(16) float za[kK][kTile], zb[kK][kTile];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t z = blockIdx.z / chunks, chunk = blockIdx.z % chunks;
  const int64_t m0 = int64_t(blockIdx.y) * kTile, n0 = int64_t(blockIdx.x) * kTile;
  const float* pa = a + z * s.a0;
  const float* pb = b + z * s.b0;
  // Staging order: along whichever of an operand's dimensions is contiguous.
  const bool a_k_inner = s.a2 == 1, b_n_inner = s.b2 == 1;
  const int64_t k_begin = chunk * kLmulChunk, k_end = min(k, k_begin + kLmulChunk);
  float acc[8][8] = {};
  {
    for (int64_t k0 = k_begin; k0 < k_end; k0 += kK) {
      int flags_a = 0, flags_b = 0;
      for (int e = tid; e < kK * kTile; e += kThreads) {
        const int kk = a_k_inner ? e % kK : e / kTile, i = a_k_inner ? e / kK : e % kTile;
        const bool in = k0 + kk < k_end && m0 + i < m;
        flags_a |= stage(in ? pa[(m0 + i) * s.a1 + (k0 + kk) * s.a2] : 0.0f, bits, offset,
                         &ea[kk][i], &za[kk][i]);
        const int kb = b_n_inner ? e / kTile : e % kK, j = b_n_inner ? e % kTile : e / kK;
        const bool in_b = k0 + kb < k_end && n0 + j < n;
        flags_b |= stage(in_b ? pb[(k0 + kb) * s.b1 + (n0 + j) * s.b2] : 0.0f, bits, offset,
                         &eb[kb][j], &zb[kb][j]);
      }
      const int any_a = __syncthreads_or(flags_a), any_b = __syncthreads_or(flags_b);
      const int steps = int(k_end - k0 < kK ? k_end - k0 : kK);
      const bool fast = !((any_a | any_b) & kNotOrdinary) && !((any_a & any_b) & kHasZero);
      if (fast) {
        const bool mask_rows = any_a & kHasZero, mask_cols = any_b & kHasZero;
        for (int kk = 0; kk < steps; ++kk) {
          uint32_t ua[8], ub[8];
          float mr[8], mc[8];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const uint4 va = *reinterpret_cast<const uint4*>(&ea[kk][64 * h + 4 * ty]);
            const uint4 vb = *reinterpret_cast<const uint4*>(&eb[kk][64 * h + 4 * tx]);
            ua[4 * h] = va.x, ua[4 * h + 1] = va.y, ua[4 * h + 2] = va.z, ua[4 * h + 3] = va.w;
            ub[4 * h] = vb.x, ub[4 * h + 1] = vb.y, ub[4 * h + 2] = vb.z, ub[4 * h + 3] = vb.w;
            const float4 fa = *reinterpret_cast<const float4*>(&za[kk][64 * h + 4 * ty]);
            const float4 fb = *reinterpret_cast<const float4*>(&zb[kk][64 * h + 4 * tx]);
            mr[4 * h] = fa.x, mr[4 * h + 1] = fa.y, mr[4 * h + 2] = fa.z, mr[4 * h + 3] = fa.w;
            mc[4 * h] = fb.x, mc[4 * h + 1] = fb.y, mc[4 * h + 2] = fb.z, mc[4 * h + 3] = fb.w;
          }
          if (mask_rows) {
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
              for (int j = 0; j < 8; ++j)
                acc[i][j] = __fmaf_rn(lmul_float_of(ua[i] + ub[j] - offset), mr[i], acc[i][j]);
          } else if (mask_cols) {
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
              for (int j = 0; j < 8; ++j)
                acc[i][j] = __fmaf_rn(lmul_float_of(ua[i] + ub[j] - offset), mc[j], acc[i][j]);
          } else {
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
              for (int j = 0; j < 8; ++j)
                acc[i][j] = __fadd_rn(acc[i][j], lmul_float_of(ua[i] + ub[j] - offset));
          }
        }
      } else {
        for (int kk = 0; kk < steps; ++kk) {
          float va[8], vb[8];
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            const int r = 64 * (i / 4) + 4 * ty + i % 4, c = 64 * (i / 4) + 4 * tx + i % 4;
            va[i] = staged_value(ea[kk][r], za[kk][r]);
            vb[i] = staged_value(eb[kk][c], zb[kk][c]);
          }
#pragma unroll
          for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j)
              acc[i][j] = __fadd_rn(acc[i][j], lmul(va[i], vb[j], offset));
        }
      }
      __syncthreads();
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int64_t row = m0 + 64 * (i / 4) + 4 * ty + i % 4;
      const int64_t col = n0 + 64 * (j / 4) + 4 * tx + j % 4;
      if (row < m && col < n) {
        if (chunks == 1)
          out[z * s.o0 + row * s.o1 + col * s.o2] = acc[i][j];
        else  // the workspace: (chunk, batch, m, n) contiguous
          out[((chunk * int64_t(gridDim.z / chunks) + z) * m + row) * n + col] = acc[i][j];
      }
    }
}

// out = the chunk sums added in chunk order from zero.
__global__ void lmul_chunk_sum_kernel(float* out, const float* parts, int64_t chunks, int64_t batch,
                                      int64_t m, int64_t n, GemmStrides s) {
  BG_GRID_LOOP(idx, batch * m * n) {
    const int64_t j = idx % n, i = (idx / n) % m, z = idx / (m * n);
    float total = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) total = __fadd_rn(total, parts[c * batch * m * n + idx]);
    out[z * s.o0 + i * s.o1 + j * s.o2] = total;
  }
}

}  // namespace

void matmul_lmul(const KView& out, const KView& a, const KView& b, const LmulParams& p,
                 Scratch& scratch, StreamHandle stream) {
  if (a.dtype != DType::f32 || b.dtype != DType::f32 || out.dtype != DType::f32)
    kernel_fail("matmul_lmul", "L-Mul multiplies f32 operands (rounded to the mantissa width)");
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  if (batch * m * n == 0) return;
  const GemmStrides s{a.strides[0], a.strides[1],   a.strides[2],   b.strides[0],  b.strides[1],
                      b.strides[2], out.strides[0], out.strides[1], out.strides[2]};
  // Each chunk in its own block: one set of accumulators (128 registers, two blocks an SM), and
  // a weight gradient's long K fills the GPU; adding the chunk sums is one pass over them.
  const int64_t chunks = std::max<int64_t>((k + kLmulChunk - 1) / kLmulChunk, 1);
  const bool split = chunks > 1;
  const dim3 grid(unsigned((n + kTile - 1) / kTile), unsigned((m + kTile - 1) / kTile),
                  unsigned(batch * chunks));
  float* dst = static_cast<float*>(out.data);
  if (split) dst = static_cast<float*>(scratch.get(size_t(chunks * batch * m * n) * 4));
  lmul_gemm_kernel<<<grid, kThreads, 0, as_stream(stream)>>>(
      dst, static_cast<const float*>(a.data), static_cast<const float*>(b.data), m, n, k, s,
      p.mantissa_bits, p.offset, chunks);
  BG_CUDA_LAUNCH_CHECK();
  if (split) {
    lmul_chunk_sum_kernel<<<grid_for(batch * m * n, 256), 256, 0, as_stream(stream)>>>(
        static_cast<float*>(out.data), dst, chunks, batch, m, n, s);
    BG_CUDA_LAUNCH_CHECK();
  }
}

}  // namespace bg::cuda
