// sick.cu: the SICK fused pass on tensor cores.
//
// Per example n, patterns k are visited in tiles of 32 by one warp. For a tile:
//   1. Z^T (H x 32) = W_n (H x B) . b^T (B x 32) with mma.sync m16n8k16 (f16 in, f32 accumulate);
//      the +-1 bit fragments are generated in registers from the pattern index. In "fp32" mode
//      W is split into two f16 halves (hi + lo) and both are multiplied: b is exact, so z keeps
//      ~22 bits. The precomputed variant instead reads z = z1[k_lo] + z2[k_hi] from f32 tables
//      built in shared memory per example.
//   2. l_k = r . relu(z_k): each thread holds 4 hidden rows x 8 patterns; a reduce-scatter over
//      the 8 lanes of a column group leaves lane (g, c) with the full logit of one pattern, so
//      each exp is computed once.
//   3. Online softmax over the warp: running max m (warp-uniform), e = exp(l - m), s += e.
//   4. With gradients: e is gathered back to the fragment layout; q = e * 1[z > 0] is already
//      the A operand of the next mma (the accumulator layout of two n8 tiles is the A layout of
//      one k16 step), so gw (H x B) += q (H x 32) . b (32 x B) runs on tensor cores too;
//      gr (H) += sum_k q * z in registers.
// Each CTA (4 warps) covers a fixed slice of one example's range; warps and CTA slices are merged
// in a fixed order (no atomics), and the slice count depends only on N and the range size, never
// on the GPU: the bits repeat on any Hopper part and run to run.
#include <cuda_fp16.h>

#include "../bide_values.h"
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kTile = 32;  // patterns per warp step

__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// Two +-1 halves for bits (j, j+1) of pattern p (bit j in the low half).
__device__ __forceinline__ uint32_t bit_pair(uint32_t p, int j) {
  const uint32_t two = (p >> j) & 3u;
  const uint32_t lo = (two & 1u) ? 0x3C00u : 0xBC00u, hi = (two & 2u) ? 0x3C00u : 0xBC00u;
  return lo | (hi << 16);
}

template <typename T>
__device__ __forceinline__ float load_f(const T* p, int64_t i) { return to_float(p[i]); }

struct KernelArgs {
  const void* w;
  const void* r;
  const int64_t* lo;
  const int64_t* hi;
  int64_t n_ex, hid, slices;
  BideCode code;
  uint32_t outputs;
  uint64_t seed;
  bool precomputed;
  // Outputs when slices == 1, else per-(example, slice) partials in the same layout with
  // n * slices + slice as the row.
  float *m, *s, *gr, *gw, *stats, *best;
  int64_t* best_idx;
};

// MT: 16-row tiles of hidden units (H <= 16 MT); KB: 16-bit steps of B (B <= 16 KB).
template <typename T, int MT, int KB, bool kSplit, bool kGrad>
__global__ void __launch_bounds__(kWarps * 32) sick_kernel(KernelArgs a) {
  extern __shared__ float smem[];
  constexpr int HP = MT * 16, BP = KB * 16, NB = KB * 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int64_t n = blockIdx.x / a.slices, slice = blockIdx.x % a.slices;
  const int bits = a.code.bits;
  const int hid = int(a.hid);
  const T* w = static_cast<const T*>(a.w) + n * a.hid * bits;
  const T* rv = static_cast<const T*>(a.r) + n * a.hid;

  // This CTA's slice of [lo, hi), in whole tiles; then this warp's share.
  const int64_t lo = a.lo ? a.lo[n] : 0, hi = a.hi ? a.hi[n] : (int64_t(1) << bits);
  const int64_t first_tile = lo / kTile, tiles = (hi + kTile - 1) / kTile - first_tile;
  const int64_t per_slice = (tiles + a.slices - 1) / a.slices;
  const int64_t s_begin = first_tile + min(tiles, slice * per_slice);
  const int64_t s_end = first_tile + min(tiles, (slice + 1) * per_slice);
  const int64_t per_warp = (s_end - s_begin + kWarps - 1) / kWarps;
  const int64_t w_begin = min(s_end, s_begin + warp * per_warp), w_end = min(s_end, w_begin + per_warp);

  // Precomputed tables z1 (2^lb x HP), z2 (2^hb x HP), row stride HP + 4 (bank-conflict free).
  const int lb = bits / 2, hb = bits - lb, zs = HP + 4;
  float* z1 = smem;
  float* z2 = smem + (a.precomputed ? (size_t(1) << lb) * zs : 0);
  if (a.precomputed) {
    const int rows1 = 1 << lb, rows2 = 1 << hb;
    for (int t = threadIdx.x; t < (rows1 + rows2) * HP; t += blockDim.x) {
      const int row = t / HP, i = t % HP;
      const bool second = row >= rows1;
      const int k = second ? row - rows1 : row, j0 = second ? lb : 0, nb = second ? hb : lb;
      float z = 0.f;
      if (i < hid)
        for (int j = 0; j < nb; ++j) z += ((k >> j) & 1 ? 1.f : -1.f) * load_f(w, int64_t(i) * bits + j0 + j);
      (second ? z2 + size_t(k) * zs : z1 + size_t(row) * zs)[i] = z;
    }
    __syncthreads();
  }

  // W fragments (A operand of mma 1): rows i = 16 mt + g (+8), cols j = 16 kb + 2c (+1, +8, +9).
  uint32_t wa[MT][KB][4], wl[MT][KB][4];
  float rr[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    rr[mt][0] = 16 * mt + g < hid ? load_f(rv, 16 * mt + g) : 0.f;
    rr[mt][1] = 16 * mt + g + 8 < hid ? load_f(rv, 16 * mt + g + 8) : 0.f;
#pragma unroll
    for (int kb = 0; kb < KB; ++kb)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int i = 16 * mt + g + ((q & 1) ? 8 : 0), j = 16 * kb + 2 * c + ((q & 2) ? 8 : 0);
        float v0 = 0.f, v1 = 0.f;
        if (i < hid && j < bits) v0 = load_f(w, int64_t(i) * bits + j);
        if (i < hid && j + 1 < bits) v1 = load_f(w, int64_t(i) * bits + j + 1);
        const __half h0 = __float2half_rn(v0), h1 = __float2half_rn(v1);
        wa[mt][kb][q] = pack_half2(__half2float(h0), __half2float(h1));
        wl[mt][kb][q] = pack_half2(v0 - __half2float(h0), v1 - __half2float(h1));
      }
  }

  float m = -INFINITY, s = 0.f;
  float gra[MT][2] = {};
  float gwa[MT][NB][4] = {};
  float st[4] = {0.f, 0.f, 0.f, 0.f};
  float best = -INFINITY;
  int64_t best_k = -1;
  const bool want_stats = a.outputs & kSickStats, want_sample = a.outputs & kSickSample;

  for (int64_t tile = w_begin; tile < w_end; ++tile) {
    const uint32_t base = uint32_t(tile * kTile);
    float z[4][MT][4];  // [n-tile][m-tile][fragment]
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      if (a.precomputed) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const uint32_t p = base + nt * 8 + 2 * c + (q & 1);
            const int i = 16 * mt + g + ((q & 2) ? 8 : 0);
            z[nt][mt][q] = z1[(p & ((1u << lb) - 1u)) * zs + i] + z2[(p >> lb) * zs + i];
          }
      } else {
        const uint32_t p = base + nt * 8 + g;  // this lane's column of the B fragment
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          z[nt][mt][0] = z[nt][mt][1] = z[nt][mt][2] = z[nt][mt][3] = 0.f;
#pragma unroll
          for (int kb = 0; kb < KB; ++kb) {
            const uint32_t b0 = bit_pair(p, 16 * kb + 2 * c), b1 = bit_pair(p, 16 * kb + 2 * c + 8);
            mma16816(z[nt][mt], wa[mt][kb], b0, b1);
            if (kSplit) mma16816(z[nt][mt], wl[mt][kb], b0, b1);
          }
        }
      }
    }
    // Partial logits of this thread's 8 patterns (t = 2 nt + column), then a reduce-scatter
    // over g: lane (g, c) ends with pattern base + 8 (g >> 1) + 2c + (g & 1).
    float part[8];
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int cc = 0; cc < 2; ++cc) {
        float acc = 0.f;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
          acc += rr[mt][0] * fmaxf(z[nt][mt][cc], 0.f) + rr[mt][1] * fmaxf(z[nt][mt][2 + cc], 0.f);
        part[2 * nt + cc] = acc;
      }
    const bool b16 = lane & 16, b8 = lane & 8, b4 = lane & 4;
    float p1[4], p2[2];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float send = b16 ? part[j] : part[j + 4], keep = b16 ? part[j + 4] : part[j];
      p1[j] = keep + __shfl_xor_sync(0xffffffffu, send, 16);
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const float send = b8 ? p1[j] : p1[j + 2], keep = b8 ? p1[j + 2] : p1[j];
      p2[j] = keep + __shfl_xor_sync(0xffffffffu, send, 8);
    }
    float logit = (b4 ? p2[1] : p2[0]) + __shfl_xor_sync(0xffffffffu, b4 ? p2[0] : p2[1], 4);
    const uint32_t my_k = base + 8 * (g >> 1) + 2 * c + (g & 1);
    const bool inside = my_k >= lo && my_k < hi;
    if (!inside) logit = -INFINITY;
    const float tile_max = warp_max(logit);
    if (tile_max > m) {  // warp-uniform
      const float scale = __expf(m - tile_max);
      s *= scale;
#pragma unroll
      for (int q = 0; q < 4; ++q) st[q] *= scale;
      if (kGrad) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          gra[mt][0] *= scale;
          gra[mt][1] *= scale;
#pragma unroll
          for (int nb = 0; nb < NB; ++nb)
#pragma unroll
            for (int q = 0; q < 4; ++q) gwa[mt][nb][q] *= scale;
        }
      }
      m = tile_max;
    }
    const float e = inside ? __expf(logit - m) : 0.f;
    s += e;
    if (want_stats && inside) {
      st[0] += e * logit;
      if (a.code.finite(my_k)) {
        const float v = float(a.code.value(my_k));
        st[1] += e;
        st[2] += e * v;
        st[3] += e * v * v;
      }
    }
    if (want_sample && inside) {
      const float key = logit + sick_gumbel(a.seed, uint64_t(n), my_k);
      if (key > best) {
        best = key;
        best_k = my_k;
      }
    }
    if (kGrad) {
      // Gather e back to the fragment layout: d[t] for t = 2 nt + column.
      const float o4 = __shfl_xor_sync(0xffffffffu, e, 4);
      const float a0 = b4 ? o4 : e, a1 = b4 ? e : o4;
      const float o80 = __shfl_xor_sync(0xffffffffu, a0, 8), o81 = __shfl_xor_sync(0xffffffffu, a1, 8);
      const float c4[4] = {b8 ? o80 : a0, b8 ? o81 : a1, b8 ? a0 : o80, b8 ? a1 : o81};
      float d[8];
#pragma unroll
      for (int y = 0; y < 4; ++y) {
        const float o = __shfl_xor_sync(0xffffffffu, c4[y], 16);
        d[y] = b16 ? o : c4[y];
        d[y + 4] = b16 ? c4[y] : o;
      }
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {  // k16 steps: patterns base + 16 ks + [0, 16)
        uint32_t qa[MT][4], ql[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          float qv[8];  // a0..a3 pairs: (row g | g+8) x (n-tile 2ks | 2ks+1)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int nt = 2 * ks + half;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const float zz = z[nt][mt][q];
              const float qq = zz > 0.f ? d[2 * nt + (q & 1)] : 0.f;
              gra[mt][q >> 1] += qq * zz;
              qv[half * 4 + q] = qq;
            }
          }
          // A layout: a0 = (g, 2c..2c+1) = n-tile 2ks rows g; a1 = rows g+8; a2/a3 = n-tile 2ks+1.
          const float f[4][2] = {{qv[0], qv[1]}, {qv[2], qv[3]}, {qv[4], qv[5]}, {qv[6], qv[7]}};
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const __half h0 = __float2half_rn(f[q][0]), h1 = __float2half_rn(f[q][1]);
            qa[mt][q] = pack_half2(__half2float(h0), __half2float(h1));
            ql[mt][q] = pack_half2(f[q][0] - __half2float(h0), f[q][1] - __half2float(h1));
          }
        }
        // B operand: patterns (k = 2c, 2c+1 | +8) x bit j = 8 nb + g.
        const uint32_t pk = base + 16 * ks + 2 * c;
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
          const int j = 8 * nb + g;
          const uint32_t b0 = (((pk >> j) & 1u) ? 0x3C00u : 0xBC00u) | ((((pk + 1) >> j) & 1u) ? 0x3C000000u : 0xBC000000u);
          const uint32_t b1 = ((((pk + 8) >> j) & 1u) ? 0x3C00u : 0xBC00u) | ((((pk + 9) >> j) & 1u) ? 0x3C000000u : 0xBC000000u);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma16816(gwa[mt][nb], qa[mt], b0, b1);
            if (kSplit) mma16816(gwa[mt][nb], ql[mt], b0, b1);
          }
        }
      }
    }
  }

  // Warp totals: s and stats over lanes; gr over the 4 lanes of a row group; sample argmax.
  s = warp_sum(s);
#pragma unroll
  for (int q = 0; q < 4; ++q) st[q] = warp_sum(st[q]);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h2 = 0; h2 < 2; ++h2) {
      float v = gra[mt][h2];
      v += __shfl_xor_sync(0xffffffffu, v, 1);
      v += __shfl_xor_sync(0xffffffffu, v, 2);
      gra[mt][h2] = v;
    }
  for (int o = 16; o > 0; o >>= 1) {
    const float ob = __shfl_xor_sync(0xffffffffu, best, o);
    const int64_t ok = __shfl_xor_sync(0xffffffffu, best_k, o);
    if (ob > best || (ob == best && ok >= 0 && (best_k < 0 || ok < best_k))) {
      best = ob;
      best_k = ok;
    }
  }

  // Merge the 4 warps in a fixed order through shared memory.
  float* merge = smem + (a.precomputed ? ((size_t(1) << lb) + (size_t(1) << hb)) * zs : 0);
  constexpr int kRec = 8 + HP + HP * BP;  // m, s, stats[4], best, best_k | gr | gw
  float* rec = merge + warp * kRec;
  if (lane == 0) {
    rec[0] = m;
    rec[1] = s;
    for (int q = 0; q < 4; ++q) rec[2 + q] = st[q];
    rec[6] = best;
    rec[7] = __int_as_float(int(best_k));
  }
  if (kGrad) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if (c == 0) {
        rec[8 + 16 * mt + g] = gra[mt][0];
        rec[8 + 16 * mt + g + 8] = gra[mt][1];
      }
#pragma unroll
      for (int nb = 0; nb < NB; ++nb)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int i = 16 * mt + g + ((q & 2) ? 8 : 0), j = 8 * nb + 2 * c + (q & 1);
          rec[8 + HP + i * BP + j] = gwa[mt][nb][q];
        }
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
    if (a.stats)
      for (int q = 0; q < 4; ++q) a.stats[row * 4 + q] = sts[q];
    if (a.best) a.best[row] = bb;
    if (a.best_idx) a.best_idx[row] = bk;
  }
  if (kGrad) {
    for (int t = threadIdx.x; t < hid * (1 + bits); t += blockDim.x) {
      const bool is_r = t < hid;
      const int i = is_r ? t : (t - hid) / bits, j = is_r ? 0 : (t - hid) % bits;
      float acc = 0.f;
      for (int wi = 0; wi < kWarps; ++wi)
        acc += merge[wi * kRec + (is_r ? 8 + i : 8 + HP + i * BP + j)] * scale[wi];
      if (is_r) a.gr[row * a.hid + i] = acc;
      else a.gw[(row * a.hid + i) * bits + j] = acc;
    }
  }
}

// Combines the slices of each example in slice order (fixed: deterministic).
__global__ void sick_merge_kernel(KernelArgs part, float* m, float* s, float* gr, float* gw,
                                  float* stats, int64_t* sample, int64_t n_ex) {
  const int64_t n = blockIdx.x;
  const int64_t sl = part.slices;
  const int hid = int(part.hid), bits = part.code.bits;
  float mm = -INFINITY;
  for (int64_t k = 0; k < sl; ++k) mm = fmaxf(mm, part.m[n * sl + k]);
  auto scale = [&](int64_t k) {
    const float mk = part.m[n * sl + k];
    return mk == -INFINITY ? 0.f : __expf(mk - mm);
  };
  if (threadIdx.x == 0) {
    float ss = 0.f, st[4] = {0.f, 0.f, 0.f, 0.f}, bb = -INFINITY;
    int64_t bk = -1;
    for (int64_t k = 0; k < sl; ++k) {
      const float f = scale(k);
      ss += part.s[n * sl + k] * f;
      if (stats)
        for (int q = 0; q < 4; ++q) st[q] += part.stats[(n * sl + k) * 4 + q] * f;
      if (sample) {
        const int64_t kk = part.best_idx[n * sl + k];
        const float bv = part.best[n * sl + k];
        if (kk >= 0 && (bv > bb || (bv == bb && kk < bk))) {
          bb = bv;
          bk = kk;
        }
      }
    }
    m[n] = mm;
    s[n] = ss;
    if (stats)
      for (int q = 0; q < 4; ++q) stats[n * 4 + q] = st[q];
    if (sample) sample[n] = bk;
  }
  if (gr) {
    for (int t = threadIdx.x; t < hid * (1 + bits); t += blockDim.x) {
      const bool is_r = t < hid;
      float acc = 0.f;
      for (int64_t k = 0; k < sl; ++k) {
        const int64_t row = n * sl + k;
        acc += (is_r ? part.gr[row * hid + t] : part.gw[row * hid * bits + (t - hid)]) * scale(k);
      }
      if (is_r) gr[n * hid + t] = acc;
      else gw[n * hid * bits + (t - hid)] = acc;
    }
  }
}

template <typename T, int MT, int KB, bool kSplit, bool kGrad>
void launch_typed(const KernelArgs& ka, int64_t grid, size_t smem, cudaStream_t stream) {
  auto kernel = sick_kernel<T, MT, KB, kSplit, kGrad>;
  static size_t configured = 0;  // raise the dynamic shared-memory cap once per instantiation
  if (smem > 48 * 1024 && smem > configured) {
    BG_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    configured = smem;
  }
  kernel<<<unsigned(grid), kWarps * 32, smem, stream>>>(ka);
  BG_CUDA_LAUNCH_CHECK();
}

template <typename T, int MT, int KB>
void launch_mode(const KernelArgs& ka, int64_t grid, size_t smem, bool split, bool grad, cudaStream_t s) {
  if (split) {
    if (grad) launch_typed<T, MT, KB, true, true>(ka, grid, smem, s);
    else launch_typed<T, MT, KB, true, false>(ka, grid, smem, s);
  } else {
    if (grad) launch_typed<T, MT, KB, false, true>(ka, grid, smem, s);
    else launch_typed<T, MT, KB, false, false>(ka, grid, smem, s);
  }
}

}  // namespace

void sick_forward(const SickArgs& args, Scratch& scratch, StreamHandle stream) {
  const int64_t n_ex = args.w.shape[0], hid = args.w.shape[1];
  const int bits = args.code.bits;
  if (bits < 1 || bits > 24) kernel_fail("sick", "bits must be in [1, 24]");
  if (hid < 1 || hid > 64) kernel_fail("sick", "the CUDA kernel supports hidden sizes 1..64, got " + std::to_string(hid));
  if (n_ex == 0) return;
  const int mt = hid <= 32 ? 2 : 4, kb = bits <= 16 ? 1 : 2;
  const int hp = mt * 16, bp = kb * 16;
  const bool grad = args.outputs & kSickGrad;
  // Fixed by the shape alone: about 1024 CTAs of work for small batches, one slice per example
  // for large ones, and at least 64 tiles per slice.
  const int64_t tiles = ((int64_t(1) << bits) + kTile - 1) / kTile;
  int64_t slices = std::max<int64_t>(1, std::min<int64_t>((1024 + n_ex - 1) / n_ex, tiles / 64));
  size_t smem = size_t(kWarps) * (8 + hp + hp * bp) * sizeof(float);
  if (args.precomputed) {
    const int lb = bits / 2, hb = bits - lb;
    smem += ((size_t(1) << lb) + (size_t(1) << hb)) * size_t(hp + 4) * sizeof(float);
    if (smem > 200 * 1024)
      kernel_fail("sick", "the precomputed variant's tables do not fit in shared memory for " +
                              std::to_string(bits) + " bits and hidden " + std::to_string(hid) + "; use bruteforce");
  }
  KernelArgs ka{};
  ka.w = args.w.data;
  ka.r = args.r.data;
  ka.lo = static_cast<const int64_t*>(args.lo.data);
  ka.hi = static_cast<const int64_t*>(args.hi.data);
  ka.n_ex = n_ex;
  ka.hid = hid;
  ka.slices = slices;
  ka.code = args.code;
  ka.outputs = args.outputs;
  ka.seed = args.seed;
  ka.precomputed = args.precomputed;
  const bool stats = args.outputs & kSickStats, sample = args.outputs & kSickSample;
  if (slices == 1) {
    ka.m = static_cast<float*>(args.m.data);
    ka.s = static_cast<float*>(args.s.data);
    ka.gr = static_cast<float*>(args.gr.data);
    ka.gw = static_cast<float*>(args.gw.data);
    ka.stats = static_cast<float*>(args.stats.data);
    if (sample) {
      ka.best = static_cast<float*>(scratch.get(sizeof(float) * size_t(n_ex)));
      ka.best_idx = static_cast<int64_t*>(args.sample.data);
    }
  } else {
    const size_t rows = size_t(n_ex * slices);
    auto f = [&](size_t count) { return static_cast<float*>(scratch.get(sizeof(float) * count)); };
    ka.m = f(rows);
    ka.s = f(rows);
    if (grad) {
      ka.gr = f(rows * size_t(hid));
      ka.gw = f(rows * size_t(hid * bits));
    }
    if (stats) ka.stats = f(rows * 4);
    if (sample) {
      ka.best = f(rows);
      ka.best_idx = static_cast<int64_t*>(scratch.get(sizeof(int64_t) * rows));
    }
  }
  auto s = as_stream(stream);
  const int64_t grid = n_ex * slices;
  dispatch_float(args.w.dtype, "sick", [&](auto zero) {
    using T = decltype(zero);
    const bool split = !std::is_same_v<T, __half>;  // f32/bf16 weights keep ~22 bits via hi+lo
    if (mt == 2 && kb == 1) launch_mode<T, 2, 1>(ka, grid, smem, split, grad, s);
    else if (mt == 2) launch_mode<T, 2, 2>(ka, grid, smem, split, grad, s);
    else if (kb == 1) launch_mode<T, 4, 1>(ka, grid, smem, split, grad, s);
    else launch_mode<T, 4, 2>(ka, grid, smem, split, grad, s);
  });
  if (slices > 1) {
    sick_merge_kernel<<<unsigned(n_ex), 128, 0, s>>>(
        ka, static_cast<float*>(args.m.data), static_cast<float*>(args.s.data),
        static_cast<float*>(args.gr.data), static_cast<float*>(args.gw.data),
        static_cast<float*>(args.stats.data), static_cast<int64_t*>(args.sample.data), n_ex);
    BG_CUDA_LAUNCH_CHECK();
  }
}

namespace {

template <typename T>
__global__ void bide_logits_kernel(T* l, const T* w, const T* r, const int64_t* y, int64_t n_ex, int hid, int bits) {
  const int64_t n = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (n >= n_ex) return;
  const uint64_t k = uint64_t(y[n]);
  float acc = 0.f;
  for (int i = lane; i < hid; i += 32) {
    float z = 0.f;
    for (int j = 0; j < bits; ++j) z += ((k >> j) & 1u ? 1.f : -1.f) * to_float(w[(n * hid + i) * bits + j]);
    acc += to_float(r[n * hid + i]) * fmaxf(z, 0.f);
  }
  acc = warp_sum(acc);
  if (lane == 0) l[n] = from_float<T>(acc);
}

template <typename T>
__global__ void bide_log_prob_backward_kernel(T* dw, T* dr, const T* w, const T* r, const int64_t* y,
                                              const float* gw, const float* gr, const float* s,
                                              const T* g, int64_t n_ex, int hid, int bits) {
  BG_GRID_LOOP(t, n_ex * hid) {
    const int64_t n = t / hid;
    const uint64_t k = uint64_t(y[n]);
    const float gn = to_float(g[n]), inv_s = 1.f / s[n];
    float z = 0.f;
    for (int j = 0; j < bits; ++j) z += ((k >> j) & 1u ? 1.f : -1.f) * to_float(w[t * bits + j]);
    const float ri = to_float(r[t]);
    dr[t] = from_float<T>(gn * (fmaxf(z, 0.f) - gr[t] * inv_s));
    for (int j = 0; j < bits; ++j) {
      const float by = (k >> j) & 1u ? 1.f : -1.f;
      dw[t * bits + j] = from_float<T>(gn * ri * ((z > 0.f ? by : 0.f) - gw[t * bits + j] * inv_s));
    }
  }
}

}  // namespace

void bide_logits(const KView& l, const KView& w, const KView& r, const KView& y, int bits, StreamHandle stream) {
  const int64_t n_ex = w.shape[0];
  if (n_ex == 0) return;
  dispatch_float(w.dtype, "bide_logits", [&](auto zero) {
    using T = decltype(zero);
    bide_logits_kernel<T><<<unsigned((n_ex + 7) / 8), 256, 0, as_stream(stream)>>>(
        static_cast<T*>(l.data), static_cast<const T*>(w.data), static_cast<const T*>(r.data),
        static_cast<const int64_t*>(y.data), n_ex, int(w.shape[1]), bits);
  });
  BG_CUDA_LAUNCH_CHECK();
}

void bide_log_prob_backward(const KView& dw, const KView& dr, const KView& w, const KView& r,
                            const KView& y, const KView& gw, const KView& gr, const KView& s,
                            const KView& g, int bits, StreamHandle stream) {
  const int64_t n_ex = w.shape[0], hid = w.shape[1];
  if (n_ex == 0) return;
  dispatch_float(w.dtype, "bide_log_prob_backward", [&](auto zero) {
    using T = decltype(zero);
    bide_log_prob_backward_kernel<T><<<grid_for(n_ex * hid, 256), 256, 0, as_stream(stream)>>>(
        static_cast<T*>(dw.data), static_cast<T*>(dr.data), static_cast<const T*>(w.data),
        static_cast<const T*>(r.data), static_cast<const int64_t*>(y.data),
        static_cast<const float*>(gw.data), static_cast<const float*>(gr.data),
        static_cast<const float*>(s.data), static_cast<const T*>(g.data), n_ex, int(hid), bits);
  });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
