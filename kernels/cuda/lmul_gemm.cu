// lmul_gemm.cu: the matmul of MatmulAlgo::lmul (kernels/lmul.h, docs/lmul.md): every multiply
// an L-Mul, each output one f32 chain of adds over k in order from zero, as the CPU reference
// (kernels/cpu/lmul.cpp) computes it, so the two agree bit for bit.
//
// Tiles of 128 x 128 outputs over K steps of 16, 256 threads of 8 x 8 outputs (rows
// 4ty..4ty+3 and 64 + the same, columns likewise in tx). Each thread copies four quads of four
// consecutive operand elements (16-byte cp.async where aligned) for the next K step while the
// current one computes, then stages them rounded to the mantissa width, B less the offset, so
// that the inner loop's product is one integer add. Each of the fixed order's chunks
// (kLmulChunk k) runs in its own block; with several, their sums go to a workspace that a second
// kernel adds in chunk order. The inner loop has two forms, chosen per K step for the block:
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

#include "cp_async.cuh"
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

// kPad: a staged row's length; the 4 extra words spread the transposed stores of k-contiguous
// operands over the banks and keep the 16-byte alignment of the inner loop's loads.
constexpr int kTile = 128, kK = 16, kThreads = 256, kPad = kTile + 4;

// How a block reads one operand as a kK x kTile tile (dim: A's rows or B's columns): each thread
// takes two quads of four consecutive elements along the operand's contiguous dimension, one
// 16-byte load each where the layout is aligned, four guarded loads otherwise.
struct OperandLayout {
  int64_t batch_stride, dim_stride, k_stride, dim;
  bool k_inner;  // quads along k (k_stride == 1) rather than along dim
  bool vector;   // every in-range quad starts 16-byte aligned
};

OperandLayout operand_layout(const void* data, int64_t batch_stride, int64_t dim_stride,
                             int64_t k_stride, int64_t dim) {
  OperandLayout l{batch_stride, dim_stride, k_stride, dim, k_stride == 1 || dim_stride != 1, false};
  const int64_t quad_stride = l.k_inner ? k_stride : dim_stride;
  const int64_t other_stride = l.k_inner ? dim_stride : k_stride;
  l.vector = quad_stride == 1 && other_stride % 4 == 0 && batch_stride % 4 == 0 &&
             reinterpret_cast<uintptr_t>(data) % 16 == 0;
  return l;
}

// What the inner loop's forms need to know of one operand's staged tile: its largest and
// smallest exponent over the non-zero elements (an Inf or NaN counts as 255), and whether it
// holds a zero. Kept as maxima (emin_neg = 255 - the smallest) so that a block reduces them
// with max.
struct TileStats {
  int emax = 0, emin_neg = 0;
  bool zero = false;
};

// Stages x (rounded) as the fast form's bits less `sub` (B carries the offset, so the inner
// loop's product is one add) and its 0/1 mask, and counts it in the tile's stats.
__device__ __forceinline__ void stage(float x, int m, uint32_t offset, uint32_t sub, uint32_t* enc,
                                      float* mask, TileStats& st) {
  const uint32_t u = lmul_bits_of(lmul_round(x, m));
  const int e = int((u >> 23) & 0xFFu);
  if (e == 0) {  // zero (denormals were flushed): its sign | offset, masked out
    *enc = ((u & 0x80000000u) | offset) - sub;
    *mask = 0.0f;
    st.zero = true;
    return;
  }
  *enc = u - sub;
  *mask = 1.0f;
  st.emax = max(st.emax, e), st.emin_neg = max(st.emin_neg, 255 - e);
}

// The staged value back as the rounded operand (a zero's sign kept).
__device__ __forceinline__ float staged_value(uint32_t enc, float mask, uint32_t sub) {
  const uint32_t u = enc + sub;
  return lmul_float_of(mask == 0.0f ? u & 0x80000000u : u);
}

__device__ __forceinline__ int clamp_to_quad(int64_t left) {
  return left <= 0 ? 0 : left >= 4 ? 4 : int(left);
}

// One of a thread's two quads of an operand's tile at k0: its first element's place in the
// tile (kk, i), how many of its four elements are in range (valid), how many are before k_end
// (in_k), and its first element's address. A full tile (kFull) has every element in range.
struct Quad {
  int kk, i, valid, in_k;
  const float* src;
};

template <bool kFull>
__device__ __forceinline__ Quad quad_at(const float* base, const OperandLayout& l, int r,
                                        int64_t d0, int64_t k0, int64_t k_end) {
  const int tid = threadIdx.x;
  Quad q;
  q.i = l.k_inner ? tid / 4 + 64 * r : (tid % 32) * 4;
  q.kk = l.k_inner ? (tid % 4) * 4 : tid / 32 + 8 * r;
  const int64_t row = d0 + q.i, kg = k0 + q.kk;
  q.src = base + row * l.dim_stride + kg * l.k_stride;
  if (kFull) {
    q.valid = q.in_k = 4;
  } else {
    const int64_t left_k = k_end - kg, left_dim = l.dim - row;
    q.in_k = l.k_inner ? clamp_to_quad(left_k) : left_k > 0 ? 4 : 0;
    q.valid = min(q.in_k, l.k_inner ? (left_dim > 0 ? 4 : 0) : clamp_to_quad(left_dim));
  }
  return q;
}

// This thread's raw copy slots: raw[(operand * 2 + r) * kThreads + tid], one float4 a quad.
// Each thread copies and later reads only its own slots, so the copies need no barrier.
template <bool kFull>
__device__ __forceinline__ void fetch_quads(float4* raw, const float* base, const OperandLayout& l,
                                            int64_t d0, int64_t k0, int64_t k_end) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const Quad q = quad_at<kFull>(base, l, r, d0, k0, k_end);
    float4* slot = &raw[r * kThreads + threadIdx.x];
    if (l.vector) {  // the valid elements; the rest zero-filled and not read
      mma::cp_async16_partial(mma::smem_addr(slot), q.src, q.valid * 4);
    } else {
      const int64_t step = l.k_inner ? l.k_stride : l.dim_stride;
#pragma unroll
      for (int c = 0; c < 4; ++c)
        if (c < q.valid)
          mma::cp_async4(mma::smem_addr(reinterpret_cast<float*>(slot) + c), q.src + c * step);
    }
  }
}

// Stages this thread's two quads of one operand's tile at k0 (its raw slots) into
// enc/mask[k][dim], counting the in-range elements in st. Elements past the operand's end
// are staged so that they change no in-range output: A's past k_end as +0 (masked out,
// flagged, so the inner loop honours the mask), the rest as values whose fast-form sum is the
// partner's finite bits.
template <bool kIsB, bool kFull>
__device__ __forceinline__ void stage_tile(uint32_t (*enc)[kPad], float (*mask)[kPad],
                                           const float4* raw, const float* base,
                                           const OperandLayout& l, int64_t d0, int64_t k0,
                                           int64_t k_end, int bits, uint32_t offset,
                                           TileStats& st) {
  const uint32_t sub = kIsB ? offset : 0u;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const Quad q = quad_at<kFull>(base, l, r, d0, k0, k_end);
    const float4 raw_quad = raw[r * kThreads + threadIdx.x];
    const float v[4] = {raw_quad.x, raw_quad.y, raw_quad.z, raw_quad.w};
    uint32_t e[4];
    float z[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      if (c < q.valid) {
        stage(v[c], bits, offset, sub, &e[c], &z[c], st);
      } else if (!kIsB && c >= q.in_k) {  // A past k_end: a masked zero
        e[c] = offset, z[c] = 0.0f;
        st.zero = true;
      } else {  // neutral: the sum is the partner's bits
        e[c] = offset - sub, z[c] = 1.0f;
      }
    }
    if (l.k_inner) {
#pragma unroll
      for (int c = 0; c < 4; ++c) enc[q.kk + c][q.i] = e[c], mask[q.kk + c][q.i] = z[c];
    } else {
      *reinterpret_cast<uint4*>(&enc[q.kk][q.i]) = make_uint4(e[0], e[1], e[2], e[3]);
      *reinterpret_cast<float4*>(&mask[q.kk][q.i]) = make_float4(z[0], z[1], z[2], z[3]);
    }
  }
}

// Loads this thread's 8 staged values of a row of a tile: positions 4t..4t+3 and 64 + those.
__device__ __forceinline__ void load8(const uint32_t* row, int t, uint32_t* u) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint4 q = *reinterpret_cast<const uint4*>(&row[64 * h + 4 * t]);
    u[4 * h] = q.x, u[4 * h + 1] = q.y, u[4 * h + 2] = q.z, u[4 * h + 3] = q.w;
  }
}
__device__ __forceinline__ void load8(const float* row, int t, float* f) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float4 q = *reinterpret_cast<const float4*>(&row[64 * h + 4 * t]);
    f[4 * h] = q.x, f[4 * h + 1] = q.y, f[4 * h + 2] = q.z, f[4 * h + 3] = q.w;
  }
}

// The kernel's shared memory: the staged tiles and every thread's raw copy slots (50 KB).
struct LmulSmem {
  uint32_t ea[kK][kPad], eb[kK][kPad];
  float za[kK][kPad], zb[kK][kPad];
  float4 raw[4 * kThreads];  // A's two quads, then B's
  int stats[2][5];           // per K step's parity: A's emax, emin_neg, B's, the zero flags
};

// The block's stats of both staged tiles into slot (zeroed beforehand): each warp reduces its
// lanes', and one lane a warp adds them with shared-memory atomics.
__device__ __forceinline__ void reduce_stats(int* slot, const TileStats& sa, const TileStats& sb) {
  const unsigned all = 0xFFFFFFFFu;
  const unsigned v[4] = {
      __reduce_max_sync(all, unsigned(sa.emax)), __reduce_max_sync(all, unsigned(sa.emin_neg)),
      __reduce_max_sync(all, unsigned(sb.emax)), __reduce_max_sync(all, unsigned(sb.emin_neg))};
  const unsigned zeros = __reduce_or_sync(all, unsigned(sa.zero) | unsigned(sb.zero) << 1);
  if (threadIdx.x % 32 == 0) {
#pragma unroll
    for (int q = 0; q < 4; ++q) atomicMax(&slot[q], int(v[q]));
    atomicOr(&slot[4], int(zeros));
  }
}

// x * y rounded toward zero, a subnormal result flushed to a zero of its sign: the guarded
// form's scale back by 2^-64, exact for a normal result and +-0 for one below 2^-126 (round
// toward zero never lifts such a product to the smallest normal).
__device__ __forceinline__ float mul_rz_ftz(float x, float y) {
  float r;
  asm("mul.rz.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
  return r;
}

// blockIdx.z = batch * chunks + chunk: a block sums one chunk of K (all of K when it fits one)
// into out, or with several chunks into the workspace (chunk, batch, m, n). A K step's operands
// are copied (cp.async) while the previous step computes.
__global__ void __launch_bounds__(kThreads, 2)  // two blocks an SM: 128 registers
    lmul_gemm_kernel(float* out, const float* a, const float* b, int64_t m, int64_t n, int64_t k,
                     OperandLayout la, OperandLayout lb, int64_t o0, int64_t o1, int64_t o2,
                     int bits, uint32_t offset, int64_t chunks) {
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  LmulSmem& sm = *reinterpret_cast<LmulSmem*>(smem_bytes);
  auto& ea = sm.ea;
  auto& eb = sm.eb;
  auto& za = sm.za;
  auto& zb = sm.zb;
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int64_t z = blockIdx.z / chunks, chunk = blockIdx.z % chunks;
  const int64_t m0 = int64_t(blockIdx.y) * kTile, n0 = int64_t(blockIdx.x) * kTile;
  const float* pa = a + z * la.batch_stride;
  const float* pb = b + z * lb.batch_stride;
  const int64_t k_begin = chunk * kLmulChunk, k_end = min(k, k_begin + kLmulChunk);
  const bool full_mn = m0 + kTile <= m && n0 + kTile <= n;
  auto fetch = [&](int64_t k0) {
    if (full_mn && k0 + kK <= k_end) {
      fetch_quads<true>(sm.raw, pa, la, m0, k0, k_end);
      fetch_quads<true>(sm.raw + 2 * kThreads, pb, lb, n0, k0, k_end);
    } else {
      fetch_quads<false>(sm.raw, pa, la, m0, k0, k_end);
      fetch_quads<false>(sm.raw + 2 * kThreads, pb, lb, n0, k0, k_end);
    }
    mma::cp_async_commit();
  };
  float acc[8][8] = {};
  if (tid < 10) (&sm.stats[0][0])[tid] = 0;
  __syncthreads();
  fetch(k_begin);
  int parity = 0;
  for (int64_t k0 = k_begin; k0 < k_end; k0 += kK, parity ^= 1) {
    mma::cp_async_wait<0>();  // this thread's copies for k0 have landed
    TileStats st_a, st_b;
    if (full_mn && k0 + kK <= k_end) {
      stage_tile<false, true>(ea, za, sm.raw, pa, la, m0, k0, k_end, bits, offset, st_a);
      stage_tile<true, true>(eb, zb, sm.raw + 2 * kThreads, pb, lb, n0, k0, k_end, bits, offset,
                             st_b);
    } else {
      stage_tile<false, false>(ea, za, sm.raw, pa, la, m0, k0, k_end, bits, offset, st_a);
      stage_tile<true, false>(eb, zb, sm.raw + 2 * kThreads, pb, lb, n0, k0, k_end, bits, offset,
                              st_b);
    }
    if (k0 + kK < k_end) fetch(k0 + kK);  // the raw slots are read: refill them
    reduce_stats(sm.stats[parity], st_a, st_b);
    // The other slot was last read before the previous step's closing barrier and is next
    // written after this step's: clear it for the next step.
    if (tid < 5) sm.stats[parity ^ 1][tid] = 0;
    __syncthreads();
    const int* st = sm.stats[parity];
    const int emax_a = st[0], emin_a = 255 - st[1], emax_b = st[2], emin_b = 255 - st[3];
    const bool zeros_a = st[4] & 1, zeros_b = st[4] & 2;
    const bool finite = emax_a < 255 && emax_b < 255;
    // fast: exponent sums in [128, 379], so no product can underflow or overflow (docs/lmul.md),
    // and zeros on one side at most; guarded: products scaled by 2^64 stay normal and finite,
    // and so do the stand-ins of zeros (the partner's bits, scaled).
    const bool fast =
        finite && emin_a + emin_b >= 128 && emax_a + emax_b <= 379 && !(zeros_a && zeros_b);
    const bool guarded =
        finite && emin_a + emin_b >= 64 && emax_a + emax_b <= 315 && emax_a <= 190 && emax_b <= 190;
    if (fast && zeros_a) {  // zeros in A: each product times its row's mask
#pragma unroll 4
      for (int kk = 0; kk < kK; ++kk) {
        uint32_t ua[8], ub[8];
        float mr[8];
        load8(ea[kk], ty, ua), load8(eb[kk], tx, ub), load8(za[kk], ty, mr);
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
          for (int j = 0; j < 8; ++j)
            acc[i][j] = __fmaf_rn(lmul_float_of(ua[i] + ub[j]), mr[i], acc[i][j]);
      }
    } else if (fast && zeros_b) {  // zeros in B: times its column's mask
#pragma unroll 4
      for (int kk = 0; kk < kK; ++kk) {
        uint32_t ua[8], ub[8];
        float mc[8];
        load8(ea[kk], ty, ua), load8(eb[kk], tx, ub), load8(zb[kk], tx, mc);
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
          for (int j = 0; j < 8; ++j)
            acc[i][j] = __fmaf_rn(lmul_float_of(ua[i] + ub[j]), mc[j], acc[i][j]);
      }
    } else if (fast) {
#pragma unroll 4
      for (int kk = 0; kk < kK; ++kk) {
        uint32_t ua[8], ub[8];
        load8(ea[kk], ty, ua), load8(eb[kk], tx, ub);
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
          for (int j = 0; j < 8; ++j)
            acc[i][j] = __fadd_rn(acc[i][j], lmul_float_of(ua[i] + ub[j]));
      }
    } else if (guarded) {  // the sum 2^64 times the product, scaled back with underflow to +-0
#pragma unroll 2
      for (int kk = 0; kk < kK; ++kk) {
        uint32_t ua[8], ub[8];
        float mr[8], mc[8];
        load8(ea[kk], ty, ua), load8(eb[kk], tx, ub), load8(za[kk], ty, mr), load8(zb[kk], tx, mc);
#pragma unroll
        for (int q = 0; q < 8; ++q) ub[q] += 64u << 23, mr[q] *= 0x1p-64f;
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
          for (int j = 0; j < 8; ++j)
            acc[i][j] =
                __fmaf_rn(mul_rz_ftz(lmul_float_of(ua[i] + ub[j]), mr[i]), mc[j], acc[i][j]);
      }
    } else {
      for (int kk = 0; kk < kK; ++kk) {
        float va[8], vb[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const int r = 64 * (i / 4) + 4 * ty + i % 4, c = 64 * (i / 4) + 4 * tx + i % 4;
          va[i] = staged_value(ea[kk][r], za[kk][r], 0u);
          vb[i] = staged_value(eb[kk][c], zb[kk][c], offset);
        }
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[i][j] = __fadd_rn(acc[i][j], lmul(va[i], vb[j], offset));
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int64_t row = m0 + 64 * (i / 4) + 4 * ty + i % 4;
      const int64_t col = n0 + 64 * (j / 4) + 4 * tx + j % 4;
      if (row < m && col < n) {
        if (chunks == 1)
          out[z * o0 + row * o1 + col * o2] = acc[i][j];
        else  // the workspace: (chunk, batch, m, n) contiguous
          out[((chunk * int64_t(gridDim.z / chunks) + z) * m + row) * n + col] = acc[i][j];
      }
    }
}

// out = the chunk sums added in chunk order from zero.
__global__ void lmul_chunk_sum_kernel(float* out, const float* parts, int64_t chunks, int64_t batch,
                                      int64_t m, int64_t n, int64_t o0, int64_t o1, int64_t o2) {
  BG_GRID_LOOP(idx, batch * m * n) {
    const int64_t j = idx % n, i = (idx / n) % m, z = idx / (m * n);
    float total = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) total = __fadd_rn(total, parts[c * batch * m * n + idx]);
    out[z * o0 + i * o1 + j * o2] = total;
  }
}

}  // namespace

void matmul_lmul(const KView& out, const KView& a, const KView& b, const LmulParams& p,
                 Scratch& scratch, StreamHandle stream) {
  if (a.dtype != DType::f32 || b.dtype != DType::f32 || out.dtype != DType::f32)
    kernel_fail("matmul_lmul", "L-Mul multiplies f32 operands (rounded to the mantissa width)");
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  if (batch * m * n == 0) return;
  // A is (m, k), B is (k, n): each staged as a kK x kTile tile of its m or n dimension.
  const OperandLayout la = operand_layout(a.data, a.strides[0], a.strides[1], a.strides[2], m);
  const OperandLayout lb = operand_layout(b.data, b.strides[0], b.strides[2], b.strides[1], n);
  const int64_t o0 = out.strides[0], o1 = out.strides[1], o2 = out.strides[2];
  // Each chunk in its own block: one set of accumulators (128 registers, two blocks an SM), and
  // a weight gradient's long K fills the GPU; adding the chunk sums is one pass over them.
  const int64_t chunks = std::max<int64_t>((k + kLmulChunk - 1) / kLmulChunk, 1);
  const bool split = chunks > 1;
  const dim3 grid(unsigned((n + kTile - 1) / kTile), unsigned((m + kTile - 1) / kTile),
                  unsigned(batch * chunks));
  float* dst = static_cast<float*>(out.data);
  if (split) dst = static_cast<float*>(scratch.get(size_t(chunks * batch * m * n) * 4));
  allow_shared_memory(lmul_gemm_kernel, int(sizeof(LmulSmem)));
  lmul_gemm_kernel<<<grid, kThreads, sizeof(LmulSmem), as_stream(stream)>>>(
      dst, static_cast<const float*>(a.data), static_cast<const float*>(b.data), m, n, k, la, lb,
      o0, o1, o2, p.mantissa_bits, p.offset, chunks);
  BG_CUDA_LAUNCH_CHECK();
  if (split) {
    lmul_chunk_sum_kernel<<<grid_for(batch * m * n, 256), 256, 0, as_stream(stream)>>>(
        static_cast<float*>(out.data), dst, chunks, batch, m, n, o0, o1, o2);
    BG_CUDA_LAUNCH_CHECK();
  }
}

}  // namespace bg::cuda
