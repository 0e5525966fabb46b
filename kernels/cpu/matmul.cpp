// matmul.cpp (CPU): batched GEMM through Eigen on strided maps, so transposed views cost no copy.
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {
namespace {

// The epilogue's contract (kernel_list.h): a bias of N values of out's dtype, batch 1; a
// residual of out's shape, dtype and strides, K > 0.
void check_epilogue(const MatmulEpilogue& ep, const KView& out, int64_t k, const char* op) {
  if (ep.gelu_input.data)
    kernel_fail(op, "the CPU has no GELU epilogue (core composes gelu after the product)");
  if (ep.dgelu_input.data)
    kernel_fail(op, "the CPU has no dGELU epilogue (core runs GELU's backward after the product)");
  if (ep.a_row_sums.data)
    kernel_fail(op, "the CPU has no row-sum epilogue (core sums the gradient's columns itself)");
  const KView& bias = ep.bias;
  if (bias.data && (bias.dtype != out.dtype || bias.ndim != 1 || bias.shape[0] != out.shape[2] ||
                    bias.strides[0] != 1 || out.shape[0] != 1))
    kernel_fail(op, "the bias must be N values of the output's dtype, for one matrix");
  const KView& res = ep.residual;
  if (!res.data) return;
  bool same = res.dtype == out.dtype && res.ndim == out.ndim && k > 0;
  for (int d = 0; same && d < out.ndim; ++d)
    same = res.shape[d] == out.shape[d] && res.strides[d] == out.strides[d];
  if (!same)
    kernel_fail(op, "the residual must have the output's shape, dtype and strides (K > 0)");
}

// out += residual, element by element in T (the epilogue's last add on the CPU).
void add_residual(const KView& out, const KView& res) {
  if (!res.data) return;
  dispatch_float(out.dtype, "matmul", [&](auto zero) {
    using T = decltype(zero);
    for (int64_t z = 0; z < out.shape[0]; ++z)
      for (int64_t i = 0; i < out.shape[1]; ++i)
        for (int64_t j = 0; j < out.shape[2]; ++j) {
          const int64_t at = z * out.strides[0] + i * out.strides[1] + j * out.strides[2];
          ptr<T>(out)[at] += ptr<T>(res)[at];
        }
  });
}

}  // namespace

void matmul(const KView& out, const KView& a, const KView& b, const MatmulEpilogue& epilogue,
            MatmulPrecision, StreamHandle) {
  check_epilogue(epilogue, out, a.shape[2], "matmul");
  const KView& bias = epilogue.bias;
  dispatch_float(a.dtype, "matmul", [&](auto zero) {
    using T = decltype(zero);
    using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using Strided = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
    const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
    for (int64_t i = 0; i < batch; ++i) {
      Eigen::Map<const Mat, 0, Strided> ma(ptr<T>(a) + i * a.strides[0], m, k,
                                           Strided(a.strides[1], a.strides[2]));
      Eigen::Map<const Mat, 0, Strided> mb(ptr<T>(b) + i * b.strides[0], k, n,
                                           Strided(b.strides[1], b.strides[2]));
      Eigen::Map<Mat, 0, Strided> mc(ptr<T>(out) + i * out.strides[0], m, n,
                                     Strided(out.strides[1], out.strides[2]));
      if (k == 0) {
        mc.setZero();
      } else {
        mc.noalias() = ma * mb;
      }
      // The epilogue: each product rounded to T, then the bias added in T (one more rounding,
      // as a separate add would).
      if (bias.data)
        mc.rowwise() += Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(ptr<T>(bias), n);
    }
  });
  add_residual(out, epilogue.residual);
}

}  // namespace bg::cpu

namespace bg::cpu {

// The naive algorithm: each output is one fused multiply-add chain over k in order, started
// from zero, in f32 (f64 for f64). The CUDA kernel runs the same chain, so the bits agree.
void matmul_naive(const KView& out, const KView& a, const KView& b, StreamHandle) {
  dispatch_float(a.dtype, "matmul_naive", [&](auto zero) {
    using T = decltype(zero);
    const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
    for (int64_t z = 0; z < batch; ++z)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const T* pa = ptr<T>(a) + z * a.strides[0] + i * a.strides[1];
          const T* pb = ptr<T>(b) + z * b.strides[0] + j * b.strides[2];
          T acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc = std::fma(pa[p * a.strides[2]], pb[p * b.strides[1]], acc);
          ptr<T>(out)[z * out.strides[0] + i * out.strides[1] + j * out.strides[2]] = acc;
        }
  });
}

}  // namespace bg::cpu

namespace bg::cpu {

// The batch-invariant algorithm on the CPU: every output is the naive algorithm's chain (fused
// multiply-adds over k in order from zero), which no M or batch count can change. With a
// unit-stride b row the chains of a whole output row advance together, k outer, so the compiler
// vectorises across the columns; otherwise each chain runs on its own along b's column.
void matmul_batch_invariant(const KView& out, const KView& a, const KView& b,
                            const MatmulEpilogue& epilogue, const BatchInvariantGemm&,
                            StreamHandle stream) {
  check_epilogue(epilogue, out, a.shape[2], "matmul_batch_invariant");
  const KView& bias = epilogue.bias;
  if (b.strides[2] != 1 || b.shape[2] == 1) {
    matmul_naive(out, a, b, stream);
    if (bias.data)
      dispatch_float(out.dtype, "matmul_batch_invariant", [&](auto zero) {
        using T = decltype(zero);
        for (int64_t i = 0; i < out.shape[1]; ++i)
          for (int64_t j = 0; j < out.shape[2]; ++j)
            ptr<T>(out)[i * out.strides[1] + j * out.strides[2]] += ptr<T>(bias)[j];
      });
    return add_residual(out, epilogue.residual);
  }
  dispatch_float(a.dtype, "matmul_batch_invariant", [&](auto zero) {
    using T = decltype(zero);
    const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
    std::vector<T> acc(static_cast<size_t>(n));
    for (int64_t z = 0; z < batch; ++z)
      for (int64_t i = 0; i < m; ++i) {
        std::fill(acc.begin(), acc.end(), T(0));
        const T* pa = ptr<T>(a) + z * a.strides[0] + i * a.strides[1];
        for (int64_t p = 0; p < k; ++p) {
          const T x = pa[p * a.strides[2]];
          const T* pb = ptr<T>(b) + z * b.strides[0] + p * b.strides[1];
          T* acc_row = acc.data();
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) acc_row[j] = std::fma(x, pb[j], acc_row[j]);
        }
        T* po = ptr<T>(out) + z * out.strides[0] + i * out.strides[1];
        const T* pbias = bias.data ? ptr<T>(bias) : nullptr;
        for (int64_t j = 0; j < n; ++j)
          po[j * out.strides[2]] = pbias ? acc[size_t(j)] + pbias[j] : acc[size_t(j)];
      }
  });
  add_residual(out, epilogue.residual);
}

}  // namespace bg::cpu
