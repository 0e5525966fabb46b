// sick.cu: the SICK fused pass, bruteforce variant, and the entry point for both variants.
//
// Per example n, patterns k are visited in tiles of 32 by one warp (patterns are the M dimension
// of two m16 tiles). For a tile:
//   1. Z (32 x H) = b (32 x B) . W^T with mma.sync m16n8k16; the +-1 bit fragments come from the
//      pattern index in registers. fp16 mode accumulates z in f16 (relu is one HMAX2); fp32 mode
//      splits W into hi + lo f16 halves (b is exact, so z keeps ~22 bits) and accumulates in f32.
//   2. l = relu(Z) . r on tensor cores: two hidden n8 tiles of Z's accumulators are the A operand
//      of one k16 step (the FlashAttention-2 register trick).
//   3. Online softmax over the warp (WarpState::add): lane (g, c) owns one pattern, one exp each.
//   4. With gradients: q = e 1[z > 0] transposed into the B operand with movmatrix, and
//      gw^T (bits x H) += b^T q on tensor cores.
// The precomputed variant (sick_precomputed.cu) replaces step 1 by register and shared-memory
// tables. Each CTA (4 warps) covers a fixed slice of one example's range; warps and CTA slices
// are merged in a fixed order (no floating-point atomics: the last CTA of an example, found by an
// integer arrival counter, merges its slices in slice order), and the slice count depends only on N
// and the range size, never on the GPU: the bits repeat on any GPU and run to run.
#include <cuda_fp16.h>

#include "cuda_kernels.h"
#include "sick_common.cuh"

namespace bg::cuda::sick {
namespace {

__device__ __forceinline__ uint32_t hmax2_zero(uint32_t x) {
  const __half2 h = __hmax2(*reinterpret_cast<const __half2*>(&x), __float2half2_rn(0.f));
  return *reinterpret_cast<const uint32_t*>(&h);
}

// +-1 half2 pair for the two bits of x (bit 0 in the low half): flip the sign of -1.
__device__ __forceinline__ uint32_t pm_pair(uint32_t x) {
  return 0xBC00BC00u ^ ((x & 1u) << 15) ^ ((x & 2u) << 30);
}

__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// NT: 8-wide tiles of hidden units (H <= 8 NT); KB: 16-bit steps of B (B <= 16 KB).
// Lane (g, c) owns pattern base + 16 (c >> 1) + g + 8 (c & 1) of a tile.
template <typename T, int NT, int KB, bool kSplit, bool kGrad>
__global__ void __launch_bounds__(kWarps * 32) sick_bruteforce_kernel(KernelArgs a) {
  extern __shared__ float smem[];
  constexpr int KL = NT / 2;  // k16 steps over hidden units
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, g = lane >> 2, c = lane & 3;
  const int64_t n = blockIdx.x / a.slices, slice = blockIdx.x % a.slices;
  const int bits = a.code.bits;
  const int hid = int(a.hid);
  const T* w = static_cast<const T*>(a.w) + (n % a.w_rows) * a.hid * bits;
  const T* rv = static_cast<const T*>(a.r) + (n % a.w_rows) * a.hid;
  const WarpRange range = warp_range(a, n, slice, warp);

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
  load_r_operand<KL>([&](int i) { return load_f(rv, i); }, hid, c, rb, rbl);

  WarpState<NT, KB, kGrad> ws;
  // Bits 0..3 of a pattern come from the lane's row (g or g + 8): constants. Higher bit pairs
  // are the same for every lane of a tile, so each tile derives them from its base alone.
  constexpr bool kHalfZ = !kSplit;  // fp16 mode: z accumulates in f16, relu is one HMAX2
  const uint32_t row_pair0 = pm_pair(uint32_t(g) >> (2 * c)),
                 row_pair1 = pm_pair(uint32_t(g + 8) >> (2 * c));
  const uint32_t lo32 = uint32_t(range.lo), hi32 = uint32_t(range.hi);  // patterns < 2^24
  // Bit g (< 4) of patterns 2c, 2c+1 and 2c+8, 2c+9 of an m-tile: the gradient's b^T operand.
  auto pm1 = [](uint32_t p, int j) { return ((p >> j) & 1u) ? 0x3C00u : 0xBC00u; };
  const uint32_t lo_bits_a = pm1(2 * c, g & 3) | (pm1(2 * c + 1, g & 3) << 16);
  const uint32_t lo_bits_b = pm1(2 * c + 8, g & 3) | (pm1(2 * c + 9, g & 3) << 16);
  for (int tile = range.begin; tile < range.end; ++tile) {
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
      // l = relu(z) . r on tensor cores.
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
    const float e = ws.template add<true, true>(a, n, l_raw, my_k, inside);
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
            mma16816(ws.gw[kb][nt], ab, qb[nt][0], qb[nt][1]);
            if (kSplit) mma16816(ws.gw[kb][nt], ab, qbl[nt][0], qbl[nt][1]);
          }
        }
      }
    }
  }
  finish_cta<NT, KB, kGrad>(a, smem, n, slice, ws,
                            [&](int i, int j) { return load_f(w, int64_t(i) * bits + j); });
}

template <typename T, int NT, int KB, bool kSplit, bool kGrad>
void launch_bruteforce_typed(const KernelArgs& ka, int64_t grid, cudaStream_t stream) {
  launch_sick_kernel(sick_bruteforce_kernel<T, NT, KB, kSplit, kGrad>, ka, grid,
                     sick_bruteforce_smem(NT, KB), stream);
}

}  // namespace

size_t sick_bruteforce_smem(int nt, int kb) { return merge_floats(nt, kb) * sizeof(float); }

void launch_sick_bruteforce(const KernelArgs& ka, DType dtype, int nt, int kb, bool split,
                            bool grad, int64_t grid, cudaStream_t stream) {
  dispatch_float(dtype, "sick", [&](auto zero) {
    using T = decltype(zero);
    dispatch_sick_shape<T, true>(
        nt, kb, split, grad, [&](auto nt_c, auto kb_c, auto split_c, auto grad_c) {
          launch_bruteforce_typed<T, nt_c(), kb_c(), split_c(), grad_c()>(ka, grid, stream);
        });
  });
}

}  // namespace bg::cuda::sick

namespace bg::cuda {

using sick::KernelArgs;
using sick::kTile;

void sick_forward(const SickArgs& args, Scratch& scratch, StreamHandle stream) {
  const int64_t n_ex = args.rows ? args.rows : args.w.shape[0], hid = args.w.shape[1];
  const int bits = args.code.bits;
  if (bits < 1 || bits > 24) kernel_fail("sick", "bits must be in [1, 24]");
  if (hid < 1 || hid > sick::kMaxHidden)
    kernel_fail("sick", "the CUDA kernels support hidden sizes 1.." +
                            std::to_string(sick::kMaxHidden) + ", got " + std::to_string(hid));
  if (args.precomputed && hid > sick::kMaxPrecomputedHidden)
    kernel_fail("sick", "the precomputed kernel supports hidden sizes 1.." +
                            std::to_string(sick::kMaxPrecomputedHidden));
  if (n_ex == 0) return;
  if (args.w.shape[0] == 0 || n_ex % args.w.shape[0])
    kernel_fail("sick", "rows must be a multiple of W's rows");
  // 8-wide hidden tiles in powers of two from 4: the instantiated shapes.
  const int nt = hid <= 32 ? 4 : hid <= 64 ? 8 : hid <= 128 ? 16 : 32, kb = bits <= 16 ? 1 : 2;
  const bool grad = args.outputs & kSickGrad;
  // Fixed by the shape alone: about 1024 CTAs of work for small batches, one slice per example
  // for large ones, and at least 64 tiles per slice. An example's sums follow its slices, so
  // batch invariance (one_slice) takes one slice whatever N.
  const int64_t tiles = ((int64_t(1) << bits) + kTile - 1) / kTile;
  const int64_t slices =
      args.one_slice
          ? 1
          : std::max<int64_t>(1, std::min<int64_t>((1024 + n_ex - 1) / n_ex, tiles / 64));
  KernelArgs ka{};
  ka.w = args.w.data;
  ka.r = args.r.data;
  ka.lo = static_cast<const int64_t*>(args.lo.data);
  ka.hi = static_cast<const int64_t*>(args.hi.data);
  ka.n_ex = n_ex;
  ka.w_rows = args.w.shape[0];
  ka.hid = hid;
  ka.slices = slices;
  ka.code = args.code;
  ka.outputs = args.outputs;
  ka.seed = args.seed;
  ka.wtype = args.w.dtype;
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
    // Partials per (example, slice); the last CTA of an example merges them into the outputs.
    if (n_ex > sick::kMaxSlicedExamples) kernel_fail("sick", "slice counters overflow");
    ka.logz = static_cast<float*>(args.logz.data);
    ka.out_m = static_cast<float*>(args.m.data);
    ka.out_s = static_cast<float*>(args.s.data);
    if (grad) {
      ka.out_gr = static_cast<float*>(args.gr.data);
      ka.out_gw = static_cast<float*>(args.gw.data);
    }
    if (stats) ka.out_stats = static_cast<float*>(args.stats.data);
    if (sample) ka.out_sample = static_cast<int64_t*>(args.sample.data);
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
  // f32/bf16 weights keep ~22 bits via hi + lo halves unless fp16 compute was asked for.
  const bool split = args.w.dtype != DType::f16 && !args.half_compute;
  if (args.precomputed)
    sick::launch_sick_precomputed(ka, nt, kb, split, grad, grid, s);
  else
    sick::launch_sick_bruteforce(ka, args.w.dtype, nt, kb, split, grad, grid, s);
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
