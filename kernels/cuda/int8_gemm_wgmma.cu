// int8_gemm_wgmma.cu: int8_linear's product on Hopper's warpgroup MMA (wgmma, sm_90a): the same
// exact integer product as int8_gemm.cu's mma.sync kernel, so the same bits, at the rate of
// Hopper's int8 tensor cores (about twice bf16's). Blocks of 128 x 128 outputs: two warpgroups of
// 64 rows, each an m64n128k32 s8 x s8 -> s32 wgmma per 32 bytes of K, both operands read through
// descriptors from 128-byte-swizzled shared tiles (x_q rows and W_q rows are K-major, what int8
// wgmma takes). K moves in 128-byte steps through three cp.async stages: one tile loads while
// the last one's products run and this one's are issued (a stage is refilled only after the
// products that read it have retired). Two blocks share an SM (122 registers, 97 KB), so one's
// epilogue and loads overlap the other's products: measured against one block of 128 x 256 with
// four stages, 10% faster on GPT-2's shapes and 3% on the Baby GPT's step
// (docs/bitlinear.md). The epilogue computes the mma.sync kernel's values, y = fma(float(acc) *
// step[m], beta, bias[n] or 0) (+ residual), and stores them through shared memory.
#include <cstdint>

#include "cuda_kernels.h"
#include "int8_mma.cuh"
#include "wgmma.cuh"

namespace bg::cuda {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 128, kStages = 3, kThreads = 256, kBlocksPerSM = 2;
constexpr int kTileA = kBM * kBK, kStageBytes = (kBM + kBN) * kBK;  // bytes
constexpr int kSmemBytes = kStages * kStageBytes + wgmma::kAlign;
constexpr int kAcc = kBN / 2;  // s32 accumulators a thread holds

// d (a warpgroup's 64 x 128 s32 tile, this thread's 64 values) += A B^T over 32 bytes of K.
__device__ __forceinline__ void wgmma_s8(int32_t* d, uint64_t a, uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63 "
      "}, %64, %65, 1;\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]),
        "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]),
        "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]),
        "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]),
        "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]),
        "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
        "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
        "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
        "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]),
        "+r"(d[63])
      : "l"(a), "l"(b));
}

// A thread's share of every stage's copies, found once: 16-byte chunk c = t % 8 of K bytes
// k0..k0 + 127 of x_q rows m0 + t / 8 + 32 j (4 of A's 128 rows) and of W_q rows n0 + t / 8 +
// 32 j (4 of B's 128). A thread's rows share their swizzle (row % 8 is t / 8 % 8), so one base
// offset and fixed row steps address them all, and from stage to stage only the K offset
// moves; a copy walks its source pointer by the row step. Chunks past the rows or past K16 are
// zero-filled: the copy reads 0 bytes, so its pointer may run past the tensor.
struct StageLoader {
  static constexpr int kRowStep = kThreads / 8, kCopies = kBM / kRowStep;  // 32 rows, 4 copies
  static_assert(kBM == kBN, "A and B tiles take the same copies");
  const int8_t *a, *b;
  int64_t a_step, b_step, k16;  // bytes between a thread's rows; K rounded up to 16
  uint32_t dst;
  uint32_t rows_ok = 0;  // bit j: A row j exists; bit 4 + j: B row j
  int c;
  __device__ StageLoader(const int8_t* xq, const int8_t* wq, int64_t m, int64_t n, int64_t k16_,
                         int64_t lda, int64_t ldb, int64_t m0, int64_t n0)
      : a_step(kRowStep * lda), b_step(kRowStep * ldb), k16(k16_) {
    const int r = int(threadIdx.x) / 8;
    c = int(threadIdx.x) % 8;
    a = xq + (m0 + r) * lda + 16 * c;
    b = wq + (n0 + r) * ldb + 16 * c;
    dst = uint32_t(wgmma::swizzled_byte(r, c));
#pragma unroll
    for (int j = 0; j < kCopies; ++j) {
      rows_ok |= uint32_t(m0 + r + j * kRowStep < m) << j;
      rows_ok |= uint32_t(n0 + r + j * kRowStep < n) << (kCopies + j);
    }
  }
  __device__ __forceinline__ void load(unsigned char* stage, int64_t k0) const {
    const bool k_ok = k0 + 16 * c < k16;
    const uint32_t base = mma::smem_addr(stage) + dst;
    const int8_t* as = a + k0;
#pragma unroll
    for (int j = 0; j < kCopies; ++j, as += a_step)
      mma::cp_async16(base + j * kRowStep * wgmma::kRowBytes, as, k_ok && (rows_ok >> j & 1));
    const int8_t* bs = b + k0;
#pragma unroll
    for (int j = 0; j < kCopies; ++j, bs += b_step)
      mma::cp_async16(base + kTileA + j * kRowStep * wgmma::kRowBytes, bs,
                      k_ok && (rows_ok >> (kCopies + j) & 1));
  }
};

// The epilogue, through shared memory: each thread rescales its accumulators (bias added,
// rounded to O) into the block's 128 x 128 tile there, then the block copies the tile out in
// 16-byte pieces, each thread a contiguous run of a row, adding the residual (read the same
// way) after the rounding. Written straight from the fragments, each warp store would use half
// of every 32-byte sector it touches. Same values as mma::store_fragments, bit for bit.
template <typename O>
__device__ __forceinline__ void store_tile(O* y, unsigned char* smem, const int32_t* acc,
                                           const float* step, float beta, const float* bias,
                                           const O* residual, int64_t m, int64_t n, int64_t m0,
                                           int64_t n0) {
  constexpr int kPitch = kBN * int(sizeof(O)) + 16;  // bytes a staged row; the pad spreads banks
  constexpr int kVec = 16 / int(sizeof(O)), kChunksPerRow = kBN / kVec;
  __syncthreads();  // every warpgroup's products have read their stages
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Accumulator i of a warp: rows 16 (warp % 4) + lane / 4 (+ 8 for i / 2 odd) of its
  // warpgroup's 64, columns 8 (i / 4) + 2 (lane % 4) + i % 2: mma.sync's fragment layout.
  const int row0 = (warp / 4) * 64 + (warp % 4) * 16 + lane / 4;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row0 + half * 8;
    const float s = m0 + row < m ? step[m0 + row] : 0.0f;
    O* dst = reinterpret_cast<O*>(smem + row * kPitch);
#pragma unroll
    for (int ni = 0; ni < kBN / 8; ++ni) {
      const int col = ni * 8 + 2 * (lane % 4);
      const int64_t gcol = n0 + col;
      const float b0 = bias && gcol < n ? bias[gcol] : 0.0f;
      const float b1 = bias && gcol + 1 < n ? bias[gcol + 1] : 0.0f;
      dst[col] = from_float<O>(mma::rescale(acc[ni * 4 + half * 2], s, beta, b0));
      dst[col + 1] = from_float<O>(mma::rescale(acc[ni * 4 + half * 2 + 1], s, beta, b1));
    }
  }
  __syncthreads();
  for (int c = threadIdx.x; c < kBM * kChunksPerRow; c += kThreads) {
    const int row = c / kChunksPerRow, col = (c % kChunksPerRow) * kVec;
    const int64_t grow = m0 + row, gcol = n0 + col;
    if (grow >= m || gcol >= n) continue;
    const O* src = reinterpret_cast<const O*>(smem + row * kPitch) + col;
    O* out = y + grow * n + gcol;
    const O* res = residual ? residual + grow * n + gcol : nullptr;
    if (n % kVec == 0 && gcol + kVec <= n) {  // a whole, 16-byte-aligned piece of the row
      uint4 v = *reinterpret_cast<const uint4*>(src);
      if (res) {
        const uint4 rv = *reinterpret_cast<const uint4*>(res);
        O* vo = reinterpret_cast<O*>(&v);
        const O* ro = reinterpret_cast<const O*>(&rv);
#pragma unroll
        for (int i = 0; i < kVec; ++i)
          vo[i] = from_float<O>(__fadd_rn(to_float(vo[i]), to_float(ro[i])));
      }
      *reinterpret_cast<uint4*>(out) = v;
    } else {
      for (int i = 0; i < kVec && gcol + i < n; ++i)
        out[i] = res ? from_float<O>(__fadd_rn(to_float(src[i]), to_float(res[i]))) : src[i];
    }
  }
}

template <typename O>
__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
    int8_gemm_wgmma_kernel(O* y, const int8_t* xq, const int8_t* wq, const float* step,
                           const float* beta, const float* bias, const O* residual, int64_t m,
                           int64_t n, int64_t k16, int64_t lda, int64_t ldb) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = wgmma::aligned(smem_raw);
  const int warp = threadIdx.x / 32, group = warp / 4;  // warpgroup: rows 64 group..
  const int64_t m0 = int64_t(blockIdx.y) * kBM, n0 = int64_t(blockIdx.x) * kBN;
  const int64_t steps = (k16 + kBK - 1) / kBK;
  const StageLoader loader(xq, wq, m, n, k16, lda, ldb, m0, n0);
  int32_t acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = 0;
  auto load = [&](int64_t step) { loader.load(smem + (step % kStages) * kStageBytes, step * kBK); };
  wgmma::ring_start<kStages>(steps, load);
  for (int64_t kt = 0; kt < steps; ++kt) {
    // Every warpgroup has retired the products of tile kt - 2 (the wait below, one step ago),
    // so the ring may refill its stage.
    wgmma::ring_step<kStages>(kt, steps, load);
    const unsigned char* tile = smem + (kt % kStages) * kStageBytes;
    const uint64_t a = wgmma::tile_desc(tile + group * 64 * kBK),
                   b = wgmma::tile_desc(tile + kTileA);
    wgmma::fence_regs<kAcc>(reinterpret_cast<uint32_t*>(acc));
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 32; ++kk)
      wgmma_s8(acc, a + kk * wgmma::kStepAlongRows, b + kk * wgmma::kStepAlongRows);
    wgmma::commit();
    wgmma::wait<1>();  // tile kt - 1's products retired; tile kt's run on
    wgmma::fence_regs<kAcc>(reinterpret_cast<uint32_t*>(acc));
  }
  wgmma::wait<0>();
  wgmma::fence_regs<kAcc>(reinterpret_cast<uint32_t*>(acc));
  mma::cp_async_wait<0>();
  store_tile(y, smem, acc, step, *beta, bias, residual, m, n, m0, n0);
#else
  __trap();  // launched only on compute capability 9.0 from sm_90a code
#endif
}

}  // namespace

void int8_linear_wgmma(const KView& y, const KView& xq, const KView& wq, const KView& step,
                       const KView& beta, const KView& bias, const KView& residual,
                       cudaStream_t stream) {
  if (y.dtype == DType::f32)
    return mma::launch_int8_linear<float>(int8_gemm_wgmma_kernel<float>, kBM, kBN, kThreads,
                                          kSmemBytes, y, xq, wq, step, beta, bias, residual,
                                          stream);
  mma::launch_int8_linear<__nv_bfloat16>(int8_gemm_wgmma_kernel<__nv_bfloat16>, kBM, kBN, kThreads,
                                         kSmemBytes, y, xq, wq, step, beta, bias, residual, stream);
}

}  // namespace bg::cuda
