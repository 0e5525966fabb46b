// w2a8_wgmma.cu: W2A8 at batch 2 and up on Hopper's warpgroup MMA (wgmma, sm_90a), the same
// exact integer product as w2a8.cu's mma.sync kernel, so the same bits, at the int8 rate.
//
// The product is computed transposed, D = W x^T: the weights are wgmma's A operand, taken from
// registers, so they go from their 2-bit codes to int8 in registers and never exist wider in
// memory; x_q is the B operand, K-major rows of a 128-byte-swizzled shared tile (wgmma.cuh), as
// int8 wgmma takes it. A warpgroup owns 64 output features; a block has WG of them and BN batch
// rows. Each 128-k block of a warpgroup's weights is 2 KB in shared memory (32 bytes a row, the
// rows contiguous, so a warp's reads are 256 contiguous bytes): a thread reads its two rows'
// u32 pairs and unpacks four m64nBNk32 A fragments from them with a shift and a mask a register
// (w2a8_common.cuh's layout puts the codes in fragment order). The codes are w + 1, so the
// product is sum((w + 1) x) and the block subtracts sum(x), which it adds up from the staged x
// tiles once a stage (dp4a); making the codes signed would take four instructions a register
// instead of two, and this kernel is bound by instruction issue at small batches.
// K moves KB blocks a stage through S cp.async stages. Each 128-k block's four wgmmas are one
// group, and one group stays in flight while the next block's fragments are unpacked into the
// other of two register sets (a set is rewritten only after the group that read it has
// retired). The epilogue transposes through shared memory: each thread rescales its
// accumulators, y = fma(float(acc - sum(x)) * step[m], beta, bias[n] or 0) as every BitLinear
// kernel, into a (BN, 64 WG) tile of y's type, then the block stores whole 16-byte pieces of
// y's rows.
#include <algorithm>
#include <cstdint>
#include <utility>

#include "cuda_kernels.h"
#include "int8_mma.cuh"
#include "w2a8_common.cuh"
#include "w2a8_tiles.h"
#include "wgmma.cuh"
#include "wgmma_s8_rs.cuh"

namespace bg::cuda {
namespace {

using w2a8::kBlockBytes;
using w2a8::kBlockK;

template <int WG, int BN, int KB, int S>
struct Tiles {
  // (A stage refills when the products of the one two stages back have retired, so S - 2 stages
  // load ahead of the one multiplied.)
  static_assert(KB % 2 == 0, "a stage holds an even number of blocks (two register sets)");
  static_assert(BN % 8 == 0 && BN <= 256 && S >= 3, "wgmma N, and a stage loading ahead");
  static constexpr int kThreads = 128 * WG, kBM = 64 * WG;    // output features a block
  static constexpr int kXBytes = KB * BN * wgmma::kRowBytes;  // KB sub-tiles of BN x 128 bytes
  static constexpr int kWBytes = KB * kBM * kBlockBytes;
  static constexpr int kStageBytes = kXBytes + kWBytes;
  static_assert(kStageBytes % wgmma::kAlign == 0, "stages keep the swizzle's alignment");
  template <typename O>
  static constexpr int out_pitch() {  // bytes a staged output row; the pad spreads the banks
    return kBM * int(sizeof(O)) + 16;
  }
  template <typename O>
  static constexpr int smem_bytes() {
    return std::max(S * kStageBytes, BN * out_pitch<O>()) + wgmma::kAlign;
  }
};

// A thread's share of every stage's copies, found once: 16-byte chunk `xchunk` of x_q rows
// xrow0 + i kXRowStep (i < kXCopies) and chunk `wchunk` (block wchunk / 2, half wchunk % 2) of
// w2 rows wrow0 + i kWRowStep. From stage to stage only the K offset moves; a copy walks its
// source pointer by the row step (measured a little faster than offsets from one base). Rows
// past m or n and bytes past K are zero-filled: the copy reads 0 bytes, so its pointer may run
// past the tensor (such outputs are never stored; x is zero past K, and codes past K are zero
// weights).
template <int WG, int BN, int KB, int S>
struct StageLoader {
  using T = Tiles<WG, BN, KB, S>;
  static constexpr int kXChunks = KB * 8, kWChunks = KB * 2;  // chunks a row, a stage
  static constexpr int kXRowStep = T::kThreads / kXChunks, kWRowStep = T::kThreads / kWChunks;
  static constexpr int kXCopies = BN / kXRowStep, kWCopies = T::kBM / kWRowStep;
  static_assert(BN % kXRowStep == 0 && T::kBM % kWRowStep == 0, "every thread copies alike");
  const int8_t* x;
  const uint8_t* w;
  int64_t x_step, w_step, k16, blocks;  // bytes between a thread's rows; K rounded up to 16
  uint32_t x_dst, w_dst, x_rows_ok = 0, w_rows_ok = 0;  // bit i: copy i's row exists
  int xrow0, xchunk, wchunk;
  __device__ StageLoader(const int8_t* xq, const uint8_t* w2, int64_t m, int64_t n, int64_t k16_,
                         int64_t lda, int64_t blocks_, int64_t m0, int64_t n0)
      : x_step(kXRowStep * lda),
        w_step(kWRowStep * blocks_ * kBlockBytes),
        k16(k16_),
        blocks(blocks_) {
    const int wrow0 = threadIdx.x / kWChunks;
    xrow0 = threadIdx.x / kXChunks;
    xchunk = threadIdx.x % kXChunks;
    wchunk = threadIdx.x % kWChunks;
    x = xq + (m0 + xrow0) * lda + 16 * xchunk;
    w = w2 + (n0 + wrow0) * blocks * kBlockBytes + 16 * wchunk;
    x_dst = (xchunk / 8) * BN * wgmma::kRowBytes + wgmma::swizzled_byte(xrow0, xchunk % 8);
    w_dst = T::kXBytes + ((wchunk / 2) * T::kBM + wrow0) * kBlockBytes + 16 * (wchunk % 2);
#pragma unroll
    for (int i = 0; i < kXCopies; ++i) x_rows_ok |= uint32_t(m0 + xrow0 + i * kXRowStep < m) << i;
#pragma unroll
    for (int i = 0; i < kWCopies; ++i) w_rows_ok |= uint32_t(n0 + wrow0 + i * kWRowStep < n) << i;
  }
  // Where copy i of x lands in a stage: rows 8 apart share a swizzle, so a step that is a
  // multiple of 8 moves the offset by whole rows; otherwise the swizzle is recomputed.
  __device__ __forceinline__ uint32_t x_offset(int i) const {
    if constexpr (kXRowStep % 8 == 0) return x_dst + i * kXRowStep * wgmma::kRowBytes;
    return (xchunk / 8) * BN * wgmma::kRowBytes +
           wgmma::swizzled_byte(xrow0 + i * kXRowStep, xchunk % 8);
  }
  __device__ __forceinline__ void load(unsigned char* stage, int64_t kt) const {
    const uint32_t base = mma::smem_addr(stage);
    const int64_t k0 = kt * KB * kBlockK;
    const bool x_k_ok = k0 + 16 * xchunk < k16, w_k_ok = kt * KB + wchunk / 2 < blocks;
    const int8_t* xs = x + k0;
#pragma unroll
    for (int i = 0; i < kXCopies; ++i, xs += x_step)
      mma::cp_async16(base + x_offset(i), xs, x_k_ok && (x_rows_ok >> i & 1));
    const uint8_t* ws = w + kt * KB * kBlockBytes;
#pragma unroll
    for (int i = 0; i < kWCopies; ++i, ws += w_step)
      mma::cp_async16(base + w_dst + i * kWRowStep * kBlockBytes, ws,
                      w_k_ok && (w_rows_ok >> i & 1));
  }
};

// This thread's weight words of one 128-k block: the u32 pairs of rows `row` and row + 8 of the
// block's weight rows in shared memory.
struct BlockWords {
  uint2 lo, hi;
};
[[maybe_unused]] __device__ __forceinline__ BlockWords block_words(const unsigned char* rows,
                                                                   int row) {
  const int t = threadIdx.x % 4;
  return {*reinterpret_cast<const uint2*>(rows + row * kBlockBytes + 8 * t),
          *reinterpret_cast<const uint2*>(rows + (row + 8) * kBlockBytes + 8 * t)};
}

// The A fragments of those words: four 32-k steps of four registers each, as codes w + 1 (0, 1,
// 2: s8 values, so the product is sum((w + 1) x), and the epilogue subtracts sum(x)). Two
// instructions a register, where making them signed would take four.
[[maybe_unused]] __device__ __forceinline__ void unpack_fragments(uint32_t* a, BlockWords w) {
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const uint32_t wlo = ks < 2 ? w.lo.x : w.lo.y, whi = ks < 2 ? w.hi.x : w.hi.y;
    const int shift = 4 * (ks % 2);
    a[4 * ks + 0] = (wlo >> shift) & w2a8::kCodeMask;
    a[4 * ks + 1] = (whi >> shift) & w2a8::kCodeMask;
    a[4 * ks + 2] = (wlo >> (shift + 2)) & w2a8::kCodeMask;
    a[4 * ks + 3] = (whi >> (shift + 2)) & w2a8::kCodeMask;
  }
}

// sum(x) of the block's batch rows, from the staged tiles: thread i adds up chunks
// i % kPerRow, + kPerRow, ... of row i / kPerRow of each stage (16 bytes a chunk, dp4a against
// ones); the row's kPerRow threads are adjacent lanes and combine their sums at the end.
template <int WG, int BN, int KB, int S>
struct RowSums {
  using T = Tiles<WG, BN, KB, S>;
  static constexpr int kPerRow = T::kThreads / BN, kChunks = KB * 8 / kPerRow;
  static_assert(T::kThreads % BN == 0 && kPerRow <= 32 && (KB * 8) % kPerRow == 0,
                "a row's threads share a warp and its chunks");
  int32_t part[4] = {};  // four independent dp4a chains
  __device__ __forceinline__ void add(const unsigned char* stage) {
    const int row = threadIdx.x / kPerRow, first = threadIdx.x % kPerRow;
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      const int chunk = first + i * kPerRow;
      const int4 v = *reinterpret_cast<const int4*>(stage + (chunk / 8) * BN * wgmma::kRowBytes +
                                                    wgmma::swizzled_byte(row, chunk % 8));
      part[0] = __dp4a(v.x, 0x01010101, part[0]);
      part[1] = __dp4a(v.y, 0x01010101, part[1]);
      part[2] = __dp4a(v.z, 0x01010101, part[2]);
      part[3] = __dp4a(v.w, 0x01010101, part[3]);
    }
  }
  // Row r's total into out[r].
  __device__ __forceinline__ void finish(int32_t* out) {
    int32_t sum = (part[0] + part[1]) + (part[2] + part[3]);
#pragma unroll
    for (int off = kPerRow / 2; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (threadIdx.x % kPerRow == 0) out[threadIdx.x / kPerRow] = sum;
  }
};

// The epilogue: accumulator i of a thread holds output feature (its warpgroup's 64) 16 (warp % 4)
// + lane / 4 (+ 8 for i / 2 odd), batch row 8 (i / 4) + 2 (lane % 4) + i % 2. Those go,
// rescaled and rounded, to a (BN, 64 WG) tile in shared memory, which the block then copies to
// y's rows 16 bytes at a time.
template <typename O, int WG, int BN, int KB, int S>
__device__ __forceinline__ void store_tile(O* y, unsigned char* smem, const int32_t* acc,
                                           const int32_t* x_sums, const float* step, float beta,
                                           const float* bias, int64_t m, int64_t n, int64_t m0,
                                           int64_t n0) {
  using T = Tiles<WG, BN, KB, S>;
  constexpr int kPitch = T::template out_pitch<O>();
  constexpr int kVec = 16 / int(sizeof(O)), kChunksPerRow = T::kBM / kVec;
  __syncthreads();  // every warpgroup's products have read their stages; x_sums are in
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int feature0 = (warp / 4) * 64 + (warp % 4) * 16 + lane / 4;
  float bias_of[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int64_t f = n0 + feature0 + 8 * half;
    bias_of[half] = bias && f < n ? bias[f] : 0.0f;
  }
#pragma unroll
  for (int ni = 0; ni < BN / 8; ++ni)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int row = ni * 8 + 2 * (lane % 4) + e;
      const float s = m0 + row < m ? step[m0 + row] : 0.0f;
      const int32_t x_sum = x_sums[row];  // the codes are w + 1
      O* dst = reinterpret_cast<O*>(smem + row * kPitch);
#pragma unroll
      for (int half = 0; half < 2; ++half)
        dst[feature0 + 8 * half] =
            from_float<O>(mma::rescale(acc[ni * 4 + half * 2 + e] - x_sum, s, beta, bias_of[half]));
    }
  __syncthreads();
  for (int c = threadIdx.x; c < BN * kChunksPerRow; c += T::kThreads) {
    const int row = c / kChunksPerRow, col = (c % kChunksPerRow) * kVec;
    const int64_t grow = m0 + row, gcol = n0 + col;
    if (grow >= m || gcol >= n) continue;
    const O* src = reinterpret_cast<const O*>(smem + row * kPitch) + col;
    O* out = y + grow * n + gcol;
    if (n % kVec == 0 && gcol + kVec <= n)  // a whole, 16-byte-aligned piece of the row
      *reinterpret_cast<uint4*>(out) = *reinterpret_cast<const uint4*>(src);
    else
      for (int i = 0; i < kVec && gcol + i < n; ++i) out[i] = src[i];
  }
}

template <typename O, int WG, int BN, int KB, int S>
__global__ void __launch_bounds__(128 * WG)
    w2a8_wgmma_kernel(O* y, const int8_t* xq, const uint8_t* w2, const float* step,
                      const float* beta, const float* bias, int64_t m, int64_t n, int64_t k16,
                      int64_t lda, int64_t blocks) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = Tiles<WG, BN, KB, S>;
  extern __shared__ unsigned char smem_raw[];
  __shared__ int32_t x_sums[BN];
  unsigned char* smem = wgmma::aligned(smem_raw);
  const int warp = threadIdx.x / 32;
  const int row = (warp / 4) * 64 + (warp % 4) * 16 + (threadIdx.x % 32) / 4;  // A fragment row
  const int64_t n0 = int64_t(blockIdx.x) * T::kBM, m0 = int64_t(blockIdx.y) * BN;
  const int64_t steps = (blocks + KB - 1) / KB;
  constexpr int kAcc = BN / 2;
  const StageLoader<WG, BN, KB, S> loader(xq, w2, m, n, k16, lda, blocks, m0, n0);
  RowSums<WG, BN, KB, S> sums;
  int32_t acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = 0;
  uint32_t a[2][16];  // two register sets of A fragments: even and odd blocks
  auto load = [&](int64_t step) { loader.load(smem + (step % S) * T::kStageBytes, step); };
  wgmma::ring_start<S>(steps, load);
  for (int64_t kt = 0; kt < steps; ++kt) {
    // Every warpgroup has retired the products of stage kt - 2 (all but the last group of
    // stage kt - 1 had retired when it ended), so the ring may refill it.
    wgmma::ring_step<S>(kt, steps, load);
    const unsigned char* stage = smem + (kt % S) * T::kStageBytes;
    const unsigned char* weights = stage + T::kXBytes;
    BlockWords words = block_words(weights, row);
    sums.add(stage);  // while the last stage's final group runs
#pragma unroll
    for (int b = 0; b < KB; ++b) {
      uint32_t* frag = a[b % 2];  // its last reader, block b - 2, has retired
      unpack_fragments(frag, words);
      if (b + 1 < KB) words = block_words(weights + (b + 1) * T::kBM * kBlockBytes, row);
      const uint64_t x_desc = wgmma::tile_desc(stage + b * BN * wgmma::kRowBytes);
      wgmma::fence_regs<kAcc>(reinterpret_cast<uint32_t*>(acc));
      wgmma::fence_regs<16>(frag);
      wgmma::fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
        wgmma::wgmma_s8_rs<BN>(acc, frag + 4 * ks, x_desc + ks * wgmma::kStepAlongRows);
      wgmma::commit();
      wgmma::wait<1>();  // the previous block's group has retired; this one runs on
      wgmma::fence_regs<kAcc>(reinterpret_cast<uint32_t*>(acc));
      wgmma::fence_regs<16>(frag);
    }
  }
  wgmma::wait<0>();
  wgmma::fence_regs<kAcc>(reinterpret_cast<uint32_t*>(acc));
  mma::cp_async_wait<0>();
  sums.finish(x_sums);
  store_tile<O, WG, BN, KB, S>(y, smem, acc, x_sums, step, *beta, bias, m, n, m0, n0);
#else
  __trap();  // launched only on compute capability 9.0 from sm_90a code
#endif
}

template <typename O, int WG, int BN, int KB, int S>
void launch(const KView& y, const KView& xq, const KView& w2, const KView& step, const KView& beta,
            const KView& bias, cudaStream_t stream) {
  using T = Tiles<WG, BN, KB, S>;
  auto kernel = w2a8_wgmma_kernel<O, WG, BN, KB, S>;
  constexpr int smem = T::template smem_bytes<O>();
  allow_shared_memory(kernel, smem);
  const int64_t m = xq.shape[0], k = xq.shape[1], n = w2.shape[0];
  const int64_t blocks = (k + kBlockK - 1) / kBlockK;
  const dim3 grid(unsigned((n + T::kBM - 1) / T::kBM), unsigned((m + BN - 1) / BN));
  kernel<<<grid, T::kThreads, smem, stream>>>(
      static_cast<O*>(y.data), static_cast<const int8_t*>(xq.data),
      static_cast<const uint8_t*>(w2.data), static_cast<const float*>(step.data),
      static_cast<const float*>(beta.data), static_cast<const float*>(bias.data), m, n,
      (k + 15) / 16 * 16, xq.strides[0], blocks);
  BG_CUDA_LAUNCH_CHECK();
}

// The tile shapes, as "warpgroups x batch rows x blocks a stage x stages".
using Launcher = void (*)(const KView&, const KView&, const KView&, const KView&, const KView&,
                          const KView&, cudaStream_t);
struct TileShape {
  const char* name;
  Launcher f32, bf16;
};
#define BG_W2A8_TILE(WG, BN, KB, S)                                                             \
  TileShape {                                                                                   \
#WG "x" #BN "x" #KB "x" #S, launch < float, WG, BN, KB, S>, launch < __nv_bfloat16, WG, BN, \
        KB, S>                                                                                  \
  }
const TileShape kTiles[] = {BG_W2A8_TILE(1, 16, 4, 4), BG_W2A8_TILE(2, 64, 2, 4),
                            BG_W2A8_TILE(2, 128, 2, 5), BG_W2A8_TILE(2, 256, 2, 3)};
#undef BG_W2A8_TILE
constexpr int kTileCount = int(sizeof(kTiles) / sizeof(kTiles[0]));

// The tile a batch of m rows and n features takes (bench/results/bitlinear_w2a8_wgmma: every
// tile timed at the batch shapes). Up to 32 rows, one warpgroup on 64 features x 16 rows,
// streaming the weights four blocks a stage. Above, the widest two-warpgroup tile that still
// gives an H100/H200 (132 SMs) about a block an SM: wider tiles read x and the weights fewer
// times over, and at 8192^2 batch 4096 the 256-row tile is 1.2x the 64-row one; at batch 256
// the 128-row tile (128 blocks) is the fastest, and at 4096^2 batch 256 the 64-row one (128
// blocks, where the 128-row tile leaves half the SMs idle). The count is fixed, not read from
// the device: no kernel choice here follows the GPU model (tests/device_property_test.sh),
// though this one could not change a bit.
int tile_for(int64_t m, int64_t n) {
  constexpr int64_t kEnoughBlocks = 118;  // 0.9 x 132
  if (m <= 32) return 0;
  const int64_t feature_tiles = (n + 127) / 128;
  for (const auto& [tile, rows] : {std::pair{3, 256}, std::pair{2, 128}})
    if (feature_tiles * ((m + rows - 1) / rows) >= kEnoughBlocks) return tile;
  return 1;
}

}  // namespace

int w2a8_wgmma_tile_count() { return kTileCount; }
const char* w2a8_wgmma_tile_name(int tile) { return kTiles[tile].name; }

void w2a8_linear_wgmma(const KView& y, const KView& xq, const KView& w2, const KView& step,
                       const KView& beta, const KView& bias, int tile, StreamHandle stream) {
  const TileShape& shape =
      kTiles[tile < 0 || tile >= kTileCount ? tile_for(xq.shape[0], w2.shape[0]) : tile];
  (y.dtype == DType::f32 ? shape.f32 : shape.bf16)(y, xq, w2, step, beta, bias, as_stream(stream));
}

}  // namespace bg::cuda
