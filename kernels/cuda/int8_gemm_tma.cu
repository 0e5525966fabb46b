// int8_gemm_tma.cu: int8_linear's product on Hopper (sm_90a) fed by the tensor memory
// accelerator: the same exact integer product as int8_gemm.cu's mma.sync kernel, so the same
// bits, closer to the rate of Hopper's int8 tensor cores (docs/bitlinear.md, "Training speed").
//
// The shape of CUTLASS's warp-specialised persistent kernels. A block holds one SM (384 threads,
// about 225 KB of shared memory) and walks work items (t, t + gridDim.x / 2, ...) with the other
// block of its two-block cluster: 128 x 256 output tiles in two neighbouring 128-row bands that
// share their W_q tile. Warpgroup 0 is the producer: one thread issues, per 128 bytes of K, a TMA
// copy of the block's x_q tile (128 rows) and of half the W_q tile (128 of 256 rows, multicast
// into both blocks), K-major and 128-byte swizzled as wgmma reads them, into a ring of four
// stages paced by a full and an empty barrier per stage (a stage is refilled once the consumers
// of both blocks have given it back). It runs ahead across tiles, so the next tile's first
// stages load while the consumers finish this one's epilogue. Warpgroups 1 and 2 are the
// consumers: 64 rows each, one m64n256k32 s8 x s8 -> s32 wgmma per 32 bytes of K, one group of
// products kept in flight, a stage given back as soon as the products that read it retire.
// The producer hands its registers to the consumers (setmaxnreg), which hold 128 accumulators.
//
// The epilogue (ncu showed it, not the products, bounding the first version): each warp
// rescales its 16 rows, y = fma(float(acc) * step[m], beta, bias[n] or 0) rounded to O, plus
// the residual where there is one, into its own 16 staged rows, 256 bytes of columns a pass,
// then copies them out in 16-byte pieces. The rows' steps are read before the products and the
// residual is asked into L2 then, each bias pair is read once for two rows, and inside y (every
// tile but the edges) nothing is bounds-checked. Values and rounding are the mma.sync kernel's,
// bit for bit.
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda_kernels.h"
#include "int8_mma.cuh"
#include "tma.cuh"
#include "wgmma.cuh"
#include "wgmma_s8_ss.cuh"

namespace bg::cuda {
namespace {

constexpr int kBM = 128, kBN = 256, kBK = 128, kStages = 4;
// Two blocks of a cluster take the tiles of two neighbouring 128-row bands that share one W_q
// tile: each loads its own x_q tile and half of the W_q tile, written to both blocks at once
// (TMA multicast), so a block brings 256 rather than 384 rows a step from L2.
constexpr int kCluster = 2, kHalfRowsB = kBN / kCluster;
constexpr int kConsumers = 2, kThreads = 128 * (1 + kConsumers);
constexpr int kTileA = kBM * kBK, kStageBytes = (kBM + kBN) * kBK;  // bytes
// A consumer stages 64 rows (16 a warp) of 256 bytes at a time: 128 bf16 columns in each of two
// passes, or 64 f32 columns in each of four. Row r's 16-byte piece c sits at piece c ^ (r % 8),
// which spreads a warp's shared stores (4 lanes a row, 8 rows) over all banks without padding.
constexpr int kStagedRows = 64, kStagedRowBytes = 256, kStagedPitch = kStagedRowBytes;
constexpr int kStagingBytes = kStagedRows * kStagedPitch;
constexpr int kStagingOffset = kStages * kStageBytes;
constexpr int kBarrierOffset = kStagingOffset + kConsumers * kStagingBytes;
constexpr int kSmemBytes = kBarrierOffset + 2 * kStages * 8 + wgmma::kAlign;
constexpr int kAcc = kBN / 2;  // s32 accumulators a consumer thread holds
// Registers after the hand-over: the producer keeps 40, each consumer thread takes 232 (the SM's
// 64 K registers: 128 x 40 + 256 x 232 = 64,512).
constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;
// Hopper GPUs have 132 SMs; the grid is fixed rather than read from the device, so no launch
// depends on the GPU model (a GPU with fewer SMs runs the extra blocks after the first ones).
constexpr int kPersistentBlocks = 132;
static_assert(kPersistentBlocks % kCluster == 0, "whole clusters");
static_assert(kSmemBytes <= 227 * 1024, "one block an SM");

// Two neighbouring outputs of a staged row, in one shared store.
__device__ __forceinline__ void stage_pair(float* dst, float v0, float v1) {
  *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
}
__device__ __forceinline__ void stage_pair(__nv_bfloat16* dst, float v0, float v1) {
  *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(v0, v1);  // each as from_float
}

// One 16-byte piece of an output row from the staging, at the edges of y: a whole piece of a
// residual-free output as one store, else element by element (cols_left of them at most), the
// residual added after the rounding (mma::output_value's order). Inside y the residual is
// added while staging (stage_pass).
template <typename O>
__device__ __forceinline__ void copy_edge_piece(O* out, const O* src, const O* res, bool whole,
                                                int64_t cols_left) {
  constexpr int kVec = 16 / int(sizeof(O));
  if (whole && !res) {
    *reinterpret_cast<uint4*>(out) = *reinterpret_cast<const uint4*>(src);
    return;
  }
  for (int e = 0; e < kVec && e < cols_left; ++e)
    out[e] = res ? from_float<O>(__fadd_rn(to_float(src[e]), to_float(res[e]))) : src[e];
}

// The byte of staged row `row` holding byte `byte` of the row (the swizzle above).
__device__ __forceinline__ int staged_byte(int row, int byte) {
  return row * kStagedPitch + ((((byte >> 4) ^ row) & 7) | (byte >> 4 & ~7)) * 16 + (byte & 15);
}

// Two neighbouring outputs of y as one value (what a staged pair holds), and the sum of a
// rescaled pair and the residual's: each element rounded to O, then the residual added and
// rounded again (mma::output_value's order).
template <typename O>
using Pair = std::conditional_t<sizeof(O) == 4, float2, __nv_bfloat162>;
__device__ __forceinline__ float2 plus_residual(float v0, float v1, float2 r) {
  return make_float2(__fadd_rn(v0, r.x), __fadd_rn(v1, r.y));
}
__device__ __forceinline__ __nv_bfloat162 plus_residual(float v0, float v1, __nv_bfloat162 r) {
  return __floats2bfloat162_rn(
      __fadd_rn(__bfloat162float(__float2bfloat16_rn(v0)), __low2float(r)),
      __fadd_rn(__bfloat162float(__float2bfloat16_rn(v1)), __high2float(r)));
}

// Where this thread stages its pairs: its row's 16-byte pieces p = 0..7 of every 128 bytes sit
// at piece[p] bytes into the warp's staging (the swizzle of staged_byte, with the thread's row
// and the part of its column offset that is not a multiple of 16 bytes folded in once), so each
// staged pair is one store at a register plus a constant.
template <typename O>
struct StagingSlots {
  int piece[8];
  __device__ __forceinline__ StagingSlots() {
    const int lane = threadIdx.x % 32, row = lane / 4;
    // The thread's first column 2 (lane % 4) is byte 2 (lane % 4) sizeof(O): pieces of bf16
    // pairs start at bytes 4 (lane % 4) of piece 0, of f32 pairs at 8 (lane % 2) of piece
    // (lane % 4) / 2, which is an odd piece offset and so folds into the xor with the row.
    const int byte = 2 * (lane % 4) * int(sizeof(O)), key = (row ^ (byte >> 4)) & 7;
#pragma unroll
    for (int p = 0; p < 8; ++p) piece[p] = row * kStagedPitch + ((p ^ key) & 7) * 16 + (byte & 15);
  }
  // The staged byte of this thread's pair j (columns 8 j + 2 (lane % 4) of the pass); j is a
  // constant once the loops over pairs are unrolled, so this is a register and an offset.
  __device__ __forceinline__ int at(int j) const {
    const int piece = j * 8 * int(sizeof(O)) / 16;  // the pair's piece, less the thread's
    return this->piece[piece & 7] + (piece & ~7) * 16;
  }
};

// The rescaled outputs of one pass: this thread's pairs in its two rows (lane / 4 of the warp's
// 16, and the one 8 below), bias[col] added where there is one, each bias pair read once for
// both rows. kBiasInPairs (tiles inside y, a bias 8-byte aligned): the bias read in pairs with
// no bounds checks; else cols_left (columns of y from the pass's first) bounds it. With kResidual
// (tiles wholly inside y), the residual's pairs (res: its element at the thread's first row and
// the pass's first column; n: its row pitch) are all loaded first, so their latency is paid once
// a pass, and added here rather than in the copy.
template <typename O, bool kBias, bool kResidual, bool kBiasInPairs, int kPass>
__device__ __forceinline__ void stage_pass(unsigned char* rows, const StagingSlots<O>& slots,
                                           const int32_t* acc, const float* row_step, float beta,
                                           const float* bias, int64_t cols_left, const O* res,
                                           int64_t n) {
  constexpr int kPassCols = kStagedRowBytes / int(sizeof(O)), kPairs = kPassCols / 8;
  const int lane = threadIdx.x % 32;
  Pair<O> r[kResidual ? 2 * kPairs : 1];
  if constexpr (kResidual) {
#pragma unroll
    for (int j = 0; j < kPairs; ++j) {
      const int col = j * 8 + 2 * (lane % 4);
      r[2 * j] = *reinterpret_cast<const Pair<O>*>(res + col);
      r[2 * j + 1] = *reinterpret_cast<const Pair<O>*>(res + 8 * n + col);
    }
  }
#pragma unroll
  for (int j = 0; j < kPairs; ++j) {
    const int col = j * 8 + 2 * (lane % 4), i = (kPass * kPairs + j) * 4;
    float b0 = 0.0f, b1 = 0.0f;
    if constexpr (kBias && kBiasInPairs) {
      const float2 b = *reinterpret_cast<const float2*>(bias + col);
      b0 = b.x, b1 = b.y;
    } else if constexpr (kBias) {
      if (col < cols_left) b0 = bias[col];
      if (col + 1 < cols_left) b1 = bias[col + 1];
    }
    const float v0 = mma::rescale(acc[i], row_step[0], beta, b0),
                v1 = mma::rescale(acc[i + 1], row_step[0], beta, b1),
                v2 = mma::rescale(acc[i + 2], row_step[1], beta, b0),
                v3 = mma::rescale(acc[i + 3], row_step[1], beta, b1);
    O* upper = reinterpret_cast<O*>(rows + slots.at(j));  // row + 8: the same swizzle
    O* lower = reinterpret_cast<O*>(rows + slots.at(j) + 8 * kStagedPitch);
    if constexpr (kResidual) {
      *reinterpret_cast<Pair<O>*>(upper) = plus_residual(v0, v1, r[2 * j]);
      *reinterpret_cast<Pair<O>*>(lower) = plus_residual(v2, v3, r[2 * j + 1]);
    } else {
      stage_pair(upper, v0, v1);
      stage_pair(lower, v2, v3);
    }
  }
}

// What a consumer thread's epilogue works on: its warp's 16 rows of the tile and 16 staged rows.
template <typename O>
struct EpilogueRows {
  O* y;
  const O* residual;
  const float* bias;
  float beta, row_step[2];      // step[] of this thread's two rows (lane / 4 and 8 below)
  int64_t m, n, n0, warp_row0;  // warp_row0: the first of the warp's 16 output rows
  unsigned char* rows;          // the warp's 16 staged rows
  bool whole;                   // the warpgroup's 64 x 256 block lies inside y
  bool bias_pairs;              // whole, and the bias may be read in 8-byte pairs
  StagingSlots<O> slots;
};

// Columns kPass * kPassCols .. of the warp's 16 rows: staged, then copied out two rows at a time,
// 16 lanes of 16 bytes a row (staged row r is output row warp_row0 + r).
template <typename O, int kPass>
__device__ __forceinline__ void store_part(const EpilogueRows<O>& e, const int32_t* acc) {
  constexpr int kPassCols = kStagedRowBytes / int(sizeof(O)), kVec = 16 / int(sizeof(O));
  static_assert(kPassCols / kVec == 16, "a warp copies two staged rows at a time");
  const int lane = threadIdx.x % 32;
  const int64_t col0 = e.n0 + kPass * kPassCols;
  __syncwarp();  // the warp's last copies have read its staged rows
  // Inside y, the residual is added as the pass is staged; at the edges, as it is copied out.
  const O* res =
      e.whole && e.residual ? e.residual + (e.warp_row0 + lane / 4) * e.n + col0 : nullptr;
  const float* bias = e.bias ? e.bias + col0 : nullptr;
  const int64_t left = e.n - col0;
  // The pass's variant: with the residual or not, and the bias absent, read in pairs (inside y)
  // or read with bounds checks.
  const auto pass = [&](auto with_bias, auto bias_in_pairs) {
    constexpr bool kBias = decltype(with_bias)::value, kInPairs = decltype(bias_in_pairs)::value;
    if (res)
      stage_pass<O, kBias, true, kInPairs, kPass>(e.rows, e.slots, acc, e.row_step, e.beta, bias,
                                                  left, res, e.n);
    else
      stage_pass<O, kBias, false, kInPairs, kPass>(e.rows, e.slots, acc, e.row_step, e.beta, bias,
                                                   left, res, e.n);
  };
  if (!bias)
    pass(std::false_type(), std::true_type());
  else if (e.bias_pairs)
    pass(std::true_type(), std::true_type());
  else
    pass(std::true_type(), std::false_type());
  __syncwarp();
  const int64_t first_row = e.warp_row0 + lane / 16, col = col0 + (lane % 16) * kVec;
  O* out = e.y + first_row * e.n + col;
  // Staged rows lane / 16 + 2 r: the same row % 8 parity pattern every 8 rows, so piece
  // (lane % 16) of row lane / 16 + 2 r sits at staged_byte(lane / 16 + 2 r, 16 (lane % 16)).
  auto src = [&](int r) {
    return reinterpret_cast<const O*>(e.rows + staged_byte(lane / 16 + 2 * r, 16 * (lane % 16)));
  };
  if (e.whole) {  // all but the edge tiles: no checks, pointers stepped two rows at a time
#pragma unroll
    for (int r = 0; r < 8; ++r, out += 2 * e.n)
      *reinterpret_cast<uint4*>(out) = *reinterpret_cast<const uint4*>(src(r));
    return;
  }
  const bool piece_whole = e.n % kVec == 0 && col + kVec <= e.n;
  for (int r = 0; r < 8 && first_row + 2 * r < e.m; ++r, out += 2 * e.n)
    if (col < e.n)
      copy_edge_piece(out, src(r),
                      e.residual ? e.residual + (first_row + 2 * r) * e.n + col : nullptr,
                      piece_whole, e.n - col);
}

// Rows m0 .. m0 + 63 (a warpgroup's) of the tile at column n0, from this consumer thread's
// accumulators
// (value i: row 16 warp + lane / 4 + 8 (i / 2 % 2), column 8 (i / 4) + 2 (lane % 4) + i % 2);
// row_step: step[] of the thread's two rows, read before the products. Each warp works alone on
// its 16 rows, in its own 16 staged rows, so only __syncwarp orders the staging.
// Tiles wholly inside y (all but the edges) skip the bounds checks.
template <typename O>
__device__ __forceinline__ void store_rows(O* y, unsigned char* staging, const int32_t* acc,
                                           const float* row_step, float beta, const float* bias,
                                           const O* residual, int64_t m, int64_t n, int64_t m0,
                                           int64_t n0) {
  constexpr int kPasses = kBN * int(sizeof(O)) / kStagedRowBytes;
  const int warp = (threadIdx.x / 32) % 4;
  const bool whole = m0 + 64 <= m && n0 + kBN <= n && n % (16 / sizeof(O)) == 0;
  const EpilogueRows<O> e{y,
                          residual,
                          bias,
                          beta,
                          {row_step[0], row_step[1]},
                          m,
                          n,
                          n0,
                          m0 + warp * 16,
                          staging + warp * 16 * kStagedPitch,
                          whole,
                          whole && reinterpret_cast<uintptr_t>(bias) % 8 == 0};
  store_part<O, 0>(e, acc);
  store_part<O, 1>(e, acc);
  if constexpr (kPasses > 2) {
    store_part<O, 2 % kPasses>(e, acc);
    store_part<O, 3 % kPasses>(e, acc);
  }
}

// A consumer warpgroup (wg 0 or 1: rows 64 wg .. of each tile): the products of each stage as
// it lands, the stage given back to both blocks' producers once they have retired, then the
// tile's epilogue while the producer loads ahead.
template <typename O>
__device__ __forceinline__ void consume(unsigned char* smem, uint64_t* full, uint64_t* empty,
                                        uint32_t peer, int work, int first, int stride, int steps,
                                        int tiles_n, uint32_t rank, int wg, O* y, const float* step,
                                        float beta, const float* bias, const O* residual, int64_t m,
                                        int64_t n) {
  tma::claim_registers<kConsumerRegisters>();
  const bool signals = threadIdx.x % 128 == 0;  // the thread that gives stages back
  auto give_back = [&](int stage) {
    if (!signals) return;
    tma::arrive(empty + stage);
    tma::arrive_in_block(empty + stage, peer);
  };
  unsigned char* staging = smem + kStagingOffset + wg * kStagingBytes;
  int stage = 0;
  uint32_t phase = 0;
  int32_t acc[kAcc];
  for (int t = first; t < work; t += stride) {
    const int64_t m0 = int64_t(t / tiles_n * kCluster + int(rank)) * kBM,
                  n0 = int64_t(t % tiles_n) * kBN;
    // The rows' steps, loaded now so the epilogue does not wait on them.
    float row_step[2];
    const int64_t row = m0 + wg * 64 + (threadIdx.x / 32) % 4 * 16 + threadIdx.x % 32 / 4;
    row_step[0] = row < m ? step[row] : 0.0f;
    row_step[1] = row + 8 < m ? step[row + 8] : 0.0f;
    // The residual rows this warpgroup will add, asked into L2 now: read only in the epilogue,
    // they would otherwise cost it a trip to memory per row.
    if (residual && m0 + wg * 64 + 64 <= m && n0 + kBN <= n && n % (16 / int(sizeof(O))) == 0 &&
        threadIdx.x % 128 < 64)
      tma::prefetch_l2(residual + (m0 + wg * 64 + threadIdx.x % 128) * n + n0, kBN * sizeof(O));
    int previous = -1;
    for (int kt = 0; kt < steps; ++kt) {
      tma::wait(full + stage, phase);
      const unsigned char* tile_smem = smem + stage * kStageBytes;
      const uint64_t a = wgmma::tile_desc(tile_smem + wg * 64 * kBK),
                     b = wgmma::tile_desc(tile_smem + kTileA);
      wgmma::fence_regs<kAcc>(reinterpret_cast<uint32_t*>(acc));
      wgmma::fence();
#pragma unroll
      for (int kk = 0; kk < kBK / 32; ++kk)
        wgmma::wgmma_s8_ss<kBN>(acc, a + kk * wgmma::kStepAlongRows, b + kk * wgmma::kStepAlongRows,
                                kt > 0 || kk > 0);
      wgmma::commit();
      wgmma::wait<1>();  // the previous stage's products retired; this one's run on
      wgmma::fence_regs<kAcc>(reinterpret_cast<uint32_t*>(acc));
      if (previous >= 0) give_back(previous);
      previous = stage;
      if (++stage == kStages) stage = 0, phase ^= 1;
    }
    wgmma::wait<0>();
    wgmma::fence_regs<kAcc>(reinterpret_cast<uint32_t*>(acc));
    if (previous >= 0) give_back(previous);
    if (m0 < m) store_rows(y, staging, acc, row_step, beta, bias, residual, m, n, m0 + wg * 64, n0);
  }
}

template <typename O>
__global__ void __cluster_dims__(kCluster, 1, 1) __launch_bounds__(kThreads, 1)
    int8_gemm_tma_kernel(const __grid_constant__ CUtensorMap a_map,
                         const __grid_constant__ CUtensorMap b_map, O* y, const float* step,
                         const float* beta, const float* bias, const O* residual, int64_t m,
                         int64_t n, int64_t k16) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = wgmma::aligned(smem_raw);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kBarrierOffset);
  uint64_t* empty = full + kStages;
  // Work item t of the cluster: band pair t / tiles_n (x_q rows 256 (t / tiles_n) + 128 rank ..),
  // W_q tile t % tiles_n. A block whose band lies past M still loads its half of W_q for its
  // peer (its own x_q tile arrives as zeros) and stores nothing.
  const uint32_t rank = tma::cluster_rank(), peer = rank ^ 1;
  // 32-bit tile arithmetic: the launch keeps M and N below 2^31 (TMA coordinates are 32-bit).
  const int tiles_n = int((n + kBN - 1) / kBN);
  const int work = tiles_n * int((m + kCluster * kBM - 1) / (kCluster * kBM));
  const int first = int(blockIdx.x) / kCluster, stride = int(gridDim.x) / kCluster;
  const int steps = int((k16 + kBK - 1) / kBK);
  const int group = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      tma::barrier_init(full + s, 1);  // the producer's arrival, plus the copies' bytes
      tma::barrier_init(empty + s, kConsumers * kCluster);  // every consumer of the cluster
    }
    tma::fence_barrier_init();
  }
  tma::cluster_sync();  // the peer's barriers exist before anything lands in or arrives on them

  if (group == 0) {  // the producer
    tma::release_registers<kProducerRegisters>();
    if (threadIdx.x == 0) {
      tma::prefetch_map(&a_map);
      tma::prefetch_map(&b_map);
      int stage = 0;
      uint32_t phase = 0;
      for (int t = first; t < work; t += stride) {
        const int32_t m0 = (t / tiles_n * kCluster + int(rank)) * kBM;
        const int32_t n0 = t % tiles_n * kBN;
        for (int kt = 0; kt < steps; ++kt) {
          // Both blocks' consumers have read the stage: this copy writes into the peer's too.
          tma::wait(empty + stage, phase ^ 1);
          unsigned char* dst = smem + stage * kStageBytes;
          tma::arrive_expect_bytes(full + stage, kStageBytes);
          tma::load_2d(dst, &a_map, kt * kBK, m0, full + stage);
          tma::load_2d_multicast(dst + kTileA + rank * kHalfRowsB * kBK, &b_map, kt * kBK,
                                 n0 + int32_t(rank) * kHalfRowsB, full + stage,
                                 uint16_t((1 << kCluster) - 1));
          if (++stage == kStages) stage = 0, phase ^= 1;
        }
      }
    }
  } else {
    consume(smem, full, empty, peer, work, first, stride, steps, tiles_n, rank, group - 1, y, step,
            *beta, bias, residual, m, n);
  }
  // No block leaves while its peer may still write into its shared memory or arrive on it.
  tma::cluster_sync();
#else
  __trap();  // launched only on compute capability 9.0 from sm_90a code
#endif
}

template <typename O>
bool launch(const KView& y, const KView& xq, const KView& wq, const KView& step, const KView& beta,
            const KView& bias, const KView& residual, cudaStream_t stream) {
  const int64_t m = xq.shape[0], k16 = (xq.shape[1] + 15) / 16 * 16, n = wq.shape[0];
  if (k16 == 0 || m + 2 * kBM >= (int64_t(1) << 31) || n + kBN >= (int64_t(1) << 31) ||
      k16 >= (int64_t(1) << 31))
    return false;  // no K (no product to start the accumulators), or past 32-bit TMA
                   // coordinates: the portable kernel takes it
  const auto misaligned = [](const KView& v) { return reinterpret_cast<uintptr_t>(v.data) % 16; };
  if (misaligned(y) || misaligned(residual))
    return false;  // the epilogue moves y and the residual in 16-byte pieces
  CUtensorMap a_map, b_map;
  if (!tma::encode_byte_rows_map(&a_map, xq.data, m, k16, xq.strides[0], kBM, kBK) ||
      !tma::encode_byte_rows_map(&b_map, wq.data, n, k16, wq.strides[0], kHalfRowsB, kBK))
    return false;
  const int64_t work = ((m + kCluster * kBM - 1) / (kCluster * kBM)) * ((n + kBN - 1) / kBN);
  const auto kernel = int8_gemm_tma_kernel<O>;
  allow_shared_memory(kernel, kSmemBytes);
  const int64_t blocks = std::min<int64_t>(work, kPersistentBlocks / kCluster) * kCluster;
  kernel<<<unsigned(blocks), kThreads, kSmemBytes, stream>>>(
      a_map, b_map, static_cast<O*>(y.data), static_cast<const float*>(step.data),
      static_cast<const float*>(beta.data), static_cast<const float*>(bias.data),
      static_cast<const O*>(residual.data), m, n, k16);
  BG_CUDA_LAUNCH_CHECK();
  return true;
}

}  // namespace

bool int8_linear_tma(const KView& y, const KView& xq, const KView& wq, const KView& step,
                     const KView& beta, const KView& bias, const KView& residual,
                     cudaStream_t stream) {
  if (y.dtype == DType::f32) return launch<float>(y, xq, wq, step, beta, bias, residual, stream);
  return launch<__nv_bfloat16>(y, xq, wq, step, beta, bias, residual, stream);
}

}  // namespace bg::cuda
