// reference.h: independent float64 references written as plain loops over host vectors (no
// bitgrad kernels involved), for the op harness's forward checks.
#pragma once
#include <cmath>
#include <functional>
#include <vector>

#include "core/ops.h"

namespace bg::test::ref {

inline std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
inline Tensor make(const std::vector<double>& v, const Shape& s) { return from_vector(v, s); }

inline Tensor map(const Tensor& x, const std::function<double(double)>& f) {
  std::vector<double> v = vals(x);
  for (double& e : v) e = f(e);
  return make(v, x.shape());
}

// Multi-index of linear index i in shape s.
inline std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (int d = int(s.size()) - 1; d >= 0; --d) {
    idx[size_t(d)] = i % s[size_t(d)];
    i /= s[size_t(d)];
  }
  return idx;
}
// Element of x at out-index `idx` under right-aligned broadcasting.
inline double at_broadcast(const std::vector<double>& xv, const Shape& xs,
                           const std::vector<int64_t>& idx) {
  int64_t off = 0, mult = 1;
  const int lead = int(idx.size()) - int(xs.size());
  for (int d = int(xs.size()) - 1; d >= 0; --d) {
    const int64_t i = xs[size_t(d)] == 1 ? 0 : idx[size_t(d + lead)];
    off += i * mult;
    mult *= xs[size_t(d)];
  }
  return xv[size_t(off)];
}

inline Tensor binary(const Tensor& a, const Tensor& b,
                     const std::function<double(double, double)>& f) {
  const size_t n = std::max(a.shape().size(), b.shape().size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.shape().size() ? 1 : a.shape()[i - (n - a.shape().size())];
    const int64_t db = i < n - b.shape().size() ? 1 : b.shape()[i - (n - b.shape().size())];
    out[i] = std::max(da, db);
  }
  const std::vector<double> av = vals(a), bv = vals(b);
  std::vector<double> r(size_t(shape_numel(out)));
  for (size_t i = 0; i < r.size(); ++i) {
    const auto idx = unravel(int64_t(i), out);
    r[i] = f(at_broadcast(av, a.shape(), idx), at_broadcast(bv, b.shape(), idx));
  }
  return make(r, out);
}

inline Tensor matmul2d(const Tensor& a, const Tensor& b) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const std::vector<double> av = vals(a), bv = vals(b);
  std::vector<double> r(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        r[size_t(i * n + j)] += av[size_t(i * k + p)] * bv[size_t(p * n + j)];
  return make(r, {m, n});
}

// Reduce over `dims` (sorted, non-negative) with keepdim = false.
inline Tensor reduce(const Tensor& x, const std::vector<int>& dims, bool is_max) {
  Shape out;
  for (int d = 0; d < x.ndim(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) out.push_back(x.shape()[size_t(d)]);
  std::vector<double> r(size_t(shape_numel(out)), is_max ? -INFINITY : 0.0);
  const std::vector<double> xv = vals(x);
  for (size_t i = 0; i < xv.size(); ++i) {
    const auto idx = unravel(int64_t(i), x.shape());
    int64_t o = 0;
    for (int d = 0; d < x.ndim(); ++d)
      if (std::find(dims.begin(), dims.end(), d) == dims.end())
        o = o * x.shape()[size_t(d)] + idx[size_t(d)];
    r[size_t(o)] = is_max ? std::max(r[size_t(o)], xv[i]) : r[size_t(o)] + xv[i];
  }
  return make(r, out);
}

// Row-wise softmax / log-softmax over the last dim.
inline Tensor softmax_rows(const Tensor& x, bool log) {
  const int64_t c = x.size(-1), rows = x.numel() / c;
  std::vector<double> v = vals(x);
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, s = 0;
    for (int64_t j = 0; j < c; ++j) mx = std::max(mx, v[size_t(r * c + j)]);
    for (int64_t j = 0; j < c; ++j) s += std::exp(v[size_t(r * c + j)] - mx);
    for (int64_t j = 0; j < c; ++j) {
      double& e = v[size_t(r * c + j)];
      e = log ? e - mx - std::log(s) : std::exp(e - mx) / s;
    }
  }
  return make(v, x.shape());
}

inline Tensor layernorm_rows(const Tensor& x, const Tensor& w, const Tensor& b, double eps,
                             bool rms) {
  const int64_t c = x.size(-1), rows = x.numel() / c;
  std::vector<double> v = vals(x);
  const std::vector<double> wv = w.defined() ? vals(w) : std::vector<double>(size_t(c), 1.0);
  const std::vector<double> bv = b.defined() ? vals(b) : std::vector<double>(size_t(c), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    if (!rms) {
      for (int64_t j = 0; j < c; ++j) mu += v[size_t(r * c + j)];
      mu /= double(c);
    }
    for (int64_t j = 0; j < c; ++j)
      var += (v[size_t(r * c + j)] - mu) * (v[size_t(r * c + j)] - mu);
    const double rs = 1.0 / std::sqrt(var / double(c) + eps);
    for (int64_t j = 0; j < c; ++j) {
      double& e = v[size_t(r * c + j)];
      e = (e - mu) * rs * wv[size_t(j)] + bv[size_t(j)];
    }
  }
  return make(v, x.shape());
}

}  // namespace bg::test::ref
