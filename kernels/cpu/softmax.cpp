// softmax.cpp (CPU): softmax / log_softmax over contiguous rows (the last dim), max-shifted,
// with an optional logit scale and causal mask (SoftmaxOptions).
#include <algorithm>
#include <cmath>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {
namespace {

// Columns row r may see: all, or i + S - T + 1 for row i = r mod T of a causal (T, S) matrix.
int64_t visible_columns(const SoftmaxOptions& opt, int64_t r, int64_t cols) {
  if (opt.causal_rows <= 0) return cols;
  return std::min(cols, r % opt.causal_rows + cols - opt.causal_rows + 1);
}

}  // namespace

void softmax_forward(const KView& y, const KView& x, const SoftmaxOptions& opt, StreamHandle) {
  dispatch_float(x.dtype, "softmax", [&](auto zero) {
    using T = decltype(zero);
    using RowMat = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const int64_t cols = x.shape[x.ndim - 1], rows = x.numel() / (cols ? cols : 1);
    Eigen::Map<const RowMat> in(ptr<T>(x), rows, cols);
    Eigen::Map<RowMat> out(ptr<T>(y), rows, cols);
    const T scale = T(opt.scale);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t n = visible_columns(opt, r, cols);
      if (n <= 0) {
        out.row(r).setZero();
        continue;
      }
      auto z = in.row(r).head(n) * scale;
      const T mx = z.maxCoeff();
      const T lse = std::log((z - mx).exp().sum());
      if (opt.log) {
        out.row(r).head(n) = z - mx - lse;
      } else {
        out.row(r).head(n) = (z - mx - lse).exp();
      }
      out.row(r).tail(cols - n).setZero();
    }
  });
}

void softmax_backward(const KView& dx, const KView& y, const KView& dy, const SoftmaxOptions& opt,
                      StreamHandle) {
  dispatch_float(y.dtype, "softmax_backward", [&](auto zero) {
    using T = decltype(zero);
    using RowMat = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const int64_t cols = y.shape[y.ndim - 1], rows = y.numel() / (cols ? cols : 1);
    Eigen::Map<const RowMat> out(ptr<T>(y), rows, cols), g(ptr<T>(dy), rows, cols);
    Eigen::Map<RowMat> res(ptr<T>(dx), rows, cols);
    const T scale = T(opt.scale);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t n = std::max<int64_t>(0, visible_columns(opt, r, cols));
      auto gr = g.row(r).head(n);
      auto yr = out.row(r).head(n);
      if (opt.log) {  // dx = scale (dy - softmax * sum(dy))
        res.row(r).head(n) = scale * (gr - yr.exp() * gr.sum());
      } else {  // dx = scale y (dy - sum(dy * y))
        res.row(r).head(n) = scale * yr * (gr - (gr * yr).sum());
      }
      res.row(r).tail(cols - n).setZero();
    }
  });
}

}  // namespace bg::cpu
