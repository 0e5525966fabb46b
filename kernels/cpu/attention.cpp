// attention.cpp (CPU): the fused causal attention's reference, one query row at a time:
// scores s_j = scale q.k_j over keys j <= i, p = softmax(s), y = sum_j p_j z_j v_j with z the
// AttentionDropout mask (0 or 1/keep). The backward recomputes p from the saved log-sum-exp:
// dp_j = z_j dy.v_j, ds_j = p_j (dp_j - dy.y), dq = scale sum_j ds_j k_j, dk_j += scale ds_j q,
// dv_j += p_j z_j dy. dy.y equals sum_j p_j dp_j because y already carries the mask.
#include <cmath>
#include <vector>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {
namespace {

// Row t of head (b, h) of a (B, H, T, D) view with unit stride along D.
template <typename T>
struct Heads {
  T* data;
  int64_t sb, sh, st;
  explicit Heads(const KView& v)
      : data(static_cast<T*>(v.data)), sb(v.strides[0]), sh(v.strides[1]), st(v.strides[2]) {}
  T* row(int64_t b, int64_t h, int64_t t) const { return data + b * sb + h * sh + t * st; }
};

void check_heads(const KView& v, const char* what) {
  if (v.ndim != 4 || v.strides[3] != 1)
    kernel_fail("attention", std::string(what) + " must be a (B, H, T, D) view with unit stride D");
}

template <typename T>
T dot(const T* a, const T* b, int64_t n) {
  T s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Dropout factor z of (row, key): 1 without dropout, else 0 or 1/keep.
template <typename T>
T keep_factor(const AttentionDropout& drop, int64_t row, int64_t t, int64_t kv) {
  if (!drop.active()) return T(1);
  return attention_keeps(drop, row, t, kv) ? T(drop.keep_scale) : T(0);
}

}  // namespace

void attention_forward(const KView& y, const KView& lse, const KView& q, const KView& k,
                       const KView& v, double scale, const AttentionDropout& drop, StreamHandle) {
  if (drop.counter_shift) kernel_fail("attention", "a device counter shift is CUDA's alone");
  for (const KView* x : {&y, &q, &k, &v}) check_heads(*x, "q, k, v and y");
  dispatch_float(q.dtype, "attention", [&](auto zero) {
    using T = decltype(zero);
    const Heads<T> Y(y), Q(q), K(k), V(v);
    T* lse_out = ptr<T>(lse);
    const int64_t nb = q.shape[0], nh = q.shape[1], nt = q.shape[2], d = q.shape[3];
    std::vector<T> p(static_cast<size_t>(nt));
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t h = 0; h < nh; ++h)
        for (int64_t i = 0; i < nt; ++i) {
          const int64_t row = (b * nh + h) * nt + i;
          T mx = -INFINITY;
          for (int64_t j = 0; j <= i; ++j) {
            p[size_t(j)] = T(scale) * dot(Q.row(b, h, i), K.row(b, h, j), d);
            mx = std::max(mx, p[size_t(j)]);
          }
          T sum = 0;
          for (int64_t j = 0; j <= i; ++j) sum += p[size_t(j)] = std::exp(p[size_t(j)] - mx);
          lse_out[row] = mx + std::log(sum);
          T* out = Y.row(b, h, i);
          for (int64_t c = 0; c < d; ++c) out[c] = 0;
          for (int64_t j = 0; j <= i; ++j) {
            const T w = p[size_t(j)] / sum * keep_factor<T>(drop, row, nt, j);
            if (w == 0) continue;
            const T* vj = V.row(b, h, j);
            for (int64_t c = 0; c < d; ++c) out[c] += w * vj[c];
          }
        }
  });
}

void attention_backward(const KView& dq, const KView& dk, const KView& dv, const KView& delta,
                        const KView& q, const KView& k, const KView& v, const KView& y,
                        const KView& dy, const KView& lse, double scale,
                        const AttentionDropout& drop, StreamHandle) {
  if (drop.counter_shift) kernel_fail("attention", "a device counter shift is CUDA's alone");
  for (const KView* x : {&dq, &dk, &dv, &q, &k, &v, &y, &dy}) check_heads(*x, "attention views");
  dispatch_float(q.dtype, "attention", [&](auto zero) {
    using T = decltype(zero);
    const Heads<T> DQ(dq), DK(dk), DV(dv), Q(q), K(k), V(v), Y(y), DY(dy);
    const T* lse_in = ptr<T>(lse);
    T* delta_out = ptr<T>(delta);
    const int64_t nb = q.shape[0], nh = q.shape[1], nt = q.shape[2], d = q.shape[3];
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t h = 0; h < nh; ++h) {
        for (int64_t j = 0; j < nt; ++j)
          for (int64_t c = 0; c < d; ++c) DK.row(b, h, j)[c] = DV.row(b, h, j)[c] = 0;
        for (int64_t i = 0; i < nt; ++i) {
          const int64_t row = (b * nh + h) * nt + i;
          const T* qi = Q.row(b, h, i);
          const T* dyi = DY.row(b, h, i);
          const T di = delta_out[row] = dot(dyi, Y.row(b, h, i), d);
          T* dqi = DQ.row(b, h, i);
          for (int64_t c = 0; c < d; ++c) dqi[c] = 0;
          for (int64_t j = 0; j <= i; ++j) {
            const T* kj = K.row(b, h, j);
            const T p = std::exp(T(scale) * dot(qi, kj, d) - lse_in[row]);
            const T z = keep_factor<T>(drop, row, nt, j);
            const T ds = p * (z * dot(dyi, V.row(b, h, j), d) - di) * T(scale);
            T* dkj = DK.row(b, h, j);
            T* dvj = DV.row(b, h, j);
            for (int64_t c = 0; c < d; ++c) {
              dqi[c] += ds * kj[c];
              dkj[c] += ds * qi[c];
              dvj[c] += p * z * dyi[c];
            }
          }
        }
      }
  });
}

}  // namespace bg::cpu
