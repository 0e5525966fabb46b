// softmax.cpp (CPU): softmax / log_softmax over contiguous rows (the last dim), max-shifted.
#include <cmath>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {

void softmax_forward(const KView& y, const KView& x, bool log, StreamHandle) {
  dispatch_float(x.dtype, "softmax", [&](auto zero) {
    using T = decltype(zero);
    using RowMat = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const int64_t cols = x.shape[x.ndim - 1], rows = x.numel() / (cols ? cols : 1);
    Eigen::Map<const RowMat> in(ptr<T>(x), rows, cols);
    Eigen::Map<RowMat> out(ptr<T>(y), rows, cols);
    for (int64_t r = 0; r < rows; ++r) {
      const T mx = in.row(r).maxCoeff();
      auto shifted = in.row(r) - mx;
      const T lse = std::log(shifted.exp().sum());
      if (log) {
        out.row(r) = shifted - lse;
      } else {
        out.row(r) = (shifted - lse).exp();
      }
    }
  });
}

void softmax_backward(const KView& dx, const KView& y, const KView& dy, bool log, StreamHandle) {
  dispatch_float(y.dtype, "softmax_backward", [&](auto zero) {
    using T = decltype(zero);
    using RowMat = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const int64_t cols = y.shape[y.ndim - 1], rows = y.numel() / (cols ? cols : 1);
    Eigen::Map<const RowMat> out(ptr<T>(y), rows, cols), g(ptr<T>(dy), rows, cols);
    Eigen::Map<RowMat> res(ptr<T>(dx), rows, cols);
    for (int64_t r = 0; r < rows; ++r) {
      if (log) {  // dx = dy - softmax * sum(dy)
        res.row(r) = g.row(r) - out.row(r).exp() * g.row(r).sum();
      } else {  // dx = y * (dy - sum(dy * y))
        res.row(r) = out.row(r) * (g.row(r) - (g.row(r) * out.row(r)).sum());
      }
    }
  });
}

}  // namespace bg::cpu
