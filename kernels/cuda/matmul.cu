// matmul.cu: batched GEMM through cuBLAS (f32/f16/bf16 in, f32 accumulate). Row-major
// operands are handed to column-major cuBLAS as their transposes, so a transposed view is a
// transpose flag, never a copy. cuBLAS is deterministic for a fixed shape on one stream.
#include <cublas_v2.h>

#include "blas_layout.cuh"
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace bg::cuda {
namespace {

cublasHandle_t handle_for_current_device() {
  static thread_local cublasHandle_t handles[64] = {};
  int dev = 0;
  BG_CUDA_CHECK(cudaGetDevice(&dev));
  if (!handles[dev]) check_cublas(cublasCreate(&handles[dev]), "matmul", "cublasCreate");
  return handles[dev];
}

}  // namespace

void matmul(const KView& out, const KView& a, const KView& b, MatmulPrecision precision,
            StreamHandle stream) {
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  if (batch * m * n == 0) return;
  if (k == 0) return fill(out, 0.0, stream);
  cublasOperation_t op_b, op_a, op_c;
  int64_t ld_b, ld_a, ld_c;
  // C^T (n x m) = B^T (n x k) * A^T (k x m) in column-major terms.
  if (!as_column_major(k, n, b.strides[1], b.strides[2], &op_b, &ld_b) ||
      !as_column_major(m, k, a.strides[1], a.strides[2], &op_a, &ld_a) ||
      !as_column_major(m, n, out.strides[1], out.strides[2], &op_c, &ld_c) || op_c != CUBLAS_OP_N)
    kernel_fail("matmul", "operands need one unit-stride dimension (core makes them contiguous)");
  cublasHandle_t h = handle_for_current_device();
  check_cublas(cublasSetStream(h, as_stream(stream)), "matmul", "cublasSetStream");
  const float alpha = 1.f, beta = 0.f;
  const cublasComputeType_t compute = a.dtype == DType::f32 && precision == MatmulPrecision::tf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  check_cublas(
      cublasGemmStridedBatchedEx(h, op_b, op_a, int(n), int(m), int(k), &alpha, b.data,
                                 cuda_type(b.dtype, "matmul"), int(ld_b), b.strides[0], a.data,
                                 cuda_type(a.dtype, "matmul"), int(ld_a), a.strides[0], &beta,
                                 out.data, cuda_type(out.dtype, "matmul"), int(ld_c),
                                 out.strides[0], int(batch), compute, CUBLAS_GEMM_DEFAULT),
      "matmul", "cublasGemmStridedBatchedEx");
}

}  // namespace bg::cuda

namespace bg::cuda {
namespace {

struct NaiveStrides {
  int64_t a0, a1, a2, b0, b1, b2, o0, o1, o2;
};

// One thread per output: a fused multiply-add chain over k in order from zero, in f32 (operands
// widened from their storage type), the same chain as the CPU's matmul_naive.
template <typename T, typename O>
__global__ void matmul_naive_kernel(O* out, const T* a, const T* b, int64_t batch, int64_t m,
                                    int64_t n, int64_t k, NaiveStrides s) {
  BG_GRID_LOOP(idx, batch * m * n) {
    const int64_t j = idx % n, i = (idx / n) % m, z = idx / (m * n);
    const T* pa = a + z * s.a0 + i * s.a1;
    const T* pb = b + z * s.b0 + j * s.b2;
    float acc = 0.f;
    for (int64_t p = 0; p < k; ++p)
      acc = __fmaf_rn(to_float(pa[p * s.a2]), to_float(pb[p * s.b1]), acc);
    out[z * s.o0 + i * s.o1 + j * s.o2] = from_float<O>(acc);
  }
}

}  // namespace

void matmul_naive(const KView& out, const KView& a, const KView& b, StreamHandle stream) {
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  if (batch * m * n == 0) return;
  const NaiveStrides s{a.strides[0], a.strides[1],   a.strides[2],   b.strides[0],  b.strides[1],
                       b.strides[2], out.strides[0], out.strides[1], out.strides[2]};
  dispatch_float(a.dtype, "matmul_naive", [&](auto za) {
    using T = decltype(za);
    dispatch_float(out.dtype, "matmul_naive", [&](auto zo) {
      using O = decltype(zo);
      matmul_naive_kernel<T, O><<<grid_for(batch * m * n, 256), 256, 0, as_stream(stream)>>>(
          static_cast<O*>(out.data), static_cast<const T*>(a.data), static_cast<const T*>(b.data),
          batch, m, n, k, s);
    });
  });
  BG_CUDA_LAUNCH_CHECK();
}

}  // namespace bg::cuda
