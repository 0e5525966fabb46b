// bide_reference.h: the BIDE references the tests compare with: every logit materialised in
// float64 by plain loops, and the model composed from ordinary ops (autograd gradients).
#pragma once
#include <cmath>
#include <functional>
#include <vector>

#include "core/bide.h"

namespace bg::test {

struct Explicit {
  std::vector<std::vector<double>> logits;  // [n][k]
  std::vector<double> log_z;
};

// Every logit of every example, by plain loops in double; log Z over the patterns `inside`
// accepts (all when empty).
inline Explicit explicit_softmax(const Tensor& w, const Tensor& r, int bits,
                                 const std::function<bool(int64_t n, int64_t k)>& inside) {
  const int64_t n = w.size(0), h = w.size(1), k_all = int64_t(1) << bits;
  const std::vector<double> wv = w.to_vector<double>(), rv = r.to_vector<double>();
  Explicit e;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> l(static_cast<size_t>(k_all));
    double mx = -INFINITY;
    for (int64_t k = 0; k < k_all; ++k) {
      double acc = 0;
      for (int64_t u = 0; u < h; ++u) {
        double z = 0;
        for (int j = 0; j < bits; ++j)
          z += ((k >> j) & 1 ? 1.0 : -1.0) * wv[size_t((i * h + u) * bits + j)];
        acc += rv[size_t(i * h + u)] * std::max(z, 0.0);
      }
      l[size_t(k)] = acc;
      if (!inside || inside(i, k)) mx = std::max(mx, acc);
    }
    double s = 0;
    for (int64_t k = 0; k < k_all; ++k)
      if (!inside || inside(i, k)) s += std::exp(l[size_t(k)] - mx);
    e.logits.push_back(l);
    e.log_z.push_back(mx + std::log(s));
  }
  return e;
}

// Patterns [lo, hi) for every example (hi < 0: all).
inline Explicit explicit_softmax(const Tensor& w, const Tensor& r, int bits, int64_t lo = 0,
                                 int64_t hi = -1) {
  if (hi < 0) return explicit_softmax(w, r, bits, std::function<bool(int64_t, int64_t)>());
  return explicit_softmax(w, r, bits, [=](int64_t, int64_t k) { return k >= lo && k < hi; });
}

// The same model composed from ordinary ops (matmul, relu, log_softmax): autograd gives the
// reference gradients without touching the SICK kernels. `mask` (N, 2^B), when given, is added
// to the logits (0 inside the support, -inf outside).
inline Tensor composed_log_prob(const Tensor& w, const Tensor& r, const Tensor& y, int bits,
                                const Tensor& mask = Tensor()) {
  const int64_t k_all = int64_t(1) << bits;
  std::vector<double> b(size_t(k_all * bits));
  for (int64_t k = 0; k < k_all; ++k)
    for (int j = 0; j < bits; ++j) b[size_t(k * bits + j)] = (k >> j) & 1 ? 1.0 : -1.0;
  const Tensor bm = from_vector(b, {k_all, bits}).to(w.dtype());
  const Tensor z = matmul(bm, w.transpose(1, 2));               // (N, K, H)
  const Tensor l = matmul(relu(z), r.unsqueeze(2)).squeeze(2);  // (N, K)
  const Tensor lp = log_softmax(mask.defined() ? l + mask : l, -1);
  // Picks log p(y) with where, not a one-hot product: -inf * 0 would be NaN.
  std::vector<uint8_t> onehot(size_t(w.size(0) * k_all), 0);
  const std::vector<int64_t> ys = y.to_vector<int64_t>();
  for (size_t i = 0; i < ys.size(); ++i) onehot[i * size_t(k_all) + size_t(ys[i])] = 1;
  const Tensor pick = from_vector(onehot, {w.size(0), k_all}).to(w.device());
  return sum(where(pick, lp, zeros({}, lp.dtype(), lp.device())), {1});
}

inline BideOptions options(int bits, const char* variant,
                           BideValueType type = BideValueType::uint) {
  BideOptions o;
  o.code.bits = bits;
  o.code.type = type;
  BG_CHECK(parse_enum(variant, &o.variant), "test", "unknown SICK variant ", variant);
  return o;
}

}  // namespace bg::test
