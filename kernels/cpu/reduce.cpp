// reduce.cpp (CPU): sum or max over the middle axis of a contiguous (O, R, I) block.
// Sums accumulate in double for f32 inputs: this is the reference the GPU is checked against.
#include <limits>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {

void reduce(ReduceOp op, const KView& out, const KView& in, int64_t outer, int64_t extent,
            int64_t inner, Scratch&, StreamHandle) {
  dispatch_float(in.dtype, "reduce", [&](auto zero) {
    using T = decltype(zero);
    const T* x = ptr<T>(in);
    T* y = ptr<T>(out);
    for (int64_t o = 0; o < outer; ++o) {
      using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      Eigen::Map<const RowMat> block(x + o * extent * inner, extent, inner);
      Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>> res(y + o * inner, inner);
      if (op == ReduceOp::sum) {
        res = block.template cast<double>().colwise().sum().template cast<T>();
      } else if (op == ReduceOp::sum_squares) {
        // The squares in T first, then sum's own expression over them: sum(x * x)'s bits.
        const RowMat squares = block.array().square().matrix();
        res = squares.template cast<double>().colwise().sum().template cast<T>();
      } else if (extent == 0) {
        res.setConstant(-std::numeric_limits<T>::infinity());
      } else {
        res = block.colwise().maxCoeff();
      }
    }
  });
}

}  // namespace bg::cpu
