// blas_layout.cuh: how bitgrad's row-major strided views reach column-major cuBLAS/cuBLASLt.
// A row-major (rows x cols) matrix is its column-major (cols x rows) transpose, so the product
// out (M x N) = a (M x K) b (K x N) runs as C^T (N x M) = B^T (N x K) A^T (K x M), and a
// transposed view becomes a transpose flag, never a copy. Shared by matmul.cu (cuBLAS) and
// matmul_batch_invariant.cu (cuBLASLt).
#pragma once
#include <cublas_v2.h>

#include <string>

#include "../kernel_types.h"

namespace bg::cuda {

inline void check_cublas(cublasStatus_t st, const char* op, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    kernel_fail(op, std::string(what) + " failed with cuBLAS status " + std::to_string(int(st)));
}

inline cudaDataType_t cuda_type(DType t, const char* op) {
  switch (t) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      kernel_fail(op, std::string("CUDA matmul takes f32, f16 or bf16, got ") + dtype_name(t));
  }
}

// A row-major (rows x cols) matrix with strides (s0, s1), seen by column-major BLAS as its
// (cols x rows) transpose. Returns false when neither dim is unit-stride.
inline bool as_column_major(int64_t rows, int64_t cols, int64_t s0, int64_t s1,
                            cublasOperation_t* op, int64_t* ld) {
  if (cols == 1 || s1 == 1) {
    if (rows == 1 || s0 >= cols) {
      *op = CUBLAS_OP_N;
      *ld = rows == 1 ? (cols > 1 ? cols : 1) : s0;
      return true;
    }
  }
  if (rows == 1 || s0 == 1) {
    if (cols == 1 || s1 >= rows) {
      *op = CUBLAS_OP_T;
      *ld = cols == 1 ? (rows > 1 ? rows : 1) : s1;
      return true;
    }
  }
  return false;
}

}  // namespace bg::cuda
