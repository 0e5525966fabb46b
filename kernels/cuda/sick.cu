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

__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
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

template <typename T>
__device__ __forceinline__ float load_f(const T* p, int64_t i) {
  return to_float(p[i]);
}

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
  float* logz;  // optional: m + log s (final outputs only)
};

// f16 accumulate: D (2 x half2) = A . B + C.
__device__ __forceinline__ void mma16816_h(uint32_t (&d)[2], const uint32_t (&a)[4], uint32_t b0,
                                           uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
      "{%0,%1};\n"
      : "+r"(d[0]), "+r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The same with C = 0 (the zero register: no moves to clear accumulators).
__device__ __forceinline__ void mma16816_h0(uint32_t (&d)[2], const uint32_t (&a)[4], uint32_t b0,
                                            uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
      "{%8,%8};\n"
      : "=r"(d[0]), "=r"(d[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0u));
}
__device__ __forceinline__ void mma16816_0(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                           uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.f));
}

__device__ __forceinline__ uint32_t hmax2_zero(uint32_t x) {
  const __half2 h = __hmax2(*reinterpret_cast<const __half2*>(&x), __float2half2_rn(0.f));
  return *reinterpret_cast<const uint32_t*>(&h);
}

// +-1 half2 pair for the two bits of x (bit 0 in the low half): flip the sign of -1.
__device__ __forceinline__ uint32_t pm_pair(uint32_t x) {
  return 0xBC00BC00u ^ ((x & 1u) << 15) ^ ((x & 2u) << 30);
}

// 2^x with denormal outputs flushed (no fix-up code around MUFU.EX2): e = exp(l - m) <= e^8.
__device__ __forceinline__ float exp_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
  return y;
}

__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// hi/lo f16 split of a float pair: hi + lo carries ~22 bits.
__device__ __forceinline__ void split_pack(float a, float b, uint32_t& hi, uint32_t& lo) {
  const __half ha = __float2half_rn(a), hb = __float2half_rn(b);
  hi = pack_half2(__half2float(ha), __half2float(hb));
  lo = pack_half2(a - __half2float(ha), b - __half2float(hb));
}

constexpr float kSlack = 8.f;  // the running max moves only when exceeded by this much

// NT: 8-wide tiles of hidden units (H <= 8 NT); KB: 16-bit steps of B (B <= 16 KB).
// Tile = 32 patterns = two m16 tiles; lane (g, c) owns pattern base + 16 (c >> 1) + g + 8 (c & 1).
template <typename T, int NT, int KB, bool kSplit, bool kGrad>
__global__ void __launch_bounds__(kWarps * 32) sick_kernel(KernelArgs a) {
  extern __shared__ float smem[];
  constexpr int HP = NT * 8, BP = KB * 16, KL = NT / 2;  // KL: k16 steps over hidden units
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int64_t n = blockIdx.x / a.slices, slice = blockIdx.x % a.slices;
  const int bits = a.code.bits;
  const int hid = int(a.hid);
  const T* w = static_cast<const T*>(a.w) + n * a.hid * bits;
  const T* rv = static_cast<const T*>(a.r) + n * a.hid;

  const int64_t lo = a.lo ? a.lo[n] : 0, hi = a.hi ? a.hi[n] : (int64_t(1) << bits);
  const int64_t first_tile = lo / kTile, tiles = (hi + kTile - 1) / kTile - first_tile;
  const int64_t per_slice = (tiles + a.slices - 1) / a.slices;
  const int64_t s_begin = first_tile + min(tiles, slice * per_slice);
  const int64_t s_end = first_tile + min(tiles, (slice + 1) * per_slice);
  const int64_t per_warp = (s_end - s_begin + kWarps - 1) / kWarps;
  const int64_t w_begin = min(s_end, s_begin + warp * per_warp),
                w_end = min(s_end, w_begin + per_warp);

  // Precomputed tables z1 (2^lb x HP), z2 (2^hb x HP) in f32.
  const int lb = bits / 2, hb = bits - lb, zs = HP;
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
        for (int j = 0; j < nb; ++j)
          z += ((k >> j) & 1 ? 1.f : -1.f) * load_f(w, int64_t(i) * bits + j0 + j);
      (second ? z2 + size_t(k) * zs : z1 + size_t(row) * zs)[i] = z;
    }
    __syncthreads();
  }

  // B operands, loaded once: W^T (bits x hidden) for z, and r replicated for l = relu(z) r.
  uint32_t wb[NT][KB][2], wbl[NT][KB][2], rb[KL][2], rbl[KL][2];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int kb = 0; kb < KB; ++kb)
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const int i = 8 * nt + g, j = 16 * kb + 2 * c + 8 * q;
        const float v0 = (i < hid && j < bits) ? load_f(w, int64_t(i) * bits + j) : 0.f;
        const float v1 = (i < hid && j + 1 < bits) ? load_f(w, int64_t(i) * bits + j + 1) : 0.f;
        split_pack(v0, v1, wb[nt][kb][q], wbl[nt][kb][q]);
      }
#pragma unroll
  for (int ks = 0; ks < KL; ++ks)
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int i = 16 * ks + 2 * c + 8 * q;
      split_pack(i < hid ? load_f(rv, i) : 0.f, i + 1 < hid ? load_f(rv, i + 1) : 0.f, rb[ks][q],
                 rbl[ks][q]);
    }

  float m = -INFINITY, s = 0.f;
  float gwa[KB][NT][4] = {};
  float st[4] = {0.f, 0.f, 0.f, 0.f};
  float best = -INFINITY;
  int64_t best_k = -1;
  const bool want_stats = a.outputs & kSickStats, want_sample = a.outputs & kSickSample;

  // Bits 0..3 of a pattern come from the lane's row (g or g + 8): constants. Higher bit pairs
  // are the same for every lane of a tile, so each tile derives them from its base alone.
  constexpr bool kHalfZ = !kSplit;  // fp16 mode: z accumulates in f16, relu is one HMAX2
  const uint32_t row_pair0 = pm_pair(uint32_t(g) >> (2 * c)),
                 row_pair1 = pm_pair(uint32_t(g + 8) >> (2 * c));
  const int tile_end = int(w_end);
  const uint32_t lo32 = uint32_t(lo), hi32 = uint32_t(hi);  // patterns < 2^24
  // Bit g (< 4) of patterns 2c, 2c+1 and 2c+8, 2c+9 of an m-tile: the gradient's b^T operand.
  auto pm1 = [](uint32_t p, int j) { return ((p >> j) & 1u) ? 0x3C00u : 0xBC00u; };
  const uint32_t lo_bits_a = pm1(2 * c, g & 3) | (pm1(2 * c + 1, g & 3) << 16);
  const uint32_t lo_bits_b = pm1(2 * c + 8, g & 3) | (pm1(2 * c + 9, g & 3) << 16);
  for (int tile = int(w_begin); tile < tile_end; ++tile) {
    const uint32_t base = uint32_t(tile) * kTile;
    // Bit pairs above bit 3, shared by both m-tiles (base is a multiple of 32, so the second
    // m-tile differs only in bit 4: lane c == 2 of k-step 0 flips its low half).
    uint32_t mid_pair[KB], high_pair[KB];
#pragma unroll
    for (int kb = 0; kb < KB; ++kb) {
      mid_pair[kb] = pm_pair(base >> (16 * kb + 2 * c));
      high_pair[kb] = pm_pair(base >> (16 * kb + 2 * c + 8));
    }
    const bool interior = base >= lo32 && base + kTile <= hi32;  // warp-uniform
    float z[2][NT][4];      // f32 z (rows patterns, cols hidden), split mode and gradients
    uint32_t zh[2][NT][2];  // f16 z, fp16 mode
    float lg[2][2];         // logits of rows g, g+8 per m-tile
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
      const uint32_t u = base + 16 * mt;  // the bits above bit 3 of every row of this m-tile
      if (a.precomputed) {
        const uint32_t p0 = u + g, p1 = p0 + 8;
        const uint32_t mask = (1u << lb) - 1u;
        const float* za = z1 + (p0 & mask) * zs;
        const float* zb = z1 + (p1 & mask) * zs;
        const float* zh0 = z2 + (p0 >> lb) * zs;
        const float* zh1 = z2 + (p1 >> lb) * zs;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const int i = 8 * nt + 2 * c;
          const float2 x0 = *reinterpret_cast<const float2*>(za + i),
                       y0 = *reinterpret_cast<const float2*>(zh0 + i);
          const float2 x1 = *reinterpret_cast<const float2*>(zb + i),
                       y1 = *reinterpret_cast<const float2*>(zh1 + i);
          z[mt][nt][0] = x0.x + y0.x;
          z[mt][nt][1] = x0.y + y0.y;
          z[mt][nt][2] = x1.x + y1.x;
          z[mt][nt][3] = x1.y + y1.y;
          if (kHalfZ) {
            zh[mt][nt][0] = pack_half2(z[mt][nt][0], z[mt][nt][1]);
            zh[mt][nt][1] = pack_half2(z[mt][nt][2], z[mt][nt][3]);
          }
        }
      } else {
        uint32_t ab[KB][4];
#pragma unroll
        for (int kb = 0; kb < KB; ++kb) {
          if (kb == 0) {
            const uint32_t mid = (mt == 1 && c == 2) ? mid_pair[0] ^ 0x8000u : mid_pair[0];
            ab[kb][0] = c < 2 ? row_pair0 : mid;
            ab[kb][1] = c < 2 ? row_pair1 : mid;
          } else {
            ab[kb][0] = ab[kb][1] = mid_pair[kb];
          }
          ab[kb][2] = ab[kb][3] = high_pair[kb];
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          if (kHalfZ) {
            mma16816_h0(zh[mt][nt], ab[0], wb[nt][0][0], wb[nt][0][1]);
#pragma unroll
            for (int kb = 1; kb < KB; ++kb)
              mma16816_h(zh[mt][nt], ab[kb], wb[nt][kb][0], wb[nt][kb][1]);
          } else {
            mma16816_0(z[mt][nt], ab[0], wb[nt][0][0], wb[nt][0][1]);
            mma16816(z[mt][nt], ab[0], wbl[nt][0][0], wbl[nt][0][1]);
#pragma unroll
            for (int kb = 1; kb < KB; ++kb) {
              mma16816(z[mt][nt], ab[kb], wb[nt][kb][0], wb[nt][kb][1]);
              mma16816(z[mt][nt], ab[kb], wbl[nt][kb][0], wbl[nt][kb][1]);
            }
          }
        }
      }
      // l = relu(z) . r on tensor cores: two hidden n8 tiles of z's accumulators are the A
      // operand of one k16 step.
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int ks = 0; ks < KL; ++ks) {
        uint32_t ah[4], al[4];
        if (kHalfZ) {
          ah[0] = hmax2_zero(zh[mt][2 * ks][0]);
          ah[1] = hmax2_zero(zh[mt][2 * ks][1]);
          ah[2] = hmax2_zero(zh[mt][2 * ks + 1][0]);
          ah[3] = hmax2_zero(zh[mt][2 * ks + 1][1]);
          mma16816(acc, ah, rb[ks][0], rb[ks][1]);
        } else {
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const int nt = 2 * ks + (q >> 1), v = 2 * (q & 1);
            split_pack(fmaxf(z[mt][nt][v], 0.f), fmaxf(z[mt][nt][v + 1], 0.f), ah[q], al[q]);
          }
          mma16816(acc, ah, rb[ks][0], rb[ks][1]);
          mma16816(acc, al, rb[ks][0], rb[ks][1]);
          mma16816(acc, ah, rbl[ks][0], rbl[ks][1]);
        }
      }
      lg[mt][0] = acc[0];
      lg[mt][1] = acc[2];
    }
    // This lane's own pattern.
    const int own_mt = c >> 1, own_h = c & 1;
    const float l_raw = own_mt ? (own_h ? lg[1][1] : lg[1][0]) : (own_h ? lg[0][1] : lg[0][0]);
    const uint32_t my_k = base + 16 * own_mt + g + 8 * own_h;
    const bool inside = interior || (my_k >= lo32 && my_k < hi32);
    const float logit = inside ? l_raw : -INFINITY;
    if (__any_sync(0xffffffffu, logit > m + kSlack)) {  // rare: move the reference point
      const float new_m = warp_max(logit);
      const float scale = m == -INFINITY ? 0.f : __expf(m - new_m);
      s *= scale;
#pragma unroll
      for (int q = 0; q < 4; ++q) st[q] *= scale;
      if (kGrad) {
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int kb = 0; kb < KB; ++kb)
#pragma unroll
            for (int q = 0; q < 4; ++q) gwa[kb][nt][q] *= scale;
      }
      m = new_m;
    }
    const float e = inside ? exp_ftz(logit - m) : 0.f;
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
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        // e of rows g and g+8 of this m-tile, from the lanes that own them.
        const float e0 = __shfl_sync(0xffffffffu, e, g * 4 + 2 * mt);
        const float e1 = __shfl_sync(0xffffffffu, e, g * 4 + 2 * mt + 1);
        uint32_t qb[NT][2], qbl[NT][2];
        if (kHalfZ) {  // q = e 1[z > 0] straight from the packed f16 z: two half2 ops a register
          const __half2 e0h = __float2half2_rn(e0), e1h = __float2half2_rn(e1),
                        zero = __float2half2_rn(0.f);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            const __half2 q0 =
                __hmul2(__hgt2(*reinterpret_cast<const __half2*>(&zh[mt][nt][0]), zero), e0h);
            const __half2 q1 =
                __hmul2(__hgt2(*reinterpret_cast<const __half2*>(&zh[mt][nt][1]), zero), e1h);
            // (patterns x hidden) 8x8 blocks transposed into the B operand (patterns = K).
            qb[nt][0] = movmatrix_trans(*reinterpret_cast<const uint32_t*>(&q0));
            qb[nt][1] = movmatrix_trans(*reinterpret_cast<const uint32_t*>(&q1));
          }
        } else {
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            float q[4];
#pragma unroll
            for (int v = 0; v < 4; ++v) q[v] = z[mt][nt][v] > 0.f ? (v < 2 ? e0 : e1) : 0.f;
            uint32_t h0, l0, h1, l1;
            split_pack(q[0], q[1], h0, l0);
            split_pack(q[2], q[3], h1, l1);
            qb[nt][0] = movmatrix_trans(h0);
            qb[nt][1] = movmatrix_trans(h1);
            qbl[nt][0] = movmatrix_trans(l0);
            qbl[nt][1] = movmatrix_trans(l1);
          }
        }
        // A operand: b^T (bits x patterns) for this m-tile's 16 patterns, rows = bits g, g + 8
        // (+16 kb), columns = patterns 2c, 2c+1 (+8). Bits 0..3 of those patterns are lane
        // constants (lo_bits*); every higher bit is the same for all four patterns (uniform).
        const uint32_t u = base + 16 * mt;
#pragma unroll
        for (int kb = 0; kb < KB; ++kb) {
          const int j0 = 16 * kb + g, j1 = j0 + 8;
          auto both = [](uint32_t bit) { return bit ? 0x3C003C00u : 0xBC00BC00u; };
          uint32_t ab[4];
          ab[0] = (kb == 0 && g < 4) ? lo_bits_a : both((u >> j0) & 1u);
          ab[2] = (kb == 0 && g < 4) ? lo_bits_b : both((u >> j0) & 1u);
          ab[1] = ab[3] = both((u >> j1) & 1u);
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            mma16816(gwa[kb][nt], ab, qb[nt][0], qb[nt][1]);
            if (kSplit) mma16816(gwa[kb][nt], ab, qbl[nt][0], qbl[nt][1]);
          }
        }
      }
    }
  }

  // Warp totals: s and stats over lanes; sample argmax.
  s = warp_sum(s);
#pragma unroll
  for (int q = 0; q < 4; ++q) st[q] = warp_sum(st[q]);
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
  constexpr int kRec = 8 + HP + HP * BP;  // m, s, stats[4], best, best_k | (unused) | gw
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
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int kb = 0; kb < KB; ++kb)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int j = 16 * kb + g + ((q & 2) ? 8 : 0), i = 8 * nt + 2 * c + (q & 1);
          rec[8 + HP + i * BP + j] = gwa[kb][nt][q];
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
    if (a.logz) a.logz[row] = mm + logf(ss);
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
        for (int j = 0; j < bits; ++j)
          acc += load_f(w, int64_t(i) * bits + j) * a.gw[(row * a.hid + i) * bits + j];
        a.gr[row * a.hid + i] = acc;
      }
    }
  }
}

// Combines the slices of each example in slice order (fixed: deterministic).
template <typename T>
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
    if (part.logz) part.logz[n] = mm + logf(ss);
    if (stats)
      for (int q = 0; q < 4; ++q) stats[n * 4 + q] = st[q];
    if (sample) sample[n] = bk;
  }
  if (gr) {
    for (int t = threadIdx.x; t < hid * bits; t += blockDim.x) {
      float acc = 0.f;
      for (int64_t k = 0; k < sl; ++k) acc += part.gw[(n * sl + k) * hid * bits + t] * scale(k);
      gw[n * hid * bits + t] = acc;
    }
    __syncthreads();
    const T* w = static_cast<const T*>(part.w) + n * hid * bits;
    for (int i = threadIdx.x; i < hid; i += blockDim.x) {  // gr = sum_j W_ij gw_ij
      float acc = 0.f;
      for (int j = 0; j < bits; ++j)
        acc += load_f(w, int64_t(i) * bits + j) * gw[(n * hid + i) * bits + j];
      gr[n * hid + i] = acc;
    }
  }
}

template <typename T, int NT, int KB, bool kSplit, bool kGrad>
void launch_typed(const KernelArgs& ka, int64_t grid, size_t smem, cudaStream_t stream) {
  auto kernel = sick_kernel<T, NT, KB, kSplit, kGrad>;
  static size_t configured = 0;  // raise the dynamic shared-memory cap once per instantiation
  if (smem > 48 * 1024 && smem > configured) {
    BG_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    configured = smem;
  }
  kernel<<<unsigned(grid), kWarps * 32, smem, stream>>>(ka);
  BG_CUDA_LAUNCH_CHECK();
}

template <typename T, int NT, int KB>
void launch_mode(const KernelArgs& ka, int64_t grid, size_t smem, bool split, bool grad,
                 cudaStream_t s) {
  if (split) {
    if (grad)
      launch_typed<T, NT, KB, true, true>(ka, grid, smem, s);
    else
      launch_typed<T, NT, KB, true, false>(ka, grid, smem, s);
  } else {
    if (grad)
      launch_typed<T, NT, KB, false, true>(ka, grid, smem, s);
    else
      launch_typed<T, NT, KB, false, false>(ka, grid, smem, s);
  }
}

}  // namespace

void sick_forward(const SickArgs& args, Scratch& scratch, StreamHandle stream) {
  const int64_t n_ex = args.w.shape[0], hid = args.w.shape[1];
  const int bits = args.code.bits;
  if (bits < 1 || bits > 24) kernel_fail("sick", "bits must be in [1, 24]");
  if (hid < 1 || hid > 64)
    kernel_fail("sick", "the CUDA kernel supports hidden sizes 1..64, got " + std::to_string(hid));
  if (n_ex == 0) return;
  const int nt = hid <= 32 ? 4 : 8, kb = bits <= 16 ? 1 : 2;
  const int hp = nt * 8, bp = kb * 16;
  const bool grad = args.outputs & kSickGrad;
  // Fixed by the shape alone: about 1024 CTAs of work for small batches, one slice per example
  // for large ones, and at least 64 tiles per slice.
  const int64_t tiles = ((int64_t(1) << bits) + kTile - 1) / kTile;
  int64_t slices = std::max<int64_t>(1, std::min<int64_t>((1024 + n_ex - 1) / n_ex, tiles / 64));
  size_t smem = size_t(kWarps) * (8 + hp + hp * bp) * sizeof(float);
  if (args.precomputed) {
    const int lb = bits / 2, hb = bits - lb;
    smem += ((size_t(1) << lb) + (size_t(1) << hb)) * size_t(hp) * sizeof(float);
    if (smem > 200 * 1024)
      kernel_fail("sick", "the precomputed variant's tables do not fit in shared memory for " +
                              std::to_string(bits) + " bits and hidden " + std::to_string(hid) +
                              "; use bruteforce");
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
    ka.logz = static_cast<float*>(args.logz.data);
    ka.m = static_cast<float*>(args.m.data);
    ka.s = static_cast<float*>(args.s.data);
    // Only the outputs asked for: the kernels test these pointers.
    ka.gr = grad ? static_cast<float*>(args.gr.data) : nullptr;
    ka.gw = grad ? static_cast<float*>(args.gw.data) : nullptr;
    ka.stats = stats ? static_cast<float*>(args.stats.data) : nullptr;
    if (sample) {
      ka.best = static_cast<float*>(scratch.get(sizeof(float) * size_t(n_ex)));
      ka.best_idx = static_cast<int64_t*>(args.sample.data);
    }
  } else {
    const size_t rows = size_t(n_ex * slices);
    auto f = [&](size_t count) { return static_cast<float*>(scratch.get(sizeof(float) * count)); };
    ka.m = f(rows);
    ka.s = f(rows);
    if (grad) ka.gw = f(rows * size_t(hid * bits));  // gr follows from the merged gw
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
    // f32/bf16 weights keep ~22 bits via hi + lo halves unless fp16 compute was asked for.
    const bool split = !std::is_same_v<T, __half> && !args.half_compute;
    if (nt == 4 && kb == 1)
      launch_mode<T, 4, 1>(ka, grid, smem, split, grad, s);
    else if (nt == 4)
      launch_mode<T, 4, 2>(ka, grid, smem, split, grad, s);
    else if (kb == 1)
      launch_mode<T, 8, 1>(ka, grid, smem, split, grad, s);
    else
      launch_mode<T, 8, 2>(ka, grid, smem, split, grad, s);
  });
  if (slices > 1) {
    ka.logz = static_cast<float*>(args.logz.data);  // the merge writes it
    dispatch_float(args.w.dtype, "sick", [&](auto zero) {
      using T = decltype(zero);
      sick_merge_kernel<T><<<unsigned(n_ex), 128, 0, s>>>(
          ka, static_cast<float*>(args.m.data), static_cast<float*>(args.s.data),
          grad ? static_cast<float*>(args.gr.data) : nullptr,
          grad ? static_cast<float*>(args.gw.data) : nullptr,
          stats ? static_cast<float*>(args.stats.data) : nullptr,
          sample ? static_cast<int64_t*>(args.sample.data) : nullptr, n_ex);
    });
    BG_CUDA_LAUNCH_CHECK();
  }
}

namespace {

template <typename T>
__global__ void bide_logits_kernel(T* l, const T* w, const T* r, const int64_t* y, int64_t n_ex,
                                   int hid, int bits, const float* logz, float* logp) {
  const int64_t n = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (n >= n_ex) return;
  const uint64_t k = uint64_t(y[n]);
  float acc = 0.f;
  for (int i = lane; i < hid; i += 32) {
    float z = 0.f;
    for (int j = 0; j < bits; ++j)
      z += ((k >> j) & 1u ? 1.f : -1.f) * to_float(w[(n * hid + i) * bits + j]);
    acc += to_float(r[n * hid + i]) * fmaxf(z, 0.f);
  }
  acc = warp_sum(acc);
  if (lane == 0) {
    if (logz)
      logp[n] = acc - logz[n];
    else
      l[n] = from_float<T>(acc);
  }
}

template <typename T>
__global__ void bide_log_prob_backward_kernel(T* dw, T* dr, const T* w, const T* r,
                                              const int64_t* y, const float* gw, const float* gr,
                                              const float* s, const T* g, int64_t n_ex, int hid,
                                              int bits) {
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

void bide_logits(const KView& l, const KView& w, const KView& r, const KView& y, int bits,
                 const KView& logz, const KView& logp, StreamHandle stream) {
  const int64_t n_ex = w.shape[0];
  if (n_ex == 0) return;
  dispatch_float(w.dtype, "bide_logits", [&](auto zero) {
    using T = decltype(zero);
    bide_logits_kernel<T><<<unsigned((n_ex + 7) / 8), 256, 0, as_stream(stream)>>>(
        static_cast<T*>(l.data), static_cast<const T*>(w.data), static_cast<const T*>(r.data),
        static_cast<const int64_t*>(y.data), n_ex, int(w.shape[1]), bits,
        static_cast<const float*>(logz.data), static_cast<float*>(logp.data));
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
