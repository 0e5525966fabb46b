// cublaslt_problem.cuh: one cuBLASLt product described once, for matmul.cu (the standard
// algorithm's biased products) and matmul_batch_invariant.cu (every pinned product): the
// per-device handle and workspace, the problem in cuBLASLt's column-major terms
// (blas_layout.cuh), and the descriptors built from it, the bias, GELU and dGELU epilogues
// included; a
// residual is cuBLASLt's C (beta = 1), laid out as the output D.
#pragma once
#include <cublasLt.h>

#include <mutex>
#include <string>

#include "blas_layout.cuh"
#include "cuda_common.cuh"

namespace bg::cuda {

constexpr size_t kCublasLtWorkspaceBytes = size_t(32) << 20;

struct CublasLtState {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
};

// The current device's handle and workspace, made on first use.
inline CublasLtState& cublaslt_state() {
  static std::mutex mu;
  static CublasLtState states[64];
  int dev = 0;
  BG_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  CublasLtState& s = states[dev];
  if (!s.handle) {
    check_cublas(cublasLtCreate(&s.handle), "matmul", "cublasLtCreate");
    BG_CUDA_CHECK(cudaMalloc(&s.workspace, kCublasLtWorkspaceBytes));
  }
  return s;
}

// One product in cuBLASLt's column-major terms: D (n x m) = op(A) op(B) (+ C), A our b, B our a;
// the bias (our N values, cuBLASLt's n rows of D) enters the epilogue when `bias` is set, the
// residual as C (beta = 1) when `residual` is.
struct LtProblem {
  cublasOperation_t op_a, op_b;  // cuBLASLt's transa (our b), transb (our a)
  int64_t m, n, k, ld_a, ld_b, ld_c, batch, stride_a, stride_b, stride_c;
  cudaDataType_t type_a, type_b, type_c;
  cublasComputeType_t compute;
  const void* bias = nullptr;      // of type_c (cuBLASLt takes no f32 bias for a bf16 output)
  const void* residual = nullptr;  // laid out as the output
  void* gelu_input = nullptr;      // laid out as the output: out = gelu(this)
  void* b_sums = nullptr;          // f32, one per column of D: B's sums over k (BGRADB)
  const void* dgelu_input = nullptr;  // laid out as the output: out = (A B) * gelu'(this)
  float beta() const { return residual ? 1.f : 0.f; }
  const void* c(const KView& out) const { return residual ? residual : out.data; }
};

// How cuBLAS multiplies operands of dtype `a` at a precision. Each precision is a row (no
// default): a new one does not compile until it says how its products run here.
inline cublasComputeType_t cublas_compute_type(DType a, MatmulPrecision precision) {
  switch (precision) {
    case MatmulPrecision::fp32:
      return CUBLAS_COMPUTE_32F;
    case MatmulPrecision::tf32:  // f32 operands through tf32 tensor cores; others as they are
      return a == DType::f32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    case MatmulPrecision::bf16:  // the operands are bf16 already (core rounds them): f32 sums
      return CUBLAS_COMPUTE_32F;
  }
  return CUBLAS_COMPUTE_32F;
}

// The problem for out (batch, M, N) = a (batch, M, K) @ b (batch, K, N) (+ the epilogue's)
// views; false when an operand has no unit-stride dimension.
inline bool lt_problem(const KView& out, const KView& a, const KView& b, const MatmulEpilogue& ep,
                       MatmulPrecision precision, const char* op, LtProblem* p) {
  cublasOperation_t op_c;
  if (!as_column_major(a.shape[2], out.shape[2], b.strides[1], b.strides[2], &p->op_a, &p->ld_a) ||
      !as_column_major(out.shape[1], a.shape[2], a.strides[1], a.strides[2], &p->op_b, &p->ld_b) ||
      !as_column_major(out.shape[1], out.shape[2], out.strides[1], out.strides[2], &op_c,
                       &p->ld_c) ||
      op_c != CUBLAS_OP_N)
    return false;
  p->m = out.shape[1];
  p->n = out.shape[2];
  p->k = a.shape[2];
  p->batch = out.shape[0];
  p->stride_a = b.strides[0];
  p->stride_b = a.strides[0];
  p->stride_c = out.strides[0];
  p->type_a = cuda_type(b.dtype, op);
  p->type_b = cuda_type(a.dtype, op);
  p->type_c = cuda_type(out.dtype, op);
  p->compute = cublas_compute_type(a.dtype, precision);
  p->bias = ep.bias.data;
  p->residual = ep.residual.data;
  p->gelu_input = ep.gelu_input.data;
  p->b_sums = ep.a_row_sums.data;  // our a is cuBLASLt's B; its rows, D's columns
  p->dgelu_input = ep.dgelu_input.data;
  return true;
}

// The epilogue's contract (kernel_list.h): a bias of N contiguous values of out's dtype,
// 16-byte aligned, for one matrix; a residual of out's shape, dtype and strides, 16-byte aligned,
// K > 0.
inline void check_epilogue(const MatmulEpilogue& ep, const KView& out, int64_t k, const char* op) {
  const KView& bias = ep.bias;
  if (bias.data &&
      (bias.dtype != out.dtype || bias.ndim != 1 || bias.shape[0] != out.shape[2] ||
       bias.strides[0] != 1 || out.shape[0] != 1 || reinterpret_cast<uintptr_t>(bias.data) % 16))
    kernel_fail(op, "the bias must be N aligned values of the output's dtype, for one matrix");
  // An auxiliary matrix (GELU's input, written or read) laid out as the contiguous output of one
  // matrix, N a multiple of 8 (cuBLASLt's rule for the epilogue's auxiliary ld), K > 0.
  auto as_output = [&](const KView& v) {
    bool fits = v.dtype == out.dtype && v.ndim == out.ndim && k > 0 && out.shape[0] == 1 &&
                out.shape[2] % 8 == 0 && reinterpret_cast<uintptr_t>(v.data) % 16 == 0 &&
                out.strides[2] == 1 && out.strides[1] == out.shape[2];
    for (int d = 0; fits && d < out.ndim; ++d)
      fits = v.shape[d] == out.shape[d] && v.strides[d] == out.strides[d];
    return fits;
  };
  const KView& gi = ep.gelu_input;
  if (gi.data && (!as_output(gi) || ep.residual.data))
    kernel_fail(op,
                "the GELU input must have the contiguous output's shape, dtype and strides, "
                "16-byte aligned, N a multiple of 8, one matrix, K > 0 and no residual");
  const KView& dg = ep.dgelu_input;
  if (dg.data &&
      (!as_output(dg) || ep.residual.data || ep.bias.data || gi.data || ep.a_row_sums.data))
    kernel_fail(op,
                "the dGELU input must have the contiguous output's shape, dtype and strides, "
                "16-byte aligned, N a multiple of 8, one matrix, K > 0, and no other epilogue");
  const KView& rs = ep.a_row_sums;
  if (rs.data &&
      (rs.dtype != DType::f32 || rs.ndim != 1 || rs.shape[0] != out.shape[1] ||
       rs.strides[0] != 1 || out.shape[0] != 1 || k <= 0 || ep.bias.data || gi.data ||
       reinterpret_cast<uintptr_t>(rs.data) % 16))
    kernel_fail(op, "the row sums must be M aligned f32 values, for one matrix, K > 0, with no "
                    "bias and no GELU");
  const KView& res = ep.residual;
  if (!res.data) return;
  bool same = res.dtype == out.dtype && res.ndim == out.ndim && k > 0 &&
              reinterpret_cast<uintptr_t>(res.data) % 16 == 0;
  for (int d = 0; same && d < out.ndim; ++d)
    same = res.shape[d] == out.shape[d] && res.strides[d] == out.strides[d];
  if (!same)
    kernel_fail(op,
                "the residual must have the output's shape, dtype and strides, 16-byte "
                "aligned (K > 0)");
}

// The bias as out's shape, each row the bias (stride 0): what out holds when K is 0.
inline KView bias_rows(const KView& bias, const KView& out) {
  KView v = bias;
  v.ndim = 3;
  for (int i = 0; i < 3; ++i) v.shape[i] = out.shape[i];
  v.strides[0] = v.strides[1] = 0;
  v.strides[2] = 1;
  return v;
}

// RAII for the descriptors of one problem; sm_count > 0 sets cuBLASLt's SM-count target.
struct LtDescriptors {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;

  LtDescriptors(const LtProblem& p, int32_t sm_count) {
    check_cublas(cublasLtMatmulDescCreate(&desc, p.compute, CUDA_R_32F), "matmul",
                 "MatmulDescCreate");
    set_desc(CUBLASLT_MATMUL_DESC_TRANSA, p.op_a);
    set_desc(CUBLASLT_MATMUL_DESC_TRANSB, p.op_b);
    if (sm_count > 0) set_desc(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, sm_count);
    if (p.dgelu_input)
      set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(CUBLASLT_EPILOGUE_DGELU));
    else if (p.gelu_input)
      set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE,
               uint32_t(p.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX));
    else if (p.bias)
      set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(CUBLASLT_EPILOGUE_BIAS));
    else if (p.b_sums)
      set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(CUBLASLT_EPILOGUE_BGRADB));
    if (p.b_sums) {
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(p.b_sums));
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t(CUDA_R_32F));
    }
    if (p.bias) {
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, p.bias);
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t(p.type_c));
    }
    if (p.gelu_input) {  // the pre-activation in D's type, laid out as D (n x m, ld_c)
      set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, p.gelu_input);
      set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64_t(p.ld_c));
    }
    if (p.dgelu_input) {  // GELU's input in D's type, laid out as D: read, not written
      set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, const_cast<void*>(p.dgelu_input));
      set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64_t(p.ld_c));
    }
    a = layout(p.type_a, p.op_a == CUBLAS_OP_N ? p.n : p.k, p.op_a == CUBLAS_OP_N ? p.k : p.n,
               p.ld_a, p.batch, p.stride_a);
    b = layout(p.type_b, p.op_b == CUBLAS_OP_N ? p.k : p.m, p.op_b == CUBLAS_OP_N ? p.m : p.k,
               p.ld_b, p.batch, p.stride_b);
    c = layout(p.type_c, p.n, p.m, p.ld_c, p.batch, p.stride_c);
  }
  ~LtDescriptors() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
  LtDescriptors(const LtDescriptors&) = delete;
  LtDescriptors& operator=(const LtDescriptors&) = delete;

 private:
  template <typename V>
  void set_desc(cublasLtMatmulDescAttributes_t attr, V value) {
    check_cublas(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)), "matmul",
                 "MatmulDescSetAttribute");
  }
  static cublasLtMatrixLayout_t layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                                       int64_t batch, int64_t stride) {
    cublasLtMatrixLayout_t l = nullptr;
    check_cublas(cublasLtMatrixLayoutCreate(&l, type, uint64_t(rows), uint64_t(cols), ld), "matmul",
                 "MatrixLayoutCreate");
    if (batch > 1) {
      const int32_t count = int32_t(batch);
      check_cublas(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                    sizeof(count)),
                   "matmul", "MatrixLayoutSetAttribute");
      check_cublas(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                    &stride, sizeof(stride)),
                   "matmul", "MatrixLayoutSetAttribute");
    }
    return l;
  }
};

}  // namespace bg::cuda
