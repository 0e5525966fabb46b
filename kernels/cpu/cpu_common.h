// cpu_common.h: dtype dispatch and strided iteration shared by the CPU kernels.
#pragma once
#include <Eigen/Core>
#include <type_traits>

#include "../kernel_types.h"

namespace bg::cpu {

// Calls f(T{}) with T = float or double according to dtype; other dtypes are a caller bug.
template <typename F>
void dispatch_float(DType t, const char* op, F&& f) {
  if (t == DType::f32) return f(float{});
  if (t == DType::f64) return f(double{});
  kernel_fail(op, std::string("CPU compute kernels take f32 or f64, got ") + dtype_name(t));
}

template <typename F>
void dispatch_index(DType t, const char* op, F&& f) {
  if (t == DType::i64) return f(int64_t{});
  if (t == DType::i32) return f(int32_t{});
  kernel_fail(op, std::string("indices must be i32 or i64, got ") + dtype_name(t));
}

// Element offset of linear index `i` (row-major over v.shape) in a strided view.
inline int64_t strided_offset(const KView& v, int64_t i) {
  int64_t off = 0;
  for (int d = v.ndim - 1; d >= 0; --d) {
    int64_t q = i / v.shape[d];
    off += (i - q * v.shape[d]) * v.strides[d];
    i = q;
  }
  return off;
}

// Walks a strided view in row-major order with an incremental multi-index (no divisions).
struct StridedWalker {
  const KView& v;
  int64_t idx[kMaxDims] = {};
  int64_t offset = 0;
  explicit StridedWalker(const KView& view) : v(view) {}
  void next() {
    for (int d = v.ndim - 1; d >= 0; --d) {
      offset += v.strides[d];
      if (++idx[d] < v.shape[d]) return;
      offset -= v.strides[d] * v.shape[d];
      idx[d] = 0;
    }
  }
};

// Accumulator/statistics type: f64 inputs keep f64 statistics (for gradient checks), else f32.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The sum of value(0) .. value(n - 1) in an order fixed by n alone: element i goes to lane
// i mod 8, counted from the row's first element, then the lanes are added pairwise. A row's
// result then never depends on where the row starts in memory. Eigen's reductions and its
// vectorised exp/log peel scalar elements up to the first aligned address, so their results
// would depend on a row's place in the batch (tests/test_batch_invariance.cpp).
template <typename A, typename F>
A fixed_order_sum(int64_t n, F&& value) {
  A lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lane[j] += A(value(i + j));
  for (int j = 0; i < n; ++i, ++j) lane[j] += A(value(i));
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

template <typename T>
T* ptr(const KView& v) {
  return static_cast<T*>(v.data);
}

}  // namespace bg::cpu
