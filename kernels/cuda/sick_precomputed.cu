// sick_precomputed.cu: the SICK fused pass, precomputed variant.
//
// z_k = W b_k splits over bit groups of the pattern k = base + row (base a multiple of 32):
//   bits 0..4 (the row inside the tile): z_lo, lane constants held in registers in the mma
//     accumulator layout;
//   bits 5..10 (the tile index mod 64): z_mid, a table of 64 rows in shared memory, stored in the
//     order each lane reads it;
//   bits 11.. (they change every 64 tiles): z_hi, summed by each lane once per 64-tile block and
//     folded into its z_lo registers then (the z_lo bases wait in shared memory).
// Columns of W past the value's bits are zero in shared memory, so every group has a fixed width
// and every loop above is unrolled at compile time.
// A tile then costs one shared load of its z_mid row, and h = relu((z_lo + z_hi) + z_mid) is one
// HFMA2.RELU per register: the 1024 relu'd pre-activations of a 32-pattern tile in 16
// instructions, already in the A-operand layout of the logit MMA. No bit arithmetic and no MMA
// for z. Packed-f16 math issues only on the FMA-heavy pipe (ncu: the limiter of this kernel), so
// every per-tile HADD2 saved counts. The logit MMA of the second m-tile accumulates onto the
// first with r only in the B columns of the lanes that own second-tile patterns, so each lane's
// own logit lands in its accumulators without selects. Interior blocks skip range checks and
// take two tiles a step (one vote for both; independent chains interleave).
//
// Gradients: gw^T = b^T diag(e) 1[z > 0]. e scales the A operand b^T (b = +-1: a sign flip of
// e), and the B operand 1[z > 0]^T comes from a second copy of z_lo + z_hi in the transposed
// layout compared against -z_mid: x > -y exactly when round(x + y) > 0 (a nonzero sum of two f16
// or f32 numbers never rounds to zero), so the mask matches the forward relu bit for bit with no
// movmatrix and no per-element multiply.
//
// fp32 mode: the same groups in f32 (one FADD per element) with the logit and the
// gradient MMAs on hi + lo f16 halves. Precision: fp16 mode rounds z_lo, z_mid, z_hi, z_lo + z_hi
// and z once each (<= 2.5 f16 ulps of z); fp32 mode keeps f32 sums throughout.
#include <cuda_fp16.h>

#include "cuda_kernels.h"
#include "sick_common.cuh"

namespace bg::cuda::sick {
namespace {

constexpr int kLoBits = 5;            // bits held in registers: the 32 rows of a tile
constexpr int kMidBits = 6;           // bits in the shared-memory table
constexpr int kRows = 1 << kMidBits;  // its rows; also the tiles of a block
constexpr int kHiBit0 = kLoBits + kMidBits;

__device__ __forceinline__ float pm(uint32_t p, int j) { return (p >> j) & 1u ? 1.f : -1.f; }

constexpr int ilog2(int x) { return x <= 1 ? 0 : 1 + ilog2(x / 2); }

__device__ __forceinline__ uint32_t as_u32(__half2 h) {
  return *reinterpret_cast<const uint32_t*>(&h);
}
__device__ __forceinline__ __half2 as_h2(uint32_t u) {
  return *reinterpret_cast<const __half2*>(&u);
}

// -x in both halves (the transposed table stores -z_mid so one HADD2 gives -c).
__device__ __forceinline__ uint32_t neg_dup(float x) {
  const __half h = __hneg(__float2half_rn(x));
  return as_u32(__halves2half2(h, h));
}

// kWords 32-bit words (a multiple of 4) from 16-byte aligned shared memory, 16 bytes a load.
template <int kWords>
__device__ __forceinline__ void load_words(const uint32_t* src, uint32_t (&dst)[kWords]) {
  static_assert(kWords % 4 == 0, "whole 16-byte loads");
#pragma unroll
  for (int q = 0; q < kWords / 4; ++q) {
    const uint4 v = reinterpret_cast<const uint4*>(src)[q];
    dst[4 * q] = v.x;
    dst[4 * q + 1] = v.y;
    dst[4 * q + 2] = v.z;
    dst[4 * q + 3] = v.w;
  }
}

__device__ __forceinline__ float load_any(const void* p, DType t, int64_t i) {
  if (t == DType::f16) return __half2float(static_cast<const __half*>(p)[i]);
  if (t == DType::bf16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

// Registers (words) a lane holds for z_lo: accumulator layout, plus the transposed layout with
// gradients. Their z_hi-free base values are parked in shared memory, one column per lane.
__host__ __device__ constexpr int lane_words(int nt, bool split, bool grad) {
  return (split ? 8 : 4) * nt * (grad ? 2 : 1);
}

// Shared-memory words before the epilogue's merge area: W (HP x BP f32), the forward z_mid table
// (f16 pairs, or f32 in split mode), the transposed z_mid table (gradients only), the z_lo bases.
__host__ __device__ constexpr int table_words(int nt, int kb, bool split, bool grad) {
  return nt * 8 * kb * 16 + kRows * nt * 8 / (split ? 1 : 2) + (grad ? kRows * nt * 8 : 0) +
         kWarps * 32 * lane_words(nt, split, grad);
}

// NT: 8-wide tiles of hidden units (H <= 8 NT); KB: 16-bit steps of B for the gradient rows.
// Lane (g, c) owns pattern base + 16 (c >> 1) + g + 8 (c & 1) of a tile.
template <int NT, int KB, bool kSplit, bool kGrad, bool kExtras>
__global__ void __launch_bounds__(kWarps * 32) sick_precomputed_kernel(KernelArgs a) {
  extern __shared__ float smem[];
  constexpr int HP = NT * 8, BP = KB * 16, KL = NT / 2;
  constexpr int kFwdStride = 4 * NT * (kSplit ? 2 : 1), kTrStride = 8 * NT;  // words per row
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int64_t n = blockIdx.x / a.slices, slice = blockIdx.x % a.slices;
  const int bits = a.code.bits, hid = int(a.hid);
  const WarpRange range = warp_range(a, n, slice, warp);

  float* wsm = smem;
  uint32_t* tab_fwd = reinterpret_cast<uint32_t*>(smem + HP * BP);
  uint32_t* tab_tr = tab_fwd + kRows * kFwdStride;
  constexpr int kLaneWords = lane_words(NT, kSplit, kGrad);
  // z_lo bases of this lane: word w at lane_base[32 w] (conflict-free, private to the lane).
  uint32_t* lane_base = tab_tr + (kGrad ? kRows * kTrStride : 0) + warp * 32 * kLaneWords + lane;
  float* merge = smem + table_words(NT, KB, kSplit, kGrad);

  for (int t = threadIdx.x; t < HP * BP; t += blockDim.x) {
    const int i = t / BP, j = t % BP;
    wsm[t] = (i < hid && j < bits) ? load_any(a.w, a.wtype, ((n % a.w_rows) * a.hid + i) * bits + j) : 0.f;
  }
  __syncthreads();
  // z_mid rows. Forward layout: row, lane column group c, n-tile, pair (hidden 8 nt + 2c + q);
  // transposed layout: row, lane row group g, n-tile (hidden 8 nt + g). Thread t owns hidden
  // unit t % HP and the kRowsPer rows whose high bits are t / HP: a prefix tree over the low row
  // bits gives every row in one FADD, summed in bit order like a plain loop would.
  {
    constexpr int kRowsPer = kRows * HP / (kWarps * 32), kTreeBits = ilog2(kRowsPer);
    static_assert(kRowsPer * (kWarps * 32) == kRows * HP, "rows split evenly over threads");
    const int i = threadIdx.x % HP, row_hi = threadIdx.x / HP;
    const float* wi = wsm + i * BP + kLoBits;
    float v[kRowsPer];
    v[0] = -wi[0];
    v[1] = wi[0];
#pragma unroll
    for (int q = 1; q < kTreeBits; ++q) {
      const float wq = wi[q];
#pragma unroll
      for (int x = 0; x < kRowsPer / 2; ++x)
        if (x < (1 << q)) {
          v[x + (1 << q)] = v[x] + wq;
          v[x] = v[x] - wq;
        }
    }
#pragma unroll
    for (int q = kTreeBits; q < kMidBits; ++q) {
      const float t = (row_hi >> (q - kTreeBits)) & 1 ? wi[q] : -wi[q];
#pragma unroll
      for (int x = 0; x < kRowsPer; ++x) v[x] = v[x] + t;
    }
    const int nt = i >> 3, cc = (i & 7) >> 1, half = i & 1, gg = i & 7;
#pragma unroll
    for (int x = 0; x < kRowsPer; ++x) {
      const int row = row_hi * kRowsPer + x;
      const int fwd = ((row * 4 + cc) * NT + nt) * 2 + half;
      if (kSplit)
        reinterpret_cast<float*>(tab_fwd)[fwd] = v[x];
      else
        reinterpret_cast<__half*>(tab_fwd)[fwd] = __float2half_rn(v[x]);
      if (kGrad) {
        const int tr = (row * 8 + gg) * NT + nt;
        if (kSplit)
          reinterpret_cast<float*>(tab_tr)[tr] = v[x];
        else
          tab_tr[tr] = neg_dup(v[x]);
      }
    }
  }
  __syncthreads();

  // r as the B operand of the logit MMA, in the columns (= lanes' g) that own patterns of the
  // m-tile: m-tile 0 feeds columns 0..3 (lanes c < 2), m-tile 1 columns 4..7 (lanes c >= 2).
  uint32_t rb[2][KL][2], rbl[2][KL][2];
  {
    uint32_t hi[KL][2], lo[KL][2];
    load_r_operand<KL>([&](int i) { return load_any(a.r, a.wtype, (n % a.w_rows) * a.hid + i); }, hid, c, hi,
                       lo);
#pragma unroll
    for (int ks = 0; ks < KL; ++ks)
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        rb[0][ks][q] = g < 4 ? hi[ks][q] : 0u;
        rbl[0][ks][q] = g < 4 ? lo[ks][q] : 0u;
        rb[1][ks][q] = g < 4 ? 0u : hi[ks][q];
        rbl[1][ks][q] = g < 4 ? 0u : lo[ks][q];
      }
  }

  // z_lo of the rows p3 + 8 h + 16 mt (bits 0..2 of the pattern fixed, bits 3 and 4 from h and
  // mt) at hidden unit i, out[mt][h]. Summed in bit order, the same for both layouts, so both
  // hold the same numbers; the bits 0..2 prefix is shared by the four rows.
  auto lo_sums = [&](uint32_t p3, int i, float(&out)[2][2]) {
    const float* wi = wsm + i * BP;
    const float s3 = (pm(p3, 0) * wi[0] + pm(p3, 1) * wi[1]) + pm(p3, 2) * wi[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float s4 = s3 + (h ? wi[3] : -wi[3]);
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) out[mt][h] = s4 + (mt ? wi[4] : -wi[4]);
    }
  };
  // z_lo + z_hi of the current block, in registers. Accumulator layout: [mt][nt][h] = rows
  // 16 mt + g + 8 h, hidden 8 nt + 2c (+1). Transposed (gradient B operand) layout:
  // [mt][nt][v] = rows 16 mt + 2c + 8 v (+1), hidden 8 nt + g. Word order in lane_base: the
  // accumulator layout first, then the transposed one.
  uint32_t zlo_h[2][NT][2];
  float zlo_f[2][NT][4];
  uint32_t zlot_h[2][NT][2];
  float zlot_f[2][NT][4];
  constexpr int kT = kLaneWords / (kGrad ? 2 : 1);  // first transposed word
  auto base_at = [&](int w) -> uint32_t& { return lane_base[32 * w]; };
  auto fbase_at = [&](int w) -> float& { return reinterpret_cast<float&>(lane_base[32 * w]); };
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    float a0[2][2], a1[2][2];  // accumulator layout: hidden 8 nt + 2c and + 1, rows g + ...
    lo_sums(uint32_t(g), 8 * nt + 2 * c, a0);
    lo_sums(uint32_t(g), 8 * nt + 2 * c + 1, a1);
    float t0[2][2], t1[2][2];  // transposed layout: hidden 8 nt + g, rows 2c and 2c + 1 + ...
    if (kGrad) {
      lo_sums(uint32_t(2 * c), 8 * nt + g, t0);
      lo_sums(uint32_t(2 * c + 1), 8 * nt + g, t1);
    }
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (kSplit) {
          const int w = (mt * NT + nt) * 4 + 2 * h;
          fbase_at(w) = a0[mt][h];
          fbase_at(w + 1) = a1[mt][h];
          if (kGrad) {
            fbase_at(kT + w) = t0[mt][h];
            fbase_at(kT + w + 1) = t1[mt][h];
          }
        } else {
          const int w = (mt * NT + nt) * 2 + h;
          base_at(w) = pack_half2(a0[mt][h], a1[mt][h]);
          if (kGrad) base_at(kT + w) = pack_half2(t0[mt][h], t1[mt][h]);
        }
      }
  }
  // Gradient A operand signs (half2 masks, set = bit clear = -1) for row bit g of the column
  // pairs (2c, 2c+1) and (2c+8, 2c+9): lane constants for g < 4, the m-tile for g == 4, and the
  // tile base for g >= 5 (hi_sel keeps only those).
  auto sign_mask = [](uint32_t p, int j) { return (p >> j) & 1u ? 0u : 0x8000u; };
  uint32_t const_a[2], const_b[2];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    const uint32_t pa = 16 * mt + 2 * c, pb = pa + 8;
    const_a[mt] = g < 5 ? sign_mask(pa, g) | (sign_mask(pa + 1, g) << 16) : 0u;
    const_b[mt] = g < 5 ? sign_mask(pb, g) | (sign_mask(pb + 1, g) << 16) : 0u;
  }
  const uint32_t hi_sel = g >= 5 ? 0xFFFFFFFFu : 0u;

  WarpState<NT, KB, kGrad> ws;
  const uint32_t lo32 = uint32_t(range.lo), hi32 = uint32_t(range.hi);  // patterns < 2^24
  const uint32_t own = 16 * (c >> 1) + g + 8 * (c & 1);                 // the lane's row in a tile
  const bool own_h = c & 1;
  const __half2 one2 = __float2half2_rn(1.f);
  const uint32_t* fwd_lane = tab_fwd + c * (kFwdStride / 4);
  const uint32_t* tr_lane = tab_tr + g * NT;

  for (int block_begin = range.begin; block_begin < range.end;) {
    const int block_end = min(range.end, (block_begin | (kRows - 1)) + 1);
    // z_hi of this block, at the lane's forward pairs and (gradients) its transposed column,
    // folded into the z_lo registers: a tile then adds only its z_mid row.
    {
      uint32_t cb_h[NT], cbt_h[NT];
      float cb_f[NT][2], cbt_f[NT];
      const uint32_t block_base = uint32_t(block_begin) * kTile;
      auto hi_sum = [&](int i) {
        float v = 0.f;
#pragma unroll
        for (int j = kHiBit0; j < BP; ++j) v += pm(block_base, j) * wsm[i * BP + j];
        return v;
      };
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const float v0 = hi_sum(8 * nt + 2 * c), v1 = hi_sum(8 * nt + 2 * c + 1);
        if (kSplit) {
          cb_f[nt][0] = v0;
          cb_f[nt][1] = v1;
        } else {
          cb_h[nt] = pack_half2(v0, v1);
        }
        if (kGrad) {
          const float vt = hi_sum(8 * nt + g);
          if (kSplit)
            cbt_f[nt] = vt;
          else
            cbt_h[nt] = pack_half2(vt, vt);
        }
      }
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            if (kSplit) {
              const int w = (mt * NT + nt) * 4 + 2 * h;
              zlo_f[mt][nt][2 * h] = fbase_at(w) + cb_f[nt][0];
              zlo_f[mt][nt][2 * h + 1] = fbase_at(w + 1) + cb_f[nt][1];
              if (kGrad) {
                zlot_f[mt][nt][2 * h] = fbase_at(kT + w) + cbt_f[nt];
                zlot_f[mt][nt][2 * h + 1] = fbase_at(kT + w + 1) + cbt_f[nt];
              }
            } else {
              const int w = (mt * NT + nt) * 2 + h;
              zlo_h[mt][nt][h] = as_u32(__hadd2(as_h2(base_at(w)), as_h2(cb_h[nt])));
              if (kGrad)
                zlot_h[mt][nt][h] = as_u32(__hadd2(as_h2(base_at(kT + w)), as_h2(cbt_h[nt])));
            }
          }
    }

    // The lane's own logit for a tile (see rb: both m-tiles accumulate into one fragment, and
    // lane (g, c) ends with its own pattern's logit in acc[0] (row g) or acc[2] (row g + 8)).
    auto logit_of = [&](int tile) {
      const int row = tile & (kRows - 1);
      // z_mid at the lane's columns: NT f16 pairs, or 2 NT floats in split mode.
      uint32_t cw[kSplit ? 2 * NT : NT];
      load_words(fwd_lane + row * kFwdStride, cw);
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
        for (int ks = 0; ks < KL; ++ks) {
          if (kSplit) {
            uint32_t ah[4], al[4];
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int nt = 2 * ks + (q >> 1), v = 2 * (q & 1);
              const float z0 = zlo_f[mt][nt][v] + __uint_as_float(cw[2 * nt]);
              const float z1 = zlo_f[mt][nt][v + 1] + __uint_as_float(cw[2 * nt + 1]);
              split_pack(fmaxf(z0, 0.f), fmaxf(z1, 0.f), ah[q], al[q]);
            }
            mma16816(acc, ah, rb[mt][ks][0], rb[mt][ks][1]);
            mma16816(acc, al, rb[mt][ks][0], rb[mt][ks][1]);
            mma16816(acc, ah, rbl[mt][ks][0], rbl[mt][ks][1]);
          } else {
            uint32_t ah[4];
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int nt = 2 * ks + (q >> 1);
              ah[q] = as_u32(__hfma2_relu(as_h2(zlo_h[mt][nt][q & 1]), one2, as_h2(cw[nt])));
            }
            mma16816(acc, ah, rb[mt][ks][0], rb[mt][ks][1]);
          }
        }
      }
      return own_h ? acc[2] : acc[0];
    };
    // gw^T += b^T diag(e) 1[z > 0] for a tile, e = this lane's exp(l - m).
    auto grad_step = [&](int tile, float e) {
      const uint32_t base = uint32_t(tile) * kTile;
      const int row = tile & (kRows - 1);
      // -z_mid (fp16, both halves) or z_mid (fp32) at hidden 8 nt + g: the mask threshold of
      // the transposed z_lo + z_hi.
      uint32_t tw[NT];
      load_words(tr_lane + row * kTrStride, tw);
      const uint32_t nb = ~base;
      auto uniform_sign = [&](int j) { return ((nb >> j) & 1u) * 0x80008000u; };
      const uint32_t t0 = uniform_sign(g) & hi_sel, s1 = uniform_sign(g + 8);
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        // e of the A columns (patterns 2c, 2c+1, 2c+8, 2c+9 of this m-tile), from their owners.
        const float ea0 = __shfl_sync(0xffffffffu, e, 8 * c + 2 * mt);
        const float ea1 = __shfl_sync(0xffffffffu, e, 8 * c + 4 + 2 * mt);
        const float eb0 = __shfl_sync(0xffffffffu, e, 8 * c + 2 * mt + 1);
        const float eb1 = __shfl_sync(0xffffffffu, e, 8 * c + 4 + 2 * mt + 1);
        uint32_t ea_hi, ea_lo = 0, eb_hi, eb_lo = 0;
        if (kSplit) {
          split_pack(ea0, ea1, ea_hi, ea_lo);
          split_pack(eb0, eb1, eb_hi, eb_lo);
        } else {
          ea_hi = pack_half2(ea0, ea1);
          eb_hi = pack_half2(eb0, eb1);
        }
        // B operands: 1[z > 0]^T, patterns x hidden 8 nt + g.
        uint32_t mb[NT][2];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int v = 0; v < 2; ++v) {
            if (kSplit) {
              const bool p0 = zlot_f[mt][nt][2 * v] + __uint_as_float(tw[nt]) > 0.f;
              const bool p1 = zlot_f[mt][nt][2 * v + 1] + __uint_as_float(tw[nt]) > 0.f;
              mb[nt][v] = (p0 ? 0x3C00u : 0u) | (p1 ? 0x3C000000u : 0u);
            } else {
              mb[nt][v] = as_u32(__hgt2(as_h2(zlot_h[mt][nt][v]), as_h2(tw[nt])));
            }
          }
#pragma unroll
        for (int kb = 0; kb < KB; ++kb) {
          const uint32_t s0a = kb == 0 ? (const_a[mt] | t0) : uniform_sign(16 + g);
          const uint32_t s0b = kb == 0 ? (const_b[mt] | t0) : uniform_sign(16 + g);
          const uint32_t s1k = kb == 0 ? s1 : uniform_sign(24 + g);
          const uint32_t ah[4] = {ea_hi ^ s0a, ea_hi ^ s1k, eb_hi ^ s0b, eb_hi ^ s1k};
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) mma16816(ws.gw[kb][nt], ah, mb[nt][0], mb[nt][1]);
          if (kSplit) {
            const uint32_t al[4] = {ea_lo ^ s0a, ea_lo ^ s1k, eb_lo ^ s0b, eb_lo ^ s1k};
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) mma16816(ws.gw[kb][nt], al, mb[nt][0], mb[nt][1]);
          }
        }
      }
    };

    auto tile_step = [&](int tile, auto check) {
      constexpr bool kCheck = decltype(check)::value;
      const uint32_t my_k = uint32_t(tile) * kTile + own;
      const bool inside = !kCheck || (my_k >= lo32 && my_k < hi32);
      const float e = ws.template add<kCheck, kExtras>(a, n, logit_of(tile), my_k, inside);
      if (kGrad) grad_step(tile, e);
    };

    const bool interior =
        uint32_t(block_begin) * kTile >= lo32 && uint32_t(block_end) * kTile <= hi32;
    if (interior) {  // two tiles a step: independent chains interleave, one vote per pair
      int tile = block_begin;
      for (; tile + 1 < block_end; tile += 2) {
        const float l0 = logit_of(tile), l1 = logit_of(tile + 1);
        const uint32_t k0 = uint32_t(tile) * kTile + own;
        float e0, e1;
        ws.template add_pair<kExtras>(a, n, l0, k0, l1, k0 + kTile, e0, e1);
        if (kGrad) {
          grad_step(tile, e0);
          grad_step(tile + 1, e1);
        }
      }
      if (tile < block_end) tile_step(tile, std::false_type{});
    } else {
      for (int tile = block_begin; tile < block_end; ++tile) tile_step(tile, std::true_type{});
    }
    block_begin = block_end;
  }
  finish_cta<NT, KB, kGrad>(a, merge, n, slice, ws, [&](int i, int j) { return wsm[i * BP + j]; });
}

template <int NT, int KB, bool kSplit, bool kGrad, bool kExtras>
void launch_precomputed_typed(const KernelArgs& ka, int64_t grid, cudaStream_t stream) {
  launch_sick_kernel(sick_precomputed_kernel<NT, KB, kSplit, kGrad, kExtras>, ka, grid,
                     sick_precomputed_smem(NT, KB, kSplit, kGrad), stream);
}

}  // namespace

size_t sick_precomputed_smem(int nt, int kb, bool split, bool grad) {
  return (size_t(table_words(nt, kb, split, grad)) + merge_floats(nt, kb)) * sizeof(float);
}

void launch_sick_precomputed(const KernelArgs& ka, int nt, int kb, bool split, bool grad,
                             int64_t grid, cudaStream_t stream) {
  // f16 weights never take the split path (dispatch_sick_shape's T = float keeps both).
  dispatch_sick_shape<float, false>(
      nt, kb, split, grad, [&](auto nt_c, auto kb_c, auto split_c, auto grad_c) {
        if (ka.outputs & (kSickStats | kSickSample))
          launch_precomputed_typed<nt_c(), kb_c(), split_c(), grad_c(), true>(ka, grid, stream);
        else
          launch_precomputed_typed<nt_c(), kb_c(), split_c(), grad_c(), false>(ka, grid, stream);
      });
}

}  // namespace bg::cuda::sick
