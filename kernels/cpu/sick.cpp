// sick.cpp (CPU): the reference SICK pass. Per example, patterns are visited in blocks of
// kBlock: Z = b W^T (bruteforce, an Eigen GEMM) or z1[k_lo] + z2[k_hi] (precomputed), then
// h = relu(Z), l = h r, and an online softmax (running max m, sum s, with every accumulator
// rescaled when m grows). The K-sums of Appendix C are two more GEMMs per block:
// gr += h^T e and gw += (e * 1[Z > 0])^T b. Never more than one block of logits is held.
// Accumulation is in double whatever the input dtype: this is what the GPU is checked against.
#include <cmath>
#include <limits>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {
namespace {

constexpr int64_t kBlock = 256;
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VecD = Eigen::VectorXd;

// Rows of +-1 bits for patterns [k0, k0 + rows), LSB first.
MatD bit_rows(int64_t k0, int64_t rows, int bits) {
  MatD b(rows, bits);
  for (int64_t i = 0; i < rows; ++i)
    for (int j = 0; j < bits; ++j) b(i, j) = ((uint64_t(k0 + i) >> j) & 1u) ? 1.0 : -1.0;
  return b;
}

template <typename T>
MatD load_matrix(const KView& v, int64_t offset, int64_t rows, int64_t cols) {
  MatD out(rows, cols);
  const T* p = ptr<T>(v) + offset;
  for (int64_t i = 0; i < rows * cols; ++i) out.data()[i] = double(p[i]);
  return out;
}

template <typename T>
void sick_typed(const SickArgs& a) {
  const int64_t n_ex = a.w.shape[0], hid = a.w.shape[1];
  const int bits = a.code.bits;
  const int64_t full = int64_t(1) << bits;
  const bool want_grad = a.outputs & kSickGrad, want_stats = a.outputs & kSickStats,
             want_sample = a.outputs & kSickSample;
  const int lo_bits = bits / 2, hi_bits = bits - lo_bits;
  for (int64_t n = 0; n < n_ex; ++n) {
    const int64_t lo = a.lo.data ? ptr<int64_t>(a.lo)[n] : 0;
    const int64_t hi = a.hi.data ? ptr<int64_t>(a.hi)[n] : full;
    if (lo < 0 || hi > full || lo > hi)
      kernel_fail("sick", "pattern range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                              ") is not inside [0, 2^" + std::to_string(bits) + ")");
    const MatD w = load_matrix<T>(a.w, n * hid * bits, hid, bits);  // (H, B)
    const VecD r = load_matrix<T>(a.r, n * hid, hid, 1).col(0);
    MatD z1, z2;  // precomputed halves: (2^lo_bits, H) and (2^hi_bits, H)
    if (a.precomputed) {
      z1 = bit_rows(0, int64_t(1) << lo_bits, lo_bits) * w.leftCols(lo_bits).transpose();
      z2 = bit_rows(0, int64_t(1) << hi_bits, hi_bits) * w.rightCols(hi_bits).transpose();
    }
    double m = -std::numeric_limits<double>::infinity(), s = 0, best = -m;
    best = -std::numeric_limits<double>::infinity();
    int64_t best_k = lo;
    VecD gr = VecD::Zero(hid);
    MatD gw = MatD::Zero(hid, bits);
    double st[4] = {0, 0, 0, 0};
    for (int64_t k0 = lo; k0 < hi; k0 += kBlock) {
      const int64_t rows = std::min(kBlock, hi - k0);
      const MatD b = bit_rows(k0, rows, bits);
      MatD z(rows, hid);
      if (a.precomputed) {
        for (int64_t i = 0; i < rows; ++i) {
          const uint64_t k = uint64_t(k0 + i);
          z.row(i) = z1.row(int64_t(k & ((1u << lo_bits) - 1u))) + z2.row(int64_t(k >> lo_bits));
        }
      } else {
        z.noalias() = b * w.transpose();
      }
      const MatD h = z.cwiseMax(0.0);
      const VecD l = h * r;
      const double block_max = l.maxCoeff();
      if (block_max > m) {
        const double scale = std::exp(m - block_max);  // 0 on the first block
        s *= scale;
        gr *= scale;
        gw *= scale;
        for (double& x : st) x *= scale;
        m = block_max;
      }
      const VecD e = (l.array() - m).exp().matrix();
      s += e.sum();
      if (want_grad) {
        gr.noalias() += h.transpose() * e;
        const MatD q = (z.array() > 0.0).select(e.replicate(1, hid), 0.0);
        gw.noalias() += q.transpose() * b;
      }
      for (int64_t i = 0; i < rows; ++i) {
        const uint32_t k = uint32_t(k0 + i);
        if (want_stats) {
          st[0] += e[i] * l[i];
          if (a.code.finite(k)) {
            const double v = a.code.value(k);
            st[1] += e[i];
            st[2] += e[i] * v;
            st[3] += e[i] * v * v;
          }
        }
        if (want_sample) {
          const double key = l[i] + double(sick_gumbel(a.seed, uint64_t(n), k));
          if (key > best) {
            best = key;
            best_k = k;
          }
        }
      }
    }
    using Acc = acc_t<T>;
    ptr<Acc>(a.m)[n] = Acc(m);
    ptr<Acc>(a.s)[n] = Acc(s);
    if (want_grad) {
      for (int64_t i = 0; i < hid; ++i) {
        ptr<Acc>(a.gr)[n * hid + i] = Acc(gr[i]);
        for (int j = 0; j < bits; ++j) ptr<Acc>(a.gw)[(n * hid + i) * bits + j] = Acc(gw(i, j));
      }
    }
    if (want_stats)
      for (int c = 0; c < 4; ++c) ptr<Acc>(a.stats)[n * 4 + c] = Acc(st[c]);
    if (want_sample) ptr<int64_t>(a.sample)[n] = best_k;
  }
}

}  // namespace

void sick_forward(const SickArgs& args, Scratch&, StreamHandle) {
  if (args.code.bits < 1 || args.code.bits > 24) kernel_fail("sick", "bits must be in [1, 24]");
  dispatch_float(args.w.dtype, "sick", [&](auto zero) { sick_typed<decltype(zero)>(args); });
}

void bide_logits(const KView& l, const KView& w, const KView& r, const KView& y, int bits, StreamHandle) {
  dispatch_float(w.dtype, "bide_logits", [&](auto zero) {
    using T = decltype(zero);
    const int64_t n_ex = w.shape[0], hid = w.shape[1];
    for (int64_t n = 0; n < n_ex; ++n) {
      const uint64_t k = uint64_t(ptr<int64_t>(y)[n]);
      double logit = 0;
      for (int64_t i = 0; i < hid; ++i) {
        double z = 0;
        for (int j = 0; j < bits; ++j)
          z += ((k >> j) & 1u ? 1.0 : -1.0) * double(ptr<T>(w)[(n * hid + i) * bits + j]);
        logit += double(ptr<T>(r)[n * hid + i]) * std::max(z, 0.0);
      }
      ptr<T>(l)[n] = T(logit);
    }
  });
}

void bide_log_prob_backward(const KView& dw, const KView& dr, const KView& w, const KView& r,
                            const KView& y, const KView& gw, const KView& gr, const KView& s,
                            const KView& g, int bits, StreamHandle) {
  dispatch_float(w.dtype, "bide_log_prob_backward", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const int64_t n_ex = w.shape[0], hid = w.shape[1];
    for (int64_t n = 0; n < n_ex; ++n) {
      const uint64_t k = uint64_t(ptr<int64_t>(y)[n]);
      const double gn = double(ptr<T>(g)[n]), inv_s = 1.0 / double(ptr<Acc>(s)[n]);
      for (int64_t i = 0; i < hid; ++i) {
        const T* wi = ptr<T>(w) + (n * hid + i) * bits;
        double z = 0;
        for (int j = 0; j < bits; ++j) z += ((k >> j) & 1u ? 1.0 : -1.0) * double(wi[j]);
        const double ri = double(ptr<T>(r)[n * hid + i]);
        ptr<T>(dr)[n * hid + i] = T(gn * (std::max(z, 0.0) - double(ptr<Acc>(gr)[n * hid + i]) * inv_s));
        for (int j = 0; j < bits; ++j) {
          const double by = (k >> j) & 1u ? 1.0 : -1.0;
          const double expect = double(ptr<Acc>(gw)[(n * hid + i) * bits + j]) * inv_s;
          ptr<T>(dw)[(n * hid + i) * bits + j] = T(gn * ri * ((z > 0 ? by : 0.0) - expect));
        }
      }
    }
  });
}

}  // namespace bg::cpu
