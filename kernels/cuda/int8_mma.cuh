// int8_mma.cuh: what BitLinear's integer tensor-core kernels share (int8_gemm.cu, w2a8.cu,
// bitplane.cu): cp.async staging (cp_async.cuh), ldmatrix, the s8 and b1 mma.sync forms, and the
// epilogue y = fma(float(acc) * step[m], beta, bias[n] or 0), rounded once to the output type,
// which is the same float step as the CPU references (kernels/cpu/bitlinear.cpp), so every one of
// these kernels gives the training forward's bits for the same integer product.
#pragma once
#include <cstdint>

#include "cp_async.cuh"
#include "cuda_common.cuh"

namespace bg::cuda::mma {

__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                            uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// c (16 x 8, s32) += a (16 x 32, s8, row) b (32 x 8, s8, col).
__device__ __forceinline__ void mma_s8(int32_t* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// c (16 x 8, s32) += popc(a AND b) over k = 256 bits: the b1 form of the same fragment shapes,
// a register holding 32 one-bit elements where the s8 form holds 4 bytes.
__device__ __forceinline__ void mma_b1_and(int32_t* c, const uint32_t* a, uint32_t b0,
                                           uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float rescale(int32_t acc, float step, float beta, float bias) {
  return __fmaf_rn(__fmul_rn(float(acc), step), beta, bias);
}

// The rescaled output rounded to O, plus the residual's element when there is one: an add after
// that rounding, so the result equals residual + y computed apart, bit for bit.
template <typename O>
__device__ __forceinline__ O output_value(int32_t acc, float step, float beta, float bias,
                                          const O* residual) {
  const O v = from_float<O>(rescale(acc, step, beta, bias));
  return residual ? from_float<O>(__fadd_rn(to_float(v), to_float(*residual))) : v;
}

// Outputs (row, col) and (row, col + 1) of y (m, n) from a fragment's accumulator pair; col is
// even, so with n even the pair is one aligned store. residual: null, or (m, n) like y.
template <typename O>
__device__ __forceinline__ void store_pair(O* y, int64_t n, int64_t row, int64_t col, int32_t c0,
                                           int32_t c1, float step, float beta, const float* bias,
                                           const O* residual = nullptr) {
  if (col >= n) return;
  O* dst = y + row * n + col;
  const O* res = residual ? residual + row * n + col : nullptr;
  const O v0 = output_value(c0, step, beta, bias ? bias[col] : 0.0f, res);
  if (col + 1 >= n) {
    dst[0] = v0;
    return;
  }
  const O v1 = output_value(c1, step, beta, bias ? bias[col + 1] : 0.0f, res ? res + 1 : res);
  if (n % 2 == 0) {
    if constexpr (sizeof(O) == 4) {
      *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
    } else {
      __nv_bfloat162 pair;
      pair.x = v0;
      pair.y = v1;
      *reinterpret_cast<__nv_bfloat162*>(dst) = pair;
    }
  } else {
    dst[0] = v0;
    dst[1] = v1;
  }
}

// A warp's MI x NI accumulator fragments (16 x 8 each, rows from row0, columns from col0) to
// y (m, n), rescaled as above. acc(mi, ni, half, e) is the integer of fragment (mi, ni), row
// half `half`, pair element e; rows past m are skipped.
template <typename O, int MI, int NI, typename Acc>
__device__ __forceinline__ void store_fragments(O* y, int64_t m, int64_t n, int64_t row0,
                                                int64_t col0, const float* step, float beta,
                                                const float* bias, Acc&& acc,
                                                const O* residual = nullptr) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t row = row0 + mi * 16 + g + half * 8;
      if (row >= m) continue;
      const float s = step[row];
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
        store_pair(y, n, row, col0 + ni * 8 + 2 * t, acc(mi, ni, half, 0), acc(mi, ni, half, 1), s,
                   beta, bias, residual);
    }
}

// The launch of int8_linear's portable kernel (int8_gemm.cu's mma.sync one):
// a grid of bn x bm output tiles, the views' raw pointers, K padded to 16 as the quantisers lay
// their rows out. The shared-memory opt-in is set on every launch (a host-side call), so it
// holds on whichever device is current.
template <typename O, typename Kernel>
void launch_int8_linear(Kernel kernel, int bm, int bn, int threads, int smem, const KView& y,
                        const KView& xq, const KView& wq, const KView& step, const KView& beta,
                        const KView& bias, const KView& residual, cudaStream_t stream) {
  allow_shared_memory(kernel, smem);
  const int64_t m = xq.shape[0], k = xq.shape[1], n = wq.shape[0];
  const dim3 grid(unsigned((n + bn - 1) / bn), unsigned((m + bm - 1) / bm));
  kernel<<<grid, threads, smem, stream>>>(
      static_cast<O*>(y.data), static_cast<const int8_t*>(xq.data),
      static_cast<const int8_t*>(wq.data), static_cast<const float*>(step.data),
      static_cast<const float*>(beta.data), static_cast<const float*>(bias.data),
      static_cast<const O*>(residual.data), m, n, (k + 15) / 16 * 16, xq.strides[0], wq.strides[0]);
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda::mma
