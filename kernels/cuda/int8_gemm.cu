// int8_gemm.cu: BitLinear's training product y = x_q W_q^T on int8 tensor cores, rescaled in
// the epilogue (this file's mma.sync kernel on any GPU; int8_gemm_tma.cu's on Hopper). x_q and
// W_q are exact small integers, so an int8 x int8 -> int32 mma gives the exact integer product at
// twice the bf16 rate, and no order of the K loop can change a bit: the result equals the CPU's
// Eigen product, batch-invariant and deterministic by construction.
//
// Tiles of 128 x 128 outputs over K steps of 64 bytes, 8 warps of 64 x 32, mma.sync m16n8k32
// (s8 in, s32 accumulate) fed by ldmatrix from shared rows padded to 80 bytes (the 8 rows of an
// ldmatrix phase then fall in distinct banks), three cp.async stages in flight. Operand rows are
// 16-byte aligned with zeros past K (the quantisers write them), so every load is a whole
// 16-byte group and the K tail needs no special case. Epilogue, per output:
// y = fma(float(acc) * step[m], beta, bias[n] or 0) (+ residual), as kernels/cpu/bitlinear.cpp.
#include <cstdint>

#include "cuda_kernels.h"
#include "device_runtime.h"
#include "int8_mma.cuh"

namespace bg::cuda {

// The Hopper kernel (int8_gemm_tma.cu), for the same operands, with the same bits; false when
// it cannot take them (the driver cannot build its tensor maps, or M or N reach 2^31), and this
// file's kernel runs instead.
bool int8_linear_tma(const KView& y, const KView& xq, const KView& wq, const KView& step,
                     const KView& beta, const KView& bias, const KView& residual,
                     cudaStream_t stream);

namespace {

using namespace mma;

constexpr int kBM = 128, kBN = 128, kBK = 64, kStages = 3, kThreads = 256;
constexpr int kPitch = kBK + 16;  // bytes per shared row
constexpr int kStageBytes = (kBM + kBN) * kPitch;
constexpr int kSmemBytes = kStages * kStageBytes;

// A thread's share of the loads: 16-byte group g of rows r and r + 64 of both the x_q and the
// W_q tile, their addresses found once (only the K offset moves).
struct Loader {
  const int8_t* src[4];  // x_q rows r, r + 64; W_q rows r, r + 64 (at K offset 0)
  bool row_ok[4];
  uint32_t dst[4];  // shared offsets within a stage
  int g;
  __device__ Loader(const int8_t* xq, const int8_t* wq, int64_t m, int64_t n, int64_t lda,
                    int64_t ldb, int64_t m0, int64_t n0) {
    const int r = threadIdx.x / 4;
    g = threadIdx.x % 4;
    for (int i = 0; i < 4; ++i) {
      const bool is_b = i >= 2;
      const int local = r + (i % 2) * 64;
      const int64_t grow = (is_b ? n0 : m0) + local;
      row_ok[i] = grow < (is_b ? n : m);
      src[i] = (is_b ? wq : xq) + (row_ok[i] ? grow * (is_b ? ldb : lda) : 0) + g * 16;
      dst[i] = uint32_t(((is_b ? kBM : 0) + local) * kPitch + g * 16);
    }
  }
  __device__ __forceinline__ void load(uint8_t* stage, int64_t k0, int64_t k16) const {
    const bool k_ok = k0 + g * 16 < k16;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const bool ok = row_ok[i] && k_ok;
      cp_async16(smem_addr(stage + dst[i]), ok ? src[i] + k0 : src[i], ok);
    }
  }
};

template <typename O>
__global__ void __launch_bounds__(kThreads)
    int8_gemm_kernel(O* y, const int8_t* xq, const int8_t* wq, const float* step, const float* beta,
                     const float* bias, const O* residual, int64_t m, int64_t n, int64_t k16,
                     int64_t lda, int64_t ldb) {
  extern __shared__ __align__(16) uint8_t smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm = warp / 4, wn = warp % 4;  // 2 x 4 warps of 64 x 32 outputs
  const int64_t m0 = int64_t(blockIdx.y) * kBM, n0 = int64_t(blockIdx.x) * kBN;
  const int64_t steps = (k16 + kBK - 1) / kBK;

  int32_t acc[4][4][4] = {};
  const Loader loader(xq, wq, m, n, lda, ldb, m0, n0);
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) loader.load(smem + s * kStageBytes, s * kBK, k16);
    cp_async_commit();
  }
  for (int64_t kt = 0; kt < steps; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage kt is in; every warp is done with stage kt - 1
    const int64_t next = kt + kStages - 1;
    if (next < steps) loader.load(smem + (next % kStages) * kStageBytes, next * kBK, k16);
    cp_async_commit();
    const uint8_t* a_tile = smem + (kt % kStages) * kStageBytes;
    const uint8_t* b_tile = a_tile + kBM * kPitch;
#pragma unroll
    for (int kk = 0; kk < kBK / 32; ++kk) {
      uint32_t a[4][4], b[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        const int r = wm * 64 + mi * 16 + lane % 16;
        ldmatrix_x4(smem_addr(a_tile + r * kPitch + kk * 32 + (lane / 16) * 16), a[mi][0], a[mi][1],
                    a[mi][2], a[mi][3]);
      }
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        const int r = wn * 32 + p * 16 + lane % 8 + (lane / 16) * 8;
        ldmatrix_x4(smem_addr(b_tile + r * kPitch + kk * 32 + ((lane / 8) % 2) * 16), b[2 * p][0],
                    b[2 * p][1], b[2 * p + 1][0], b[2 * p + 1][1]);
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) mma_s8(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
    }
  }
  cp_async_wait<0>();

  store_fragments<O, 4, 4>(
      y, m, n, m0 + wm * 64, n0 + wn * 32, step, *beta, bias,
      [&](int mi, int ni, int half, int e) { return acc[mi][ni][half * 2 + e]; }, residual);
}

}  // namespace

void int8_linear(const KView& y, const KView& xq, const KView& wq, const KView& step,
                 const KView& beta, const KView& bias, const KView& residual, StreamHandle stream) {
  const int64_t m = xq.shape[0], k = xq.shape[1], n = wq.shape[0];
  auto aligned = [](const KView& v) {
    return reinterpret_cast<uintptr_t>(v.data) % 16 == 0 && v.strides[0] % 16 == 0;
  };
  if (xq.dtype != DType::i8 || wq.dtype != DType::i8 || wq.shape[1] != k || !aligned(xq) ||
      !aligned(wq) || xq.strides[0] < (k + 15) / 16 * 16 || wq.strides[0] < (k + 15) / 16 * 16)
    kernel_fail("int8_linear", "operands must be i8 rows of K, 16-byte aligned, zero-padded");
  if (m == 0 || n == 0) return;
  if (y.dtype != DType::f32 && y.dtype != DType::bf16)
    kernel_fail("int8_linear", std::string("y must be f32 or bf16, got ") + dtype_name(y.dtype));
  if (kernel_family() == KernelFamily::best && hopper_kernels_available() &&
      int8_linear_tma(y, xq, wq, step, beta, bias, residual, as_stream(stream)))
    return;
  if (y.dtype == DType::f32)
    launch_int8_linear<float>(int8_gemm_kernel<float>, kBM, kBN, kThreads, kSmemBytes, y, xq, wq,
                              step, beta, bias, residual, as_stream(stream));
  else
    launch_int8_linear<__nv_bfloat16>(int8_gemm_kernel<__nv_bfloat16>, kBM, kBN, kThreads,
                                      kSmemBytes, y, xq, wq, step, beta, bias, residual,
                                      as_stream(stream));
}

}  // namespace bg::cuda
