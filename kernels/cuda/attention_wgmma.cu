// attention_wgmma.cu: the fused causal attention on Hopper's warpgroup MMA (wgmma, sm_90a), for
// bf16 q, k, v whose rows start 16-byte aligned. Tiles, loop order and per-thread registers are
// attention.cu's: a block is one warpgroup (4 warps, 16 rows of a 64-row tile each), and the
// softmax, dropout and stores are the shared ones (attention_common.cuh). The products read
// their operands from 128-byte-swizzled shared tiles through wgmma descriptors, 64 x 64 x 16 per
// instruction for the whole warpgroup, instead of per-warp ldmatrix + mma.sync; the second
// product of each pair takes its A operand (P or dS) from registers.
//
// The dK/dV kernel computes the transposed tile, keys as rows: S^T = K Q^T and dP^T = V dY^T.
// P^T and dS^T are then already the register operands of dV += P^T dY and dK += dS^T Q, so
// nothing is staged through shared memory (the portable kernel stashes P and dS there).
//
// Deterministic as the portable kernels are: each output element is written once, by one
// thread, after a loop in a fixed order; no atomics. The 16-deep steps of every product run in
// the portable kernels' order, P and dS are rounded to bf16 where they round them, and Hopper's
// tensor cores sum a step alike for wgmma and mma.sync: the bits are the portable kernels'.
#include "attention_common.cuh"
#include "cp_async.cuh"
#include "wgmma.cuh"

namespace bg::cuda::attn {
namespace {

constexpr int kTileElems = kTile * kHeadDim;  // a tile: 64 rows of 128 bytes, no padding
constexpr int kTileBytes = kTileElems * 2;
constexpr int kBlocksPerSm = 3;  // backward register cap, as the portable kernels'
using wgmma::kStepAcrossRows;
using wgmma::kStepAlongRows;
using wgmma::tile_desc;

constexpr int smem_bytes(int tiles, int extra = 0) {
  return tiles * kTileBytes + extra + wgmma::kAlign;
}

__device__ __forceinline__ bf16* aligned_tiles(unsigned char* raw) {
  return reinterpret_cast<bf16*>(wgmma::aligned(raw));
}

// Rows t0..t0+63 of one head into a swizzled tile with cp.async; rows past T are zero-filled.
__device__ __forceinline__ void copy_tile(bf16* tile, const HeadsView<const bf16>& src, int b,
                                          int h, int t0, int t) {
  for (int i = threadIdx.x; i < kTile * 8; i += kThreads) {
    const int r = i >> 3, c = i & 7;
    const bool inside = t0 + r < t;
    mma::cp_async16(
        mma::smem_addr(reinterpret_cast<unsigned char*>(tile) + wgmma::swizzled_byte(r, c)),
        src.row(b, h, inside ? t0 + r : 0) + 8 * c, inside);
  }
}

__device__ __forceinline__ void fence_regs(float d[8][4]) { wgmma::fence_regs<32>(&d[0][0]); }
__device__ __forceinline__ void fence_regs(uint32_t a[4][4]) { wgmma::fence_regs<16>(&a[0][0]); }

// The accumulator operands of an m64n64 wgmma: this thread's 32 f32 values, %0..%31.
#define BG_WGMMA_D_REGS                                                                         \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
#define BG_WGMMA_D_OPERANDS(d)                                                                  \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),     \
      "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
      "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), \
      "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
      "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), \
      "+f"(d[7][2]), "+f"(d[7][3])

// d (the warpgroup's 64 x 64 f32 tile, this thread's share) += A B over 16 of the depth, A and B
// read through descriptors. kTransB 0: B's tile holds B^T (rows of n, K-major); 1: B itself
// (rows of k, MN-major).
template <int kTransB>
__device__ __forceinline__ void wgmma_ss(float d[8][4], uint64_t a, uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " BG_WGMMA_D_REGS
               "%32, %33, 1, 1, 1, 0, %34;\n"
               : BG_WGMMA_D_OPERANDS(d)
               : "l"(a), "l"(b), "n"(kTransB));
}
// The same with A (16 rows per warp x 16 deep, bf16) from registers, in mma.sync's A layout.
template <int kTransB>
__device__ __forceinline__ void wgmma_rs(float d[8][4], const uint32_t a[4], uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " BG_WGMMA_D_REGS
               "{%32, %33, %34, %35}, %36, 1, 1, 1, %37;\n"
               : BG_WGMMA_D_OPERANDS(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(kTransB));
}

// d = A B^T over the head dim: both tiles hold rows of 64 (q k^T, dy v^T, k q^T, v dy^T).
__device__ __forceinline__ void product_abt(float d[8][4], uint64_t a, uint64_t b) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) wgmma_ss<0>(d, a + kk * kStepAlongRows, b + kk * kStepAlongRows);
}
// d += A (registers, 64 deep) B, B's tile holding its 64 rows of depth (P V, dS K, P^T dy, ...).
__device__ __forceinline__ void product_rb(float d[8][4], const uint32_t a[4][4], uint64_t b) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) wgmma_rs<1>(d, a[kk], b + kk * kStepAcrossRows);
}

// Starts copying tile `next` of a source pair into buffer `buffer` of (a, b), if there is one,
// and waits for the tile before it; a barrier then publishes the landed tiles to every warp and
// to wgmma.
__device__ __forceinline__ void pipeline_step(bf16* a, bf16* b, const HeadsView<const bf16>& src_a,
                                              const HeadsView<const bf16>& src_b, int batch,
                                              int head, bool more, int next, int buffer, int t) {
  __syncthreads();  // every warp's products on the buffers about to be overwritten are done
  if (more) {
    copy_tile(a + buffer * kTileElems, src_a, batch, head, next * kTile, t);
    copy_tile(b + buffer * kTileElems, src_b, batch, head, next * kTile, t);
    mma::cp_async_commit();
    mma::cp_async_wait<1>();
  } else {
    mma::cp_async_wait<0>();
  }
  wgmma::fence_proxy_async();
  __syncthreads();
}

__global__ void __launch_bounds__(kThreads)
    forward_kernel(HeadsView<bf16> y, float* lse, HeadsView<const bf16> q, HeadsView<const bf16> k,
                   HeadsView<const bf16> v, AttnShape s) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  s.drop.resolve_shift();
  extern __shared__ unsigned char smem_raw[];
  bf16* sq = aligned_tiles(smem_raw);
  bf16 *sk = sq + kTileElems, *sv = sk + 2 * kTileElems;  // two buffers each
  const int qt = gridDim.x - 1 - blockIdx.x;              // longest rows first
  const int bh = blockIdx.y, b = bh / s.heads, h = bh % s.heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int r0 = qt * kTile + warp * 16 + (lane >> 2);  // this thread's rows: r0, r0 + 8
  copy_tile(sq, q, b, h, qt * kTile, s.t);
  copy_tile(sk, k, b, h, 0, s.t);
  copy_tile(sv, v, b, h, 0, s.t);
  mma::cp_async_commit();
  const uint64_t q_desc = tile_desc(sq);
  float o[8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  zero(o);
  for (int kt = 0; kt <= qt; ++kt) {
    pipeline_step(sk, sv, k, v, b, h, kt < qt, kt + 1, (kt + 1) & 1, s.t);
    const int buf = (kt & 1) * kTileElems;
    float p[8][4];
    zero(p);
    fence_regs(p);
    wgmma::fence();
    product_abt(p, q_desc, tile_desc(sk + buf));
    wgmma::commit();
    wgmma::wait_all();
    fence_regs(p);
    softmax_step(p, o, m, l, s, bh, r0, kt, kt == qt, lane);
    uint32_t pa[4][4];
    acc_to_a(pa, p);
    fence_regs(pa);
    fence_regs(o);
    wgmma::fence();
    product_rb(o, pa, tile_desc(sv + buf));
    wgmma::commit();
    wgmma::wait_all();
    fence_regs(o);
  }
  finish_forward(y, lse, o, m, l, bh, b, h, r0, s.t, lane);
#else
  __trap();  // launched only on compute capability 9.0 from sm_90a code
#endif
}

__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    dq_kernel(HeadsView<bf16> dq, HeadsView<const bf16> q, HeadsView<const bf16> k,
              HeadsView<const bf16> v, HeadsView<const bf16> dy, const float* lse,
              const float* delta, AttnShape s) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  s.drop.resolve_shift();
  extern __shared__ unsigned char smem_raw[];
  bf16* sq = aligned_tiles(smem_raw);
  bf16 *sg = sq + kTileElems, *sk = sg + kTileElems, *sv = sk + 2 * kTileElems;
  const int qt = gridDim.x - 1 - blockIdx.x;
  const int bh = blockIdx.y, b = bh / s.heads, h = bh % s.heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int r0 = qt * kTile + warp * 16 + (lane >> 2);
  copy_tile(sq, q, b, h, qt * kTile, s.t);
  copy_tile(sg, dy, b, h, qt * kTile, s.t);
  copy_tile(sk, k, b, h, 0, s.t);
  copy_tile(sv, v, b, h, 0, s.t);
  mma::cp_async_commit();
  float lse2[2], dl[2];
  row_stats(lse2, dl, lse, delta, bh, r0, s.t);
  const uint64_t q_desc = tile_desc(sq), g_desc = tile_desc(sg);
  float acc[8][4];
  zero(acc);
  for (int kt = 0; kt <= qt; ++kt) {
    pipeline_step(sk, sv, k, v, b, h, kt < qt, kt + 1, (kt + 1) & 1, s.t);
    const int buf = (kt & 1) * kTileElems;
    float p[8][4], ds[8][4];
    zero(p);
    zero(ds);
    fence_regs(p);
    fence_regs(ds);
    wgmma::fence();
    product_abt(p, q_desc, tile_desc(sk + buf));   // scores
    product_abt(ds, g_desc, tile_desc(sv + buf));  // dy v^T
    wgmma::commit();
    wgmma::wait_all();
    fence_regs(p);
    fence_regs(ds);
    probs_and_grads(p, ds, lse2, dl, bh, r0, kt, kt == qt, s, lane);
    uint32_t dsa[4][4];
    acc_to_a(dsa, ds);
    fence_regs(dsa);
    fence_regs(acc);
    wgmma::fence();
    product_rb(acc, dsa, tile_desc(sk + buf));  // dS K
    wgmma::commit();
    wgmma::wait_all();
    fence_regs(acc);
  }
  store_rows(dq, b, h, r0, s.t, acc, s.scale, s.scale, lane);
#else
  __trap();
#endif
}

// Query tile qt's softmax statistics, one per thread: lse in base 2 (+inf past T, so P = 0)
// for threads 0..63, delta (0 past T) for 64..127, as laid out in shared memory.
__device__ __forceinline__ float query_stat(const float* lse, const float* delta, int bh, int qt,
                                            int t) {
  const int col = qt * kTile + (threadIdx.x & 63);
  if (threadIdx.x < 64) return col < t ? lse[int64_t(bh) * t + col] * kLog2e : INFINITY;
  return col < t ? delta[int64_t(bh) * t + col] : 0.f;
}

// The transposed tile's elementwise step: st (S^T, this thread's key rows key0 and key0 + 8
// against the 64 queries of tile qt) becomes P^T * z, dpt (dP^T = v dy^T) becomes dS^T. The
// query's statistics come from shared memory; dropout asks the mask for (query, key) as the
// other kernels do, one Philox call covering both key rows.
__device__ __forceinline__ void probs_and_grads_transposed(float st[8][4], float dpt[8][4],
                                                           const float* lse2, const float* dl,
                                                           int bh, int key0, int qt, bool diagonal,
                                                           const AttnShape& s, int lane) {
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int col = 8 * n + 2 * (lane & 3) + e, query = qt * kTile + col;
      float z[2] = {1.f, 1.f};
      if (s.drop.active()) {
        const AttentionDropout& d = s.drop;
        const Philox4 r =
            philox4x32(attention_dropout_counter(d, int64_t(bh) * s.t + query, s.t, key0), d.seed);
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const int key = key0 + 8 * i;
          const uint32_t word = r.v[(key % 32) / 8];
          z[i] = ((key & 1) ? word >> 16 : word & 0xFFFFu) < d.keep_threshold ? s.keep_scale : 0.f;
        }
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        float& x = st[n][2 * i + e];
        x = diagonal && key0 + 8 * i > query ? 0.f : exp2f(x * s.scale_log2 - lse2[col]);
        float& g = dpt[n][2 * i + e];
        g = x * (g * z[i] - dl[col]);
        x *= z[i];
      }
    }
}

__global__ void __launch_bounds__(kThreads, kBlocksPerSm)
    dkdv_kernel(HeadsView<bf16> dk, HeadsView<bf16> dv, HeadsView<const bf16> q,
                HeadsView<const bf16> k, HeadsView<const bf16> v, HeadsView<const bf16> dy,
                const float* lse, const float* delta, AttnShape s) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  s.drop.resolve_shift();
  extern __shared__ unsigned char smem_raw[];
  bf16* sk = aligned_tiles(smem_raw);
  bf16 *sv = sk + kTileElems, *sq = sv + kTileElems, *sg = sq + 2 * kTileElems;
  float* stats = reinterpret_cast<float*>(sg + 2 * kTileElems);  // [buffer][lse2, delta][64]
  const int tiles = gridDim.x, kt = blockIdx.x;  // the shortest loops (late keys) last
  const int bh = blockIdx.y, b = bh / s.heads, h = bh % s.heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int key0 = kt * kTile + warp * 16 + (lane >> 2);  // this thread's keys: key0, key0 + 8
  copy_tile(sk, k, b, h, kt * kTile, s.t);
  copy_tile(sv, v, b, h, kt * kTile, s.t);
  copy_tile(sq, q, b, h, kt * kTile, s.t);
  copy_tile(sg, dy, b, h, kt * kTile, s.t);
  mma::cp_async_commit();
  stats[threadIdx.x] = query_stat(lse, delta, bh, kt, s.t);
  const uint64_t k_desc = tile_desc(sk), v_desc = tile_desc(sv);
  float acc_k[8][4], acc_v[8][4];
  zero(acc_k);
  zero(acc_v);
  for (int qt = kt; qt < tiles; ++qt) {
    const int local = qt - kt;  // buffers alternate from the first query tile, kt
    pipeline_step(sq, sg, q, dy, b, h, qt + 1 < tiles, qt + 1, (local + 1) & 1, s.t);
    const float next_stat =
        qt + 1 < tiles ? query_stat(lse, delta, bh, qt + 1, s.t) : 0.f;  // lands during the math
    const int buf = (local & 1) * kTileElems;
    const float* tile_stats = stats + (local & 1) * 2 * kTile;
    float st[8][4], dpt[8][4];
    zero(st);
    zero(dpt);
    fence_regs(st);
    fence_regs(dpt);
    wgmma::fence();
    product_abt(st, k_desc, tile_desc(sq + buf));   // S^T = k q^T
    product_abt(dpt, v_desc, tile_desc(sg + buf));  // dP^T = v dy^T
    wgmma::commit();
    wgmma::wait_all();
    fence_regs(st);
    fence_regs(dpt);
    probs_and_grads_transposed(st, dpt, tile_stats, tile_stats + kTile, bh, key0, qt, qt == kt, s,
                               lane);
    uint32_t pa[4][4], dsa[4][4];
    acc_to_a(pa, st);
    acc_to_a(dsa, dpt);
    fence_regs(pa);
    fence_regs(dsa);
    fence_regs(acc_v);
    fence_regs(acc_k);
    wgmma::fence();
    product_rb(acc_v, pa, tile_desc(sg + buf));   // dV += P^T dy
    product_rb(acc_k, dsa, tile_desc(sq + buf));  // dK += dS^T q
    wgmma::commit();
    wgmma::wait_all();
    fence_regs(acc_v);
    fence_regs(acc_k);
    if (qt + 1 < tiles) stats[((local + 1) & 1) * 2 * kTile + threadIdx.x] = next_stat;
  }
  store_rows(dk, b, h, key0, s.t, acc_k, s.scale, s.scale, lane);
  store_rows(dv, b, h, key0, s.t, acc_v, 1.f, 1.f, lane);
#else
  __trap();
#endif
}

}  // namespace

void forward_wgmma(const HeadsView<bf16>& y, float* lse, const HeadsView<const bf16>& q,
                   const HeadsView<const bf16>& k, const HeadsView<const bf16>& v,
                   const AttnShape& s, int heads_total, cudaStream_t stream) {
  constexpr int smem = smem_bytes(5);  // q, and k and v in two buffers each
  const dim3 grid(unsigned((s.t + kTile - 1) / kTile), unsigned(heads_total));
  forward_kernel<<<grid, kThreads, smem, stream>>>(y, lse, q, k, v, s);
}

void backward_wgmma(const HeadsView<bf16>& dq, const HeadsView<bf16>& dk, const HeadsView<bf16>& dv,
                    const HeadsView<const bf16>& q, const HeadsView<const bf16>& k,
                    const HeadsView<const bf16>& v, const HeadsView<const bf16>& dy,
                    const float* lse, const float* delta, const AttnShape& s, int heads_total,
                    cudaStream_t stream) {
  const dim3 grid(unsigned((s.t + kTile - 1) / kTile), unsigned(heads_total));
  constexpr int dq_smem = smem_bytes(6);  // q, dy, and k and v in two buffers each
  allow_shared_memory(dq_kernel, dq_smem);
  dq_kernel<<<grid, kThreads, dq_smem, stream>>>(dq, q, k, v, dy, lse, delta, s);
  constexpr int dkdv_smem = smem_bytes(6, 2 * 2 * kTile * int(sizeof(float)));  // + statistics
  allow_shared_memory(dkdv_kernel, dkdv_smem);
  dkdv_kernel<<<grid, kThreads, dkdv_smem, stream>>>(dk, dv, q, k, v, dy, lse, delta, s);
}

}  // namespace bg::cuda::attn
