// softmax.cpp (CPU): softmax / log_softmax over contiguous rows (the last dim), max-shifted,
// with an optional logit scale and causal mask (SoftmaxOptions).
#include <algorithm>
#include <cmath>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {
namespace {

// Columns row r may see: all, or i + offset + 1 for row i = r mod T of a causal (T, S) matrix
// (offset S - T unless given).
int64_t visible_columns(const SoftmaxOptions& opt, int64_t r, int64_t cols) {
  if (opt.causal_rows <= 0) return cols;
  const int64_t offset = opt.causal_offset >= 0 ? opt.causal_offset : cols - opt.causal_rows;
  return std::min(cols, r % opt.causal_rows + offset + 1);
}

}  // namespace

// Plain loops with std::exp and fixed_order_sum: a row's bits depend on its values alone, not
// on its address (Eigen's vectorised exp and sums would peel to alignment).
void softmax_forward(const KView& y, const KView& x, const SoftmaxOptions& opt, StreamHandle) {
  dispatch_float(x.dtype, "softmax", [&](auto zero) {
    using T = decltype(zero);
    const int64_t cols = x.shape[x.ndim - 1], rows = x.numel() / (cols ? cols : 1);
    const T scale = T(opt.scale);
    for (int64_t r = 0; r < rows; ++r) {
      const T* in = ptr<T>(x) + r * cols;
      T* out = ptr<T>(y) + r * cols;
      const int64_t n = std::max<int64_t>(0, visible_columns(opt, r, cols));
      T mx = -INFINITY;
      for (int64_t i = 0; i < n; ++i) mx = std::max(mx, in[i] * scale);
      const T lse = n > 0 ? std::log(fixed_order_sum<T>(
                                n, [&](int64_t i) { return std::exp(in[i] * scale - mx); }))
                          : T(0);
      for (int64_t i = 0; i < n; ++i)
        out[i] = opt.log ? in[i] * scale - mx - lse : std::exp(in[i] * scale - mx - lse);
      for (int64_t i = n; i < cols; ++i) out[i] = T(0);
    }
  });
}

void softmax_backward(const KView& dx, const KView& y, const KView& dy, const SoftmaxOptions& opt,
                      StreamHandle) {
  dispatch_float(y.dtype, "softmax_backward", [&](auto zero) {
    using T = decltype(zero);
    const int64_t cols = y.shape[y.ndim - 1], rows = y.numel() / (cols ? cols : 1);
    const T scale = T(opt.scale);
    for (int64_t r = 0; r < rows; ++r) {
      const T* yr = ptr<T>(y) + r * cols;
      const T* gr = ptr<T>(dy) + r * cols;
      T* res = ptr<T>(dx) + r * cols;
      const int64_t n = std::max<int64_t>(0, visible_columns(opt, r, cols));
      if (opt.log) {  // dx = scale (dy - softmax * sum(dy))
        const T sg = fixed_order_sum<T>(n, [&](int64_t i) { return gr[i]; });
        for (int64_t i = 0; i < n; ++i) res[i] = scale * (gr[i] - std::exp(yr[i]) * sg);
      } else {  // dx = scale y (dy - sum(dy * y))
        const T sgy = fixed_order_sum<T>(n, [&](int64_t i) { return gr[i] * yr[i]; });
        for (int64_t i = 0; i < n; ++i) res[i] = scale * yr[i] * (gr[i] - sgy);
      }
      for (int64_t i = n; i < cols; ++i) res[i] = T(0);
    }
  });
}

}  // namespace bg::cpu
