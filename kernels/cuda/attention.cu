// attention.cu: fused causal attention, flash-style (Dao, "FlashAttention-2", 2023): the T x T
// scores never reach memory. The portable kernels (sm_80 and later): a block of 4 warps owns a
// tile of 64 rows; each warp owns 16 of them and runs mma.sync m16n8k16 (bf16 operands, f32
// accumulation) on tiles staged in shared memory, converted to bf16 as they are loaded (so
// q/k/v may be f32, f16 or bf16 and strided). On a Hopper GPU, bf16 rows that start 16-byte
// aligned go to the wgmma kernels of attention_wgmma.cu instead (same tiles, same order).
//
// forward:  per query tile, over key tiles 0..diagonal: online softmax (running max and sum in
//           f32, base-2 exponentials with log2(e) folded into the scale), P (dropped) @ V.
// backward: delta = rowsum(dy * y); dQ per query tile (recomputes P, dP = dy V^T); dK/dV per
//           key tile (recomputes P and dP for each query tile, stages P and dS in shared
//           memory for the transposed products). Each output element is written by exactly one
//           thread after a fixed-order loop: no atomics, bit-identical reruns.
#include <type_traits>

#include "attention_common.cuh"
#include "cuda_kernels.h"
#include "device_runtime.h"

namespace bg::cuda {
namespace {

using namespace attn;

constexpr int kLd = kTile + 8;  // shared row stride in bf16: +16 bytes keeps ldmatrix conflict-free
constexpr int kTileElems = kTile * kLd;
// Backward kernels capped at 170 registers so three blocks share an SM (248 without the cap:
// two); ptxas spills a few words to L1 for it.
constexpr int kBackwardBlocksPerSm = 3;

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const bf16* p) {
  const uint32_t a = uint32_t(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const bf16* p) {
  const uint32_t a = uint32_t(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// c (16x8, f32) += a (16x16 bf16, row) * b (16x8 bf16, col).
__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four elements of a row as bf16, from any of the three input types.
__device__ __forceinline__ uint2 load4_bf16(const float* p) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  return make_uint2(pack_bf16(v.x, v.y), pack_bf16(v.z, v.w));
}
__device__ __forceinline__ uint2 load4_bf16(const bf16* p) {
  return *reinterpret_cast<const uint2*>(p);
}
__device__ __forceinline__ uint2 load4_bf16(const __half* p) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
  const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
  return make_uint2(pack_bf16(a.x, a.y), pack_bf16(b.x, b.y));
}

// Rows t0..t0+63 of one head into shared memory as bf16; rows past T become zeros.
template <typename T>
__device__ void load_tile(bf16* tile, const HeadsView<const T>& src, int b, int h, int t0, int t) {
  for (int i = threadIdx.x; i < kTile * (kHeadDim / 4); i += kThreads) {
    const int r = i / (kHeadDim / 4), c = (i % (kHeadDim / 4)) * 4;
    const uint2 v = t0 + r < t ? load4_bf16(src.row(b, h, t0 + r) + c) : make_uint2(0, 0);
    *reinterpret_cast<uint2*>(tile + r * kLd + c) = v;
  }
}

// Asks L2 for rows t0..t0+63 of one head (a tile the loop will load next), so the synchronous
// loads find them on chip.
template <typename T>
__device__ void prefetch_tile(const HeadsView<const T>& src, int b, int h, int t0, int t) {
  constexpr int kLines = kHeadDim * int(sizeof(T)) / 128 > 0 ? kHeadDim * int(sizeof(T)) / 128 : 1;
  for (int i = threadIdx.x; i < kTile * kLines; i += kThreads) {
    const int r = i / kLines;
    if (t0 + r >= t) break;
    const T* p = src.row(b, h, t0 + r) + (i % kLines) * (128 / int(sizeof(T)));
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
  }
}

// Rows t0..t0+63 of one bf16 head straight into shared memory with cp.async (16 bytes per copy,
// rows past T zero-filled); the copies land once cp.async.wait_group says so.
__device__ void copy_tile_async(bf16* tile, const HeadsView<const bf16>& src, int b, int h, int t0,
                                int t) {
  constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per row
  for (int i = threadIdx.x; i < kTile * kChunks; i += kThreads) {
    const int r = i / kChunks, c = (i % kChunks) * 8;
    const bool inside = t0 + r < t;
    const bf16* from = src.row(b, h, inside ? t0 + r : 0) + c;
    const uint32_t to = uint32_t(__cvta_generic_to_shared(tile + r * kLd + c));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(from),
                 "r"(inside ? 16 : 0));
  }
}

// How tiles of two same-shaped sources (k and v, or q and dy) reach shared memory: issue(i + 1)
// starts the next tile before the loop computes on tile i, land(i) makes tile i readable (after a
// __syncthreads). bf16 inputs whose rows are 16-byte aligned copy asynchronously into two
// buffers (issue copies, land waits); other inputs are converted by synchronous loads into one
// buffer in land(), and issue() only asks L2 for them (a second buffer would only cost
// occupancy and L1).
template <typename T, bool kAsync>
struct TilePipe {
  static_assert(!kAsync || std::is_same<T, bf16>::value, "cp.async copies bf16 rows as they are");
  static constexpr int kBuffers = kAsync ? 2 : 1;
  static constexpr int kTiles = 2 * kBuffers;  // shared tiles it owns
  HeadsView<const T> src_a, src_b;
  int batch, head, t;
  bf16* smem;  // kTiles * kTileElems

  __device__ bf16* a(int tile) const { return smem + (tile % kBuffers) * kTileElems; }
  __device__ bf16* b(int tile) const { return smem + (kBuffers + tile % kBuffers) * kTileElems; }

  __device__ void issue(int tile) const {
    if constexpr (kAsync) {
      copy_tile_async(a(tile), src_a, batch, head, tile * kTile, t);
      copy_tile_async(b(tile), src_b, batch, head, tile * kTile, t);
      asm volatile("cp.async.commit_group;\n" ::);
    } else {
      prefetch_tile(src_a, batch, head, tile * kTile, t);
      prefetch_tile(src_b, batch, head, tile * kTile, t);
    }
  }
  // more_issued: whether a later tile was issued after this one (it may stay in flight).
  __device__ void land(int tile, bool more_issued) const {
    if constexpr (kAsync) {
      if (more_issued)
        asm volatile("cp.async.wait_group 1;\n" ::);
      else
        asm volatile("cp.async.wait_group 0;\n" ::);
    } else {
      load_tile(a(tile), src_a, batch, head, tile * kTile, t);
      load_tile(b(tile), src_b, batch, head, tile * kTile, t);
    }
  }
};

// A fragments (16 rows from m0, all 64 columns) of a row-major [m][k] tile.
__device__ __forceinline__ void load_a(uint32_t a[4][4], const bf16* tile, int m0, int lane) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
    ldmatrix_x4(a[kk], tile + (m0 + (lane & 15)) * kLd + kk * 16 + (lane >> 4) * 8);
}

// acc (16 x 64) += A (16 x 64, fragments) * B, the tile holding B as [k][n] rows (kBT false)
// or as [n][k] rows, i.e. B^T (kBT true: q k^T, dy v^T). One x4 ldmatrix gives the b0/b1
// registers of two 8-column n tiles for one 16-deep k step.
template <bool kBT>
__device__ __forceinline__ void mma_tile(float acc[8][4], const uint32_t a[4][4], const bf16* tile,
                                         int lane) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      uint32_t r[4];
      if (kBT)
        ldmatrix_x4(r, tile + (np * 16 + (lane >> 4) * 8 + (lane & 7)) * kLd + kk * 16 +
                           ((lane >> 3) & 1) * 8);
      else
        ldmatrix_x4_trans(r, tile + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * kLd + np * 16 +
                                 (lane >> 4) * 8);
      mma(acc[2 * np], a[kk], r[0], r[1]);
      mma(acc[2 * np + 1], a[kk], r[2], r[3]);
    }
}

template <typename T, bool kAsync>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(HeadsView<T> y, float* lse, HeadsView<const T> q, HeadsView<const T> k,
                             HeadsView<const T> v, AttnShape s) {
  s.drop.resolve_shift();  // the graph replay's counters (Generator::device_shift)
  using Pipe = TilePipe<T, kAsync>;
  __shared__ __align__(16) bf16 sq[kTileElems], pipe_tiles[Pipe::kTiles * kTileElems];
  const int qt = gridDim.x - 1 - blockIdx.x;  // longest rows first
  const int bh = blockIdx.y, b = bh / s.heads, h = bh % s.heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int r0 = qt * kTile + warp * 16 + (lane >> 2);  // this thread's rows: r0, r0 + 8
  const Pipe kv{k, v, b, h, s.t, pipe_tiles};
  kv.issue(0);
  load_tile(sq, q, b, h, qt * kTile, s.t);
  __syncthreads();
  uint32_t qa[4][4];
  load_a(qa, sq, warp * 16, lane);
  float o[8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  zero(o);
  for (int kt = 0; kt <= qt; ++kt) {
    const bf16 *sk = kv.a(kt), *sv = kv.b(kt);
    __syncthreads();  // every warp is done with the buffer the next tile overwrites
    if (kt < qt) kv.issue(kt + 1);
    kv.land(kt, kt < qt);
    __syncthreads();
    float p[8][4];
    zero(p);
    mma_tile<true>(p, qa, sk, lane);
    softmax_step(p, o, m, l, s, bh, r0, kt, kt == qt, lane);
    uint32_t pa[4][4];
    acc_to_a(pa, p);
    mma_tile<false>(o, pa, sv, lane);
  }
  finish_forward(y, lse, o, m, l, bh, b, h, r0, s.t, lane);
}

// delta[row] = sum_d dy * y, one warp per row (64 = 2 values per lane). dy is rounded to bf16
// as the dP = dy v^T products see it, so delta matches sum_j P_j dP_j to f32 rounding (at T = 1
// dq and dk then come out ~0 as they should, not bf16 noise).
template <typename T>
__global__ void attention_delta_kernel(float* delta, HeadsView<const T> y, HeadsView<const T> dy,
                                       int heads, int t, int rows) {
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (row >= rows) return;
  const int bh = row / t, b = bh / heads, h = bh % heads, r = row % t;
  const T* a = y.row(b, h, r);
  const T* g = dy.row(b, h, r);
  auto rounded = [](T x) { return __bfloat162float(__float2bfloat16_rn(to_float(x))); };
  float sum = to_float(a[lane]) * rounded(g[lane]) + to_float(a[lane + 32]) * rounded(g[lane + 32]);
  sum = warp_sum(sum);
  if (lane == 0) delta[row] = sum;
}

// Scores (p) and dy v^T (ds) of this thread's 16 x 64 tile of (query rows r0/r0+8, key tile
// kt), the key and value tiles in shared memory, turned into P * z and dS (probs_and_grads).
__device__ __forceinline__ void mma_probs_and_grads(float p[8][4], float ds[8][4],
                                                    const uint32_t qa[4][4],
                                                    const uint32_t ga[4][4], const bf16* sk,
                                                    const bf16* sv, const float lse2[2],
                                                    const float delta[2], int bh, int r0, int kt,
                                                    bool diagonal, const AttnShape& s, int lane) {
  zero(p);
  zero(ds);
  mma_tile<true>(p, qa, sk, lane);   // scores
  mma_tile<true>(ds, ga, sv, lane);  // dy v^T
  probs_and_grads(p, ds, lse2, delta, bh, r0, kt, diagonal, s, lane);
}

// Shared bytes of the backward kernels: q and dy tiles plus the pipe (dQ); k, v, P and dS tiles
// plus the pipe (dK/dV). Above 48 KB they need the opt-in attribute.
template <bool kAsync>
constexpr int dq_smem_bytes() {
  return (2 + TilePipe<bf16, kAsync>::kTiles) * kTileElems * int(sizeof(bf16));
}
template <bool kAsync>
constexpr int dkdv_smem_bytes() {
  return (4 + TilePipe<bf16, kAsync>::kTiles) * kTileElems * int(sizeof(bf16));
}

template <typename T, bool kAsync>
__global__ void __launch_bounds__(kThreads, kBackwardBlocksPerSm)
    attention_dq_kernel(HeadsView<T> dq, HeadsView<const T> q, HeadsView<const T> k,
                        HeadsView<const T> v, HeadsView<const T> dy, const float* lse,
                        const float* delta, AttnShape s) {
  s.drop.resolve_shift();  // the graph replay's counters (Generator::device_shift)
  extern __shared__ __align__(16) bf16 smem[];
  bf16 *sq = smem, *sg = sq + kTileElems;
  const int qt = gridDim.x - 1 - blockIdx.x;
  const int bh = blockIdx.y, b = bh / s.heads, h = bh % s.heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int r0 = qt * kTile + warp * 16 + (lane >> 2);
  const TilePipe<T, kAsync> kv{k, v, b, h, s.t, sg + kTileElems};
  kv.issue(0);
  load_tile(sq, q, b, h, qt * kTile, s.t);
  load_tile(sg, dy, b, h, qt * kTile, s.t);
  __syncthreads();
  uint32_t qa[4][4], ga[4][4];
  load_a(qa, sq, warp * 16, lane);
  load_a(ga, sg, warp * 16, lane);
  float lse2[2], dl[2];
  row_stats(lse2, dl, lse, delta, bh, r0, s.t);
  float acc[8][4];
  zero(acc);
  for (int kt = 0; kt <= qt; ++kt) {
    const bf16 *sk = kv.a(kt), *sv = kv.b(kt);
    __syncthreads();
    if (kt < qt) kv.issue(kt + 1);
    kv.land(kt, kt < qt);
    __syncthreads();
    float p[8][4], ds[8][4];
    mma_probs_and_grads(p, ds, qa, ga, sk, sv, lse2, dl, bh, r0, kt, kt == qt, s, lane);
    uint32_t dsa[4][4];
    acc_to_a(dsa, ds);
    mma_tile<false>(acc, dsa, sk, lane);  // dS K
  }
  store_rows(dq, b, h, r0, s.t, acc, s.scale, s.scale, lane);
}

// Thread's share of a 16 x 64 accumulator tile into a [row][col] bf16 shared tile.
__device__ __forceinline__ void stash(bf16* tile, int m0, const float acc[8][4], int lane) {
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int n = 0; n < 8; ++n)
      *reinterpret_cast<uint32_t*>(tile + (m0 + (lane >> 2) + 8 * i) * kLd + 8 * n +
                                   2 * (lane & 3)) = pack_bf16(acc[n][2 * i], acc[n][2 * i + 1]);
}

// acc (16 x 64) += X^T (rows m0.. of the transposed [k][m] tile x) * B ([k][n] tile b).
__device__ __forceinline__ void mma_atb(float acc[8][4], const bf16* x, int m0, const bf16* b,
                                        int lane) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    uint32_t a[4];
    ldmatrix_x4_trans(
        a, x + (kk * 16 + (lane >> 4) * 8 + (lane & 7)) * kLd + m0 + ((lane >> 3) & 1) * 8);
#pragma unroll
    for (int np = 0; np < 4; ++np) {
      uint32_t r[4];
      ldmatrix_x4_trans(
          r, b + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * kLd + np * 16 + (lane >> 4) * 8);
      mma(acc[2 * np], a, r[0], r[1]);
      mma(acc[2 * np + 1], a, r[2], r[3]);
    }
  }
}

template <typename T, bool kAsync>
__global__ void __launch_bounds__(kThreads, kBackwardBlocksPerSm)
    attention_dkdv_kernel(HeadsView<T> dk, HeadsView<T> dv, HeadsView<const T> q,
                          HeadsView<const T> k, HeadsView<const T> v, HeadsView<const T> dy,
                          const float* lse, const float* delta, AttnShape s) {
  s.drop.resolve_shift();  // the graph replay's counters (Generator::device_shift)
  extern __shared__ __align__(16) bf16 smem[];
  bf16 *sk = smem, *sv = sk + kTileElems, *sp = sv + kTileElems, *sds = sp + kTileElems;
  const int tiles = gridDim.x, kt = blockIdx.x;  // the shortest loops (late keys) last
  const int bh = blockIdx.y, b = bh / s.heads, h = bh % s.heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const TilePipe<T, kAsync> qg{q, dy, b, h, s.t, sds + kTileElems};
  qg.issue(kt);
  load_tile(sk, k, b, h, kt * kTile, s.t);
  load_tile(sv, v, b, h, kt * kTile, s.t);
  float acc_k[8][4], acc_v[8][4];
  zero(acc_k);
  zero(acc_v);
  for (int qt = kt; qt < tiles; ++qt) {
    const bf16 *sq = qg.a(qt), *sg = qg.b(qt);
    const int r0 = qt * kTile + warp * 16 + (lane >> 2);
    float lse2[2], dl[2];
    row_stats(lse2, dl, lse, delta, bh, r0, s.t);  // in flight during the wait below
    __syncthreads();
    if (qt + 1 < tiles) qg.issue(qt + 1);
    qg.land(qt, qt + 1 < tiles);
    __syncthreads();
    // Phase 1: warp w computes P and dS for query rows 16w.. of the tile.
    uint32_t qa[4][4], ga[4][4];
    load_a(qa, sq, warp * 16, lane);
    load_a(ga, sg, warp * 16, lane);
    float p[8][4], ds[8][4];
    mma_probs_and_grads(p, ds, qa, ga, sk, sv, lse2, dl, bh, r0, kt, qt == kt, s, lane);
    stash(sp, warp * 16, p, lane);
    stash(sds, warp * 16, ds, lane);
    __syncthreads();
    // Phase 2: warp w accumulates key rows 16w.. : dV += (P z)^T dy, dK += dS^T q.
    mma_atb(acc_v, sp, warp * 16, sg, lane);
    mma_atb(acc_k, sds, warp * 16, sq, lane);
  }
  const int r0 = kt * kTile + warp * 16 + (lane >> 2);
  store_rows(dk, b, h, r0, s.t, acc_k, s.scale, s.scale, lane);
  store_rows(dv, b, h, r0, s.t, acc_v, 1.f, 1.f, lane);
}

void check_views(std::initializer_list<const KView*> views, const KView& q) {
  for (const KView* v : views) {
    if (v->ndim != 4 || v->strides[3] != 1)
      kernel_fail("attention", "views must be (B, H, T, D) with unit stride along D");
    for (int d = 0; d < 4; ++d)
      if (v->shape[d] != q.shape[d]) kernel_fail("attention", "views must share one shape");
    if (v->dtype != q.dtype) kernel_fail("attention", "views must share one dtype");
    // 4-element vector loads: every row must start 4-element aligned.
    const bool aligned = reinterpret_cast<uintptr_t>(v->data) % (4 * dtype_size(v->dtype)) == 0 &&
                         v->strides[0] % 4 == 0 && v->strides[1] % 4 == 0 && v->strides[2] % 4 == 0;
    if (!aligned) kernel_fail("attention", "rows must start at 4-element aligned addresses");
  }
  if (q.shape[3] != kHeadDim)
    kernel_fail("attention",
                "the CUDA kernel is built for head dim 64, got " + std::to_string(q.shape[3]));
  if (q.shape[2] >= (int64_t(1) << 24) || q.shape[0] * q.shape[1] >= 65536)
    kernel_fail("attention", "T must be < 2^24 and B * H < 65536");
}

// cp.async copies 16 bytes: bf16 views whose rows all start 16-byte aligned.
bool async_copyable(std::initializer_list<const KView*> views) {
  for (const KView* v : views) {
    if (v->dtype != DType::bf16 || reinterpret_cast<uintptr_t>(v->data) % 16 != 0) return false;
    for (int d = 0; d < 3; ++d)
      if (v->strides[d] % 8 != 0) return false;
  }
  return true;
}

// f, with the element type of the views and whether their tiles copy asynchronously.
template <typename F>
void dispatch_tiles(DType dtype, bool async, F&& f) {
  dispatch_float(dtype, "attention", [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same<T, bf16>::value) {
      if (async) return f(zero, std::true_type{});
    }
    f(zero, std::false_type{});
  });
}

// Whether bf16 rows that start 16-byte aligned go to the Hopper kernels.
bool runs_wgmma() { return kernel_family() == KernelFamily::best && hopper_kernels_available(); }

AttnShape make_shape(const KView& q, double scale, const AttentionDropout& drop) {
  return AttnShape{int(q.shape[1]), int(q.shape[2]),        float(scale) * kLog2e,
                   float(scale),    float(drop.keep_scale), drop};
}

}  // namespace

void attention_forward(const KView& y, const KView& lse, const KView& q, const KView& k,
                       const KView& v, double scale, const AttentionDropout& drop,
                       StreamHandle stream) {
  check_views({&y, &q, &k, &v}, q);
  if (lse.dtype != DType::f32 || !lse.contiguous()) kernel_fail("attention", "lse must be f32");
  if (q.numel() == 0) return;
  const AttnShape s = make_shape(q, scale, drop);
  const int heads_total = int(q.shape[0] * q.shape[1]);
  const bool async = async_copyable({&y, &q, &k, &v});
  if (async && runs_wgmma())
    return forward_wgmma(heads<bf16>(y), static_cast<float*>(lse.data), heads<const bf16>(q),
                         heads<const bf16>(k), heads<const bf16>(v), s, heads_total,
                         as_stream(stream));
  const dim3 grid(unsigned((s.t + kTile - 1) / kTile), unsigned(heads_total));
  dispatch_tiles(q.dtype, async, [&](auto zero, auto async) {
    using T = decltype(zero);
    attention_forward_kernel<T, decltype(async)::value><<<grid, kThreads, 0, as_stream(stream)>>>(
        heads<T>(y), static_cast<float*>(lse.data), heads<const T>(q), heads<const T>(k),
        heads<const T>(v), s);
  });
  BG_CUDA_LAUNCH_CHECK();
}

void attention_backward(const KView& dq, const KView& dk, const KView& dv, const KView& delta,
                        const KView& q, const KView& k, const KView& v, const KView& y,
                        const KView& dy, const KView& lse, double scale,
                        const AttentionDropout& drop, StreamHandle stream) {
  check_views({&dq, &dk, &dv, &q, &k, &v, &y, &dy}, q);
  if (lse.dtype != DType::f32 || delta.dtype != DType::f32)
    kernel_fail("attention", "lse and delta must be f32");
  if (q.numel() == 0) return;
  const AttnShape s = make_shape(q, scale, drop);
  const int rows = int(q.shape[0] * q.shape[1]) * s.t;
  const dim3 grid(unsigned((s.t + kTile - 1) / kTile), unsigned(q.shape[0] * q.shape[1]));
  const cudaStream_t st = as_stream(stream);
  float* delta_p = static_cast<float*>(delta.data);
  const float* lse_p = static_cast<const float*>(lse.data);
  const bool hopper = async_copyable({&dq, &dk, &dv, &q, &k, &v, &dy}) && runs_wgmma();
  dispatch_tiles(q.dtype, async_copyable({&q, &k, &v, &dy}), [&](auto zero, auto async) {
    using T = decltype(zero);
    constexpr bool kAsync = decltype(async)::value;
    attention_delta_kernel<T><<<unsigned((rows + 7) / 8), 256, 0, st>>>(
        delta_p, heads<const T>(y), heads<const T>(dy), s.heads, s.t, rows);
    if constexpr (kAsync) {
      if (hopper)
        return backward_wgmma(heads<bf16>(dq), heads<bf16>(dk), heads<bf16>(dv),
                              heads<const bf16>(q), heads<const bf16>(k), heads<const bf16>(v),
                              heads<const bf16>(dy), lse_p, delta_p, s,
                              int(q.shape[0] * q.shape[1]), st);
    }
    constexpr int dq_smem = dq_smem_bytes<kAsync>(), dkdv_smem = dkdv_smem_bytes<kAsync>();
    allow_shared_memory(attention_dq_kernel<T, kAsync>, dq_smem);
    attention_dq_kernel<T, kAsync>
        <<<grid, kThreads, dq_smem, st>>>(heads<T>(dq), heads<const T>(q), heads<const T>(k),
                                          heads<const T>(v), heads<const T>(dy), lse_p, delta_p, s);
    allow_shared_memory(attention_dkdv_kernel<T, kAsync>, dkdv_smem);
    attention_dkdv_kernel<T, kAsync><<<grid, kThreads, dkdv_smem, st>>>(
        heads<T>(dk), heads<T>(dv), heads<const T>(q), heads<const T>(k), heads<const T>(v),
        heads<const T>(dy), lse_p, delta_p, s);
  });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
