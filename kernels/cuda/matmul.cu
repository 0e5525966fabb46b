// matmul.cu: batched GEMM through cuBLAS (f32/f16/bf16 in, f32 accumulate). Row-major
// operands are handed to column-major cuBLAS as their transposes, so a transposed view is a
// transpose flag, never a copy. A product with a bias or a residual runs on cuBLASLt, both in
// its epilogue (one pass over the output instead of two more). Both are deterministic for a fixed
// shape on one stream.
#include <cublas_v2.h>

#include <map>
#include <mutex>
#include <tuple>

#include "cublaslt_problem.cuh"
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

// cuBLASLt's heuristic choice for a product with an epilogue, made once per shape, layout and
// epilogue; false when it offers none (remembered too).
bool epilogue_algo(cublasLtHandle_t handle, const LtProblem& p, const LtDescriptors& d,
                   cublasLtMatmulAlgo_t* algo) {
  using Key = std::tuple<cublasLtHandle_t, int, int, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int, int, int, int, bool, bool, bool, bool, bool>;
  static std::mutex mu;
  static std::map<Key, std::pair<bool, cublasLtMatmulAlgo_t>> chosen;
  const Key key{handle,
                int(p.op_a),
                int(p.op_b),
                p.m,
                p.n,
                p.k,
                p.ld_a,
                p.ld_b,
                p.ld_c,
                int(p.type_a),
                int(p.type_b),
                int(p.type_c),
                int(p.compute),
                p.bias != nullptr,
                p.residual != nullptr,
                p.gelu_input != nullptr,
                p.b_sums != nullptr,
                p.dgelu_input != nullptr};
  std::lock_guard<std::mutex> lock(mu);
  auto it = chosen.find(key);
  if (it != chosen.end()) {
    *algo = it->second.second;
    return it->second.first;
  }
  cublasLtMatmulPreference_t pref = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&pref), "matmul", "MatmulPreferenceCreate");
  const uint64_t workspace = kCublasLtWorkspaceBytes;
  check_cublas(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace, sizeof(workspace)),
               "matmul", "MatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle, d.desc, d.a, d.b, d.c, d.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  const bool ok = st == CUBLAS_STATUS_SUCCESS && found > 0;
  *algo = result.algo;
  chosen.emplace(key, std::make_pair(ok, result.algo));
  return ok;
}

// sums[i] = the sum of a's row i over K, in f32 in order: the row-sum epilogue where cuBLASLt
// offers no algorithm for it.
template <typename T>
__global__ void row_sums_kernel(float* sums, const T* a, int64_t m, int64_t k, int64_t s1,
                                int64_t s2) {
  BG_GRID_LOOP(i, m) {
    float acc = 0.f;
    for (int64_t j = 0; j < k; ++j) acc += to_float(a[i * s1 + j * s2]);
    sums[i] = acc;
  }
}

void epilogue_matmul(const KView& out, const KView& a, const KView& b, const MatmulEpilogue& ep,
                     MatmulPrecision precision, StreamHandle stream) {
  LtProblem p{};
  if (!lt_problem(out, a, b, ep, precision, "matmul", &p))
    kernel_fail("matmul", "operands need one unit-stride dimension (core makes them contiguous)");
  CublasLtState& s = cublaslt_state();
  const LtDescriptors d(p, 0);
  cublasLtMatmulAlgo_t algo;
  if (!epilogue_algo(s.handle, p, d, &algo)) {
    if (p.dgelu_input) {  // the product, then GELU's backward over it: the composition's bits
      MatmulEpilogue plain = ep;
      plain.dgelu_input = KView();
      matmul(out, a, b, plain, precision, stream);
      return unary_backward(UnaryOp::gelu, out, ep.dgelu_input, KView(), out, 0.0, stream);
    }
    if (!p.b_sums)
      kernel_fail("matmul",
                  "cuBLASLt offers no algorithm with this epilogue for M=" + std::to_string(p.m) +
                      " N=" + std::to_string(p.n) + " K=" + std::to_string(p.k));
    MatmulEpilogue plain = ep;  // the product without the row sums, then the sums alone
    plain.a_row_sums = KView();
    epilogue_matmul(out, a, b, plain, precision, stream);
    dispatch_float(a.dtype, "matmul", [&](auto zero) {
      using T = decltype(zero);
      const int64_t m = a.shape[1];
      row_sums_kernel<T><<<grid_for(m, 256), 256, 0, as_stream(stream)>>>(
          static_cast<float*>(ep.a_row_sums.data), static_cast<const T*>(a.data), m, a.shape[2],
          a.strides[1], a.strides[2]);
    });
    BG_CUDA_LAUNCH_CHECK();
    return;
  }
  const float alpha = 1.f, beta = p.beta();
  check_cublas(
      cublasLtMatmul(s.handle, d.desc, &alpha, b.data, d.a, a.data, d.b, &beta, p.c(out), d.c,
                     out.data, d.c, &algo, s.workspace, kCublasLtWorkspaceBytes, as_stream(stream)),
      "matmul", "cublasLtMatmul");
}

}  // namespace

void matmul(const KView& out, const KView& a, const KView& b, const MatmulEpilogue& epilogue,
            MatmulPrecision precision, StreamHandle stream) {
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  if (batch * m * n == 0) return;
  check_epilogue(epilogue, out, k, "matmul");
  const KView& bias = epilogue.bias;
  if (k == 0) return bias.data ? copy(out, bias_rows(bias, out), stream) : fill(out, 0.0, stream);
  if (bias.data || epilogue.residual.data || epilogue.gelu_input.data || epilogue.a_row_sums.data ||
      epilogue.dgelu_input.data)
    return epilogue_matmul(out, a, b, epilogue, precision, stream);
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
  const cublasComputeType_t compute = cublas_compute_type(a.dtype, precision);
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
