// sick_common.cuh: what the two SICK kernels (bruteforce in sick.cu, precomputed in
// sick_precomputed.cu) share: launch arguments, the mma.sync wrappers, the per-pattern online
// softmax step and the CTA epilogue that merges warps in a fixed order.
#pragma once

#include <cuda_fp16.h>

#include <type_traits>

#include "../bide_values.h"
#include "cuda_common.cuh"

namespace bg::cuda::sick {

constexpr int kWarps = 4;
constexpr int kTile = 32;      // patterns per warp step: two m16 tiles
constexpr float kSlack = 8.f;  // the running max moves only when exceeded by this much
// Hidden units: the bruteforce kernel instantiates 4, 8, 16 and 32 n8 tiles (above 64 its
// accumulators spill to local memory); the precomputed kernel's tables fit 4 and 8.
constexpr int kMaxHidden = 256;
constexpr int kMaxPrecomputedHidden = 64;

struct KernelArgs {
  const void* w;
  const void* r;
  const int64_t* lo;
  const int64_t* hi;
  int64_t n_ex, hid, slices;
  int64_t w_rows;  // row n reads W and r row n % w_rows
  DType wtype;  // W and r element type (the precomputed kernel converts at load)
  BideCode code;
  uint32_t outputs;
  uint64_t seed;
  // Outputs when slices == 1, else per-(example, slice) partials in the same layout with
  // n * slices + slice as the row.
  float *m, *s, *gr, *gw, *stats, *best;
  int64_t* best_idx;
  float* logz;  // optional: m + log s (final outputs only)
  // With slices > 1: the final outputs, written by the last CTA of each example to finish.
  float *out_m, *out_s, *out_gr, *out_gw, *out_stats;
  int64_t* out_sample;
};

// Slices may split an example only while N < kMaxSlicedExamples (sick_forward's rule).
constexpr int kMaxSlicedExamples = 1024;
// Per-example arrival counters of the slice merge: zero between launches (the merging CTA
// resets its own), one array per kernel file. bitgrad issues a device's work on one stream,
// so two SICK launches never overlap on the same counters.
namespace {
__device__ unsigned int g_slice_tickets[kMaxSlicedExamples];
}

template <typename T>
__device__ __forceinline__ float load_f(const T* p, int64_t i) {
  return to_float(p[i]);
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// hi/lo f16 split of a float pair: hi + lo carries ~22 bits.
__device__ __forceinline__ void split_pack(float a, float b, uint32_t& hi, uint32_t& lo) {
  const __half ha = __float2half_rn(a), hb = __float2half_rn(b);
  hi = pack_half2(__half2float(ha), __half2float(hb));
  lo = pack_half2(a - __half2float(ha), b - __half2float(hb));
}

// D (f32) += A . B on mma.sync m16n8k16, f16 inputs.
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// D (f32) = A . B with C = 0 (the zero register: no moves to clear accumulators).
__device__ __forceinline__ void mma16816_0(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                           uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.f));
}

// f16 accumulate: D (2 x half2) = A . B + C.
__device__ __forceinline__ void mma16816_h(uint32_t (&d)[2], const uint32_t (&a)[4], uint32_t b0,
                                           uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
      "{%0,%1};\n"
      : "+r"(d[0]), "+r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The same with C = 0.
__device__ __forceinline__ void mma16816_h0(uint32_t (&d)[2], const uint32_t (&a)[4], uint32_t b0,
                                            uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
      "{%8,%8};\n"
      : "=r"(d[0]), "=r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0u));
}

// The r operand of l = relu(z) . r, replicated over the 8 columns of B (hi and lo f16 halves);
// r_at(i) reads r_n[i] as a float.
template <int KL, typename RAt>
__device__ __forceinline__ void load_r_operand(RAt r_at, int hid, int c, uint32_t (&rb)[KL][2],
                                               uint32_t (&rbl)[KL][2]) {
#pragma unroll
  for (int ks = 0; ks < KL; ++ks)
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int i = 16 * ks + 2 * c + 8 * q;
      split_pack(i < hid ? r_at(i) : 0.f, i + 1 < hid ? r_at(i + 1) : 0.f, rb[ks][q], rbl[ks][q]);
    }
}

// The tiles [begin, end) of the example's pattern range [lo, hi) that a warp visits.
struct WarpRange {
  int64_t lo, hi;
  int begin, end;
};

__device__ __forceinline__ WarpRange warp_range(const KernelArgs& a, int64_t n, int64_t slice,
                                                int warp) {
  WarpRange r;
  r.lo = a.lo ? a.lo[n] : 0;
  r.hi = a.hi ? a.hi[n] : (int64_t(1) << a.code.bits);
  const int64_t first_tile = r.lo / kTile, tiles = (r.hi + kTile - 1) / kTile - first_tile;
  const int64_t per_slice = (tiles + a.slices - 1) / a.slices;
  const int64_t s_begin = first_tile + min(tiles, slice * per_slice);
  const int64_t s_end = first_tile + min(tiles, (slice + 1) * per_slice);
  const int64_t per_warp = (s_end - s_begin + kWarps - 1) / kWarps;
  const int64_t w_begin = min(s_end, s_begin + warp * per_warp);
  r.begin = int(w_begin);
  r.end = int(min(s_end, w_begin + per_warp));
  return r;
}

// A warp's running state: online softmax (m, s), moment sums, the sample's best Gumbel key, and
// (with gradients) the K-sum gw^T as mma accumulators: rows bits 16 kb + g (+8), columns hidden
// units 8 nt + 2c (+1).
template <int NT, int KB, bool kGrad>
struct WarpState {
  float m = -INFINITY, s = 0.f;
  float m_log2 = -INFINITY;  // m * log2(e): e = 2^(l log2(e) - m_log2) is one FFMA and MUFU.EX2
  float st[4] = {0.f, 0.f, 0.f, 0.f};
  float best = -INFINITY;
  int64_t best_k = -1;
  float gw[KB][NT][4] = {};

  // Moves the reference point when a logit exceeds it by more than the slack (rare).
  __device__ __forceinline__ void raise_max(float logit_max) {
    if (__any_sync(0xffffffffu, logit_max > m + kSlack)) {
      const float new_m = warp_max(logit_max);
      const float scale = m == -INFINITY ? 0.f : __expf(m - new_m);
      s *= scale;
#pragma unroll
      for (int q = 0; q < 4; ++q) st[q] *= scale;
      if (kGrad) {
#pragma unroll
        for (int kb = 0; kb < KB; ++kb)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int q = 0; q < 4; ++q) gw[kb][nt][q] *= scale;
      }
      m = new_m;
      m_log2 = new_m * 1.4426950408889634f;
    }
  }

  __device__ __forceinline__ float exp_rel(float logit) const {
    float e;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(fmaf(logit, 1.4426950408889634f, -m_log2)));
    return e;
  }

  // Moment sums and the sample's running argmax for pattern k (only where asked for).
  __device__ __forceinline__ void extras(const KernelArgs& a, int64_t n, float logit, uint32_t k,
                                         float e) {
    if (a.outputs & kSickStats) {
      st[0] += e * logit;
      if (a.code.finite(k)) {
        const float v = float(a.code.value(k));
        st[1] += e;
        st[2] += e * v;
        st[3] += e * v * v;
      }
    }
    if (a.outputs & kSickSample) {
      const float key = logit + sick_gumbel(a.seed, uint64_t(n), k);
      if (key > best) {
        best = key;
        best_k = k;
      }
    }
  }

  // One pattern per lane: folds its logit in and returns e = exp(l - m) (0 outside the range).
  // kCheck: the tile may hold patterns outside the range; kExtras: stats or sampling may be on.
  template <bool kCheck, bool kExtras>
  __device__ __forceinline__ float add(const KernelArgs& a, int64_t n, float logit_raw, uint32_t k,
                                       bool inside) {
    const float logit = !kCheck || inside ? logit_raw : -INFINITY;
    raise_max(logit);
    float e = exp_rel(logit);
    if (kCheck) e = inside ? e : 0.f;
    s += e;
    if (kExtras && (!kCheck || inside)) extras(a, n, logit, k, e);
    return e;
  }

  // Two patterns per lane, both inside the range: one vote for the pair.
  template <bool kExtras>
  __device__ __forceinline__ void add_pair(const KernelArgs& a, int64_t n, float l0, uint32_t k0,
                                           float l1, uint32_t k1, float& e0, float& e1) {
    raise_max(fmaxf(l0, l1));
    e0 = exp_rel(l0);
    e1 = exp_rel(l1);
    s += e0;
    s += e1;
    if (kExtras) {
      extras(a, n, l0, k0, e0);
      extras(a, n, l1, k1, e1);
    }
  }
};

// Shared memory the epilogue needs after the kernel's own tables.
// (the warp records of finish_cta, then the slice scales and gradient sums of the merge).
__host__ __device__ constexpr size_t merge_floats(int nt, int kb) {
  const size_t warp_records = size_t(kWarps) * (8 + nt * 8 + nt * 8 * kb * 16);
  const size_t slice_merge = size_t(kMaxSlicedExamples) + nt * 8 * kb * 16;
  return warp_records > slice_merge ? warp_records : slice_merge;
}

// The slices of example n combined in slice order (fixed: deterministic) by the CTA that
// finishes last, after every CTA published its partial row (threadfence + arrival counter).
// merge: shared memory for max(slices, 1024) scales and the H x B gradient sums.
template <typename WAt>
__device__ void merge_slices_if_last(const KernelArgs& a, float* merge, int64_t n, WAt w_at) {
  __shared__ bool last;
  __threadfence();  // this CTA's partial row is visible before it is counted
  __syncthreads();
  const int sl = int(a.slices);
  if (threadIdx.x == 0) {
    last = atomicAdd(&g_slice_tickets[n], 1u) == unsigned(sl - 1);
    if (last) g_slice_tickets[n] = 0;  // every slice has arrived: ready for the next launch
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  const int hid = int(a.hid), bits = a.code.bits;
  const int64_t row0 = n * sl;
  float mm = -INFINITY;
  for (int k = 0; k < sl; ++k) mm = fmaxf(mm, __ldcg(a.m + row0 + k));
  float* scale = merge;
  float* gw_sum = merge + max(sl, kMaxSlicedExamples);
  for (int k = threadIdx.x; k < sl; k += blockDim.x) {
    const float mk = __ldcg(a.m + row0 + k);
    scale[k] = mk == -INFINITY ? 0.f : __expf(mk - mm);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float ss = 0.f, st[4] = {0.f, 0.f, 0.f, 0.f}, bb = -INFINITY;
    int64_t bk = -1;
    for (int k = 0; k < sl; ++k) {
      const float f = scale[k];
      ss += __ldcg(a.s + row0 + k) * f;
      if (a.out_stats)
        for (int q = 0; q < 4; ++q) st[q] += __ldcg(a.stats + (row0 + k) * 4 + q) * f;
      if (a.out_sample) {
        const int64_t kk = __ldcg(a.best_idx + row0 + k);
        const float bv = __ldcg(a.best + row0 + k);
        if (kk >= 0 && (bv > bb || (bv == bb && kk < bk))) {
          bb = bv;
          bk = kk;
        }
      }
    }
    a.out_m[n] = mm;
    a.out_s[n] = ss;
    if (a.logz) a.logz[n] = mm + logf(ss);
    if (a.out_stats)
      for (int q = 0; q < 4; ++q) a.out_stats[n * 4 + q] = st[q];
    if (a.out_sample) a.out_sample[n] = bk;
  }
  if (a.out_gw) {
    const int hb = hid * bits;
    for (int t = threadIdx.x; t < hb; t += blockDim.x) {
      const float* part = a.gw + row0 * hb + t;
      float acc = 0.f;
#pragma unroll 4
      for (int k = 0; k < sl; ++k) acc += __ldcg(part + int64_t(k) * hb) * scale[k];
      a.out_gw[n * hb + t] = acc;
      gw_sum[t] = acc;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < hid; i += blockDim.x) {  // gr = sum_j W_ij gw_ij
      float acc = 0.f;
      for (int j = 0; j < bits; ++j) acc += w_at(i, j) * gw_sum[i * bits + j];
      a.out_gr[n * hid + i] = acc;
    }
  }
}

// Warp totals, then the CTA's warps merged in a fixed order through shared memory `merge`;
// writes the (example, slice) row of every requested output. Every thread of the CTA calls it.
// w_at(i, j) reads W_n[i][j] as a float.
template <int NT, int KB, bool kGrad, typename WAt>
__device__ void finish_cta(const KernelArgs& a, float* merge, int64_t n, int64_t slice,
                           WarpState<NT, KB, kGrad>& ws, WAt w_at) {
  constexpr int HP = NT * 8, BP = KB * 16;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int bits = a.code.bits, hid = int(a.hid);
  float s = warp_sum(ws.s), st[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) st[q] = warp_sum(ws.st[q]);
  float best = ws.best;
  int64_t best_k = ws.best_k;
  for (int o = 16; o > 0; o >>= 1) {
    const float ob = __shfl_xor_sync(0xffffffffu, best, o);
    const int64_t ok = __shfl_xor_sync(0xffffffffu, best_k, o);
    if (ob > best || (ob == best && ok >= 0 && (best_k < 0 || ok < best_k))) {
      best = ob;
      best_k = ok;
    }
  }
  constexpr int kRec = 8 + HP + HP * BP;  // m, s, stats[4], best, best_k | (unused) | gw
  float* rec = merge + warp * kRec;
  if (lane == 0) {
    rec[0] = ws.m;
    rec[1] = s;
    for (int q = 0; q < 4; ++q) rec[2 + q] = st[q];
    rec[6] = best;
    rec[7] = __int_as_float(int(best_k));
  }
  if (kGrad) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int kb = 0; kb < KB; ++kb)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int j = 16 * kb + g + ((q & 2) ? 8 : 0), i = 8 * nt + 2 * c + (q & 1);
          rec[8 + HP + i * BP + j] = ws.gw[kb][nt][q];
        }
  }
  __syncthreads();
  float mm = -INFINITY;
  for (int wi = 0; wi < kWarps; ++wi) mm = fmaxf(mm, merge[wi * kRec]);
  float scale[kWarps];
  for (int wi = 0; wi < kWarps; ++wi) {
    const float mw = merge[wi * kRec];
    scale[wi] = mw == -INFINITY ? 0.f : __expf(mw - mm);
  }
  const int64_t row = n * a.slices + slice;
  if (threadIdx.x == 0) {
    float ss = 0.f, sts[4] = {0.f, 0.f, 0.f, 0.f}, bb = -INFINITY;
    int bk = -1;
    for (int wi = 0; wi < kWarps; ++wi) {
      const float* rw = merge + wi * kRec;
      ss += rw[1] * scale[wi];
      for (int q = 0; q < 4; ++q) sts[q] += rw[2 + q] * scale[wi];
      const int k = __float_as_int(rw[7]);
      if (k >= 0 && (rw[6] > bb || (rw[6] == bb && k < bk))) {
        bb = rw[6];
        bk = k;
      }
    }
    a.m[row] = mm;
    a.s[row] = ss;
    if (a.logz && a.slices == 1) a.logz[row] = mm + logf(ss);
    if (a.stats)
      for (int q = 0; q < 4; ++q) a.stats[row * 4 + q] = sts[q];
    if (a.best) a.best[row] = bb;
    if (a.best_idx) a.best_idx[row] = bk;
  }
  if (kGrad) {
    for (int t = threadIdx.x; t < hid * bits; t += blockDim.x) {
      const int i = t / bits, j = t % bits;
      float acc = 0.f;
      for (int wi = 0; wi < kWarps; ++wi) acc += merge[wi * kRec + 8 + HP + i * BP + j] * scale[wi];
      a.gw[(row * a.hid + i) * bits + j] = acc;
    }
    if (a.slices == 1) {  // gr = sum_k e relu(z) = sum_j W_ij gw_ij (z is linear in the bits)
      __syncthreads();
      for (int i = threadIdx.x; i < hid; i += blockDim.x) {
        float acc = 0.f;
        for (int j = 0; j < bits; ++j) acc += w_at(i, j) * a.gw[(row * a.hid + i) * bits + j];
        a.gr[row * a.hid + i] = acc;
      }
    }
  }
  if (a.slices > 1) merge_slices_if_last(a, merge, n, w_at);
}
// Raises the dynamic shared-memory cap of a kernel where it needs more than 48 KB, then
// launches it.
template <typename Kernel>
void launch_sick_kernel(Kernel kernel, const KernelArgs& ka, int64_t grid, size_t smem,
                        cudaStream_t stream) {
  if (smem > 48 * 1024) allow_shared_memory(kernel, int(smem));
  kernel<<<unsigned(grid), kWarps * 32, smem, stream>>>(ka);
  BG_CUDA_LAUNCH_CHECK();
}

// Runtime shape flags to template constants: NT 4 or 8 hidden n8 tiles (kWide: also 16 and 32),
// KB 1 or 2 bit k16 steps, hi/lo split (never for f16 weights), gradients. f(nt, kb, split, grad)
// gets integral_constants.
template <typename T, bool kWide, typename F>
void dispatch_sick_shape(int nt, int kb, bool split, bool grad, F&& f) {
  auto with_grad = [&](auto nt_c, auto kb_c, auto split_c) {
    if (grad)
      f(nt_c, kb_c, split_c, std::true_type{});
    else
      f(nt_c, kb_c, split_c, std::false_type{});
  };
  auto with_split = [&](auto nt_c, auto kb_c) {
    if constexpr (std::is_same_v<T, __half>)
      with_grad(nt_c, kb_c, std::false_type{});
    else if (split)
      with_grad(nt_c, kb_c, std::true_type{});
    else
      with_grad(nt_c, kb_c, std::false_type{});
  };
  auto with_kb = [&](auto nt_c) {
    if (kb == 1)
      with_split(nt_c, std::integral_constant<int, 1>{});
    else
      with_split(nt_c, std::integral_constant<int, 2>{});
  };
  if (nt == 4) return with_kb(std::integral_constant<int, 4>{});
  if (nt == 8) return with_kb(std::integral_constant<int, 8>{});
  if constexpr (kWide) {
    if (nt == 16) return with_kb(std::integral_constant<int, 16>{});
    if (nt == 32) return with_kb(std::integral_constant<int, 32>{});
  }
  kernel_fail("sick", "no kernel instantiated for " + std::to_string(8 * nt) + " hidden units");
}

// The two kernels' launchers (sick_forward picks one and sizes the grid).
size_t sick_bruteforce_smem(int nt, int kb);
void launch_sick_bruteforce(const KernelArgs& ka, DType dtype, int nt, int kb, bool split,
                            bool grad, int64_t grid, cudaStream_t stream);
size_t sick_precomputed_smem(int nt, int kb, bool split, bool grad);
void launch_sick_precomputed(const KernelArgs& ka, int nt, int kb, bool split, bool grad,
                             int64_t grid, cudaStream_t stream);

}  // namespace bg::cuda::sick
