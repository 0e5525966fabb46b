// lmul.cpp (CPU): the reference of MatmulAlgo::lmul (kernels/lmul.h): L-Mul products summed in
// the fixed order (chunks of kLmulChunk k, each a chain from zero; the chunk sums a chain from
// zero), operands rounded to the mantissa width first; the CUDA kernel
// (kernels/cuda/lmul_gemm.cu) gives the same bits.
#include <algorithm>
#include <vector>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {

void matmul_lmul(const KView& out, const KView& a, const KView& b, const LmulParams& p, Scratch&,
                 StreamHandle) {
  if (a.dtype != DType::f32 || b.dtype != DType::f32 || out.dtype != DType::f32)
    kernel_fail("matmul_lmul", "L-Mul multiplies f32 operands (rounded to the mantissa width)");
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  std::vector<float> row(static_cast<size_t>(k)), cols(static_cast<size_t>(n * k));
  for (int64_t z = 0; z < batch; ++z) {
    for (int64_t j = 0; j < n; ++j)  // b's columns rounded once, contiguous along k
      for (int64_t q = 0; q < k; ++q)
        cols[size_t(j * k + q)] = lmul_round(
            ptr<float>(b)[z * b.strides[0] + q * b.strides[1] + j * b.strides[2]], p.mantissa_bits);
    for (int64_t i = 0; i < m; ++i) {
      const float* pa = ptr<float>(a) + z * a.strides[0] + i * a.strides[1];
      for (int64_t q = 0; q < k; ++q)
        row[size_t(q)] = lmul_round(pa[q * a.strides[2]], p.mantissa_bits);
      for (int64_t j = 0; j < n; ++j) {
        const float* col = cols.data() + j * k;
        float total = 0.0f;
        for (int64_t c0 = 0; c0 < k; c0 += kLmulChunk) {
          float chunk = 0.0f;
          for (int64_t q = c0; q < std::min(k, c0 + kLmulChunk); ++q)
            chunk = chunk + lmul(row[size_t(q)], col[q], p.offset);
          total = total + chunk;
        }
        ptr<float>(out)[z * out.strides[0] + i * out.strides[1] + j * out.strides[2]] = total;
      }
    }
  }
}

}  // namespace bg::cpu
