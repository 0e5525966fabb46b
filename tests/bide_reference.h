// bide_reference.h: the BIDE references the tests compare with: every logit materialised in
// float64 by plain loops, and the model composed from ordinary ops (autograd gradients); and
// the inputs two backends can agree on, W clear of relu's kinks.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "core/bide.h"
#include "core/ops.h"

namespace bg::test {

// The smallest |W[u] . b_k| over every pattern b_k in {-1, +1}^bits of one hidden unit's row
// (float64; the patterns in Gray-code order, each flipping one bit: dot += or -= 2 w_j).
inline double closest_to_kink(const double* w, int bits) {
  double dot = 0;
  for (int j = 0; j < bits; ++j) dot -= w[j];  // pattern 0: every b_j = -1
  double closest = std::fabs(dot);
  uint64_t pattern = 0;
  for (uint64_t step = 1; step < (uint64_t(1) << bits); ++step) {
    const int j = __builtin_ctzll(step);
    pattern ^= uint64_t(1) << j;
    dot += (pattern >> j & 1 ? 2.0 : -2.0) * w[j];
    closest = std::min(closest, std::fabs(dot));
  }
  return closest;
}

// W (n, h, bits) f32, N(0, std), each hidden unit redrawn until every pattern's pre-activation
// W[i, u] . b_k is clear of relu's kink by more than 1e-5 of sum_j |W[i, u, j]|. A float32 dot
// product of that row errs by under bits 2^-24 of the sum in any order, so the CPU and a CUDA
// kernel put every pattern on the same side of the kink: W's gradient is then a smooth function
// both backends must agree on. (Elsewhere a pre-activation one backend rounds to +1e-9 and the
// other to -1e-9 switches a pattern's share of the gradient on or off.) SICK in fp16 rounds W
// itself; its comparisons keep their wider tolerance. Above kMaxKinkFreeBits the draw is plain:
// nearly every unit then has some pattern within the bound (2^bits of them), while a pattern's
// share of the gradient is around 2^-bits, below what the comparisons resolve.
inline constexpr int kMaxKinkFreeBits = 16;
inline Tensor randn_clear_of_kinks(int64_t n, int64_t h, int bits, double std, Generator& gen) {
  if (bits > kMaxKinkFreeBits) return randn({n, h, int64_t(bits)}, gen, 0, std, DType::f32);
  std::vector<float> w;
  w.reserve(size_t(n * h * bits));
  std::vector<double> row(static_cast<size_t>(bits));
  for (int64_t u = 0; u < n * h; ++u) {
    std::vector<float> draw;
    double l1 = 0;
    do {
      draw = randn({bits}, gen, 0, std, DType::f32).to_vector<float>();
      l1 = 0;
      for (int j = 0; j < bits; ++j) {
        row[size_t(j)] = draw[size_t(j)];
        l1 += std::fabs(row[size_t(j)]);
      }
    } while (closest_to_kink(row.data(), bits) <= 1e-5 * l1);
    w.insert(w.end(), draw.begin(), draw.end());
  }
  return from_vector(w, {n, h, int64_t(bits)});
}

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
