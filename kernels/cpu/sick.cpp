// sick.cpp (CPU): the reference SICK pass. Per example, patterns are visited in blocks of
// kBlock: Z = b W^T (bruteforce, an Eigen GEMM) or z1[k_lo] + z2[k_hi] (precomputed), then
// h = relu(Z), l = h r, and an online softmax (running max m, sum s, with every accumulator
// rescaled when m grows). The K-sums of Appendix C are two more GEMMs per block:
// gr += h^T e and gw += (e * 1[Z > 0])^T b. Never more than one block of logits is held.
// Accumulation is in double whatever the input dtype: this is what the GPU is checked against.
// f32 inputs with the precomputed variant take sick_fast_example (float, vectorised, threaded).
#include <immintrin.h>

#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {
namespace {

constexpr int64_t kBlock = 256;
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VecD = Eigen::VectorXd;

// The pass's rows (ranges and outputs); row n reads W row n % W's rows.
int64_t sick_rows(const SickArgs& a) {
  const int64_t rows = a.rows ? a.rows : a.w.shape[0];
  if (rows && (a.w.shape[0] == 0 || rows % a.w.shape[0]))
    kernel_fail("sick", "rows must be a multiple of W's rows");
  return rows;
}

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
  const int64_t n_ex = sick_rows(a), hid = a.w.shape[1], w_rows = a.w.shape[0];
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
    const MatD w = load_matrix<T>(a.w, (n % w_rows) * hid * bits, hid, bits);  // (H, B)
    const VecD r = load_matrix<T>(a.r, (n % w_rows) * hid, hid, 1).col(0);
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
    if (a.logz.data) ptr<Acc>(a.logz)[n] = Acc(m + std::log(s));
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

// The fast f32 path of the precomputed variant. Patterns are visited one k_hi row at a time
// (2^lo_bits patterns sharing the high half): Z = z1 + z2[k_hi] for the whole row, then
// vectorised relu / GEMV / exp over it. The gradient K-sums never touch the full bit matrix:
// since b_kj depends only on k_lo for low bits and only on k_hi for high bits,
//   gw[i][j] = sum_klo b_lo[klo][j] Qlo[klo][i]   and   sum_khi b_hi[khi][j] Qhi[khi][i],
// with Qlo/Qhi the marginal sums of q = e 1[z > 0] over the other half. ~6 flops per
// (pattern, hidden unit) instead of 2B + 4.
void sick_fast_example(const SickArgs& a, int64_t n) {
  const int64_t hid = a.w.shape[1];
  const int bits = a.code.bits, lb = bits / 2, hb = bits - lb;
  const int64_t full = int64_t(1) << bits, rows_lo = int64_t(1) << lb, rows_hi = int64_t(1) << hb;
  const bool want_grad = a.outputs & kSickGrad, want_stats = a.outputs & kSickStats,
             want_sample = a.outputs & kSickSample;
  const int64_t lo = a.lo.data ? ptr<int64_t>(a.lo)[n] : 0,
                hi = a.hi.data ? ptr<int64_t>(a.hi)[n] : full;
  if (lo < 0 || hi > full || lo > hi) kernel_fail("sick", "pattern range outside [0, 2^bits)");
  const float* w = ptr<float>(a.w) + (n % a.w.shape[0]) * hid * bits;
  const float* r = ptr<float>(a.r) + (n % a.w.shape[0]) * hid;
  // Transposed tables: z1t[i][k_lo], z2t[i][k_hi], so inner loops run over patterns. Every
  // buffer starts on a 32-byte boundary: Eigen's vectorised exp and sum (and GCC's simd
  // reductions) peel scalar elements up to the first aligned one, and a heap address that moved
  // with the batch around the example (or the thread it ran on) would move those sums' bits.
  using AlignedVec = std::vector<float, Eigen::aligned_allocator<float>>;
  AlignedVec z1t(static_cast<size_t>(hid * rows_lo)), z2t(static_cast<size_t>(hid * rows_hi));
  // table[i][k] = sum_j (+-1 by bit j of k) W[i][first + j] over `count` bits.
  auto fill_table = [&](AlignedVec& table, int first, int count) {
    const int64_t rows = int64_t(1) << count;
    for (int64_t i = 0; i < hid; ++i)
      for (int64_t k = 0; k < rows; ++k) {
        float z = 0.f;
        for (int j = 0; j < count; ++j) z += ((k >> j) & 1 ? 1.f : -1.f) * w[i * bits + first + j];
        table[size_t(i * rows + k)] = z;
      }
  };
  fill_table(z1t, 0, lb);
  fill_table(z2t, lb, hb);
  AlignedVec qlo_t, qhi_t, gr, l(static_cast<size_t>(rows_lo)), e(static_cast<size_t>(rows_lo));
  if (want_grad) {
    qlo_t.assign(size_t(hid * rows_lo), 0.f);
    qhi_t.assign(size_t(hid * rows_hi), 0.f);
    gr.assign(size_t(hid), 0.f);
  }
  float m = -std::numeric_limits<float>::infinity(), s = 0.f, best = m;
  int64_t best_k = lo;
  double st[4] = {0, 0, 0, 0};
  for (int64_t kh = lo >> lb; lo < hi && kh <= (hi - 1) >> lb; ++kh) {
    const int64_t a0 = std::max(lo, kh << lb) - (kh << lb),
                  a1 = std::min(hi, (kh + 1) << lb) - (kh << lb);
    const int64_t cnt = a1 - a0;
    float* lp = l.data();
    std::fill_n(lp, cnt, 0.f);
    int64_t i0 = 0;
#if defined(__AVX2__) && defined(__FMA__)
    for (; i0 + 4 <= hid; i0 += 4) {  // four hidden rows per pass over l
      const float* z1[4];
      __m256 z2v[4], rv[4];
      for (int u = 0; u < 4; ++u) {
        z1[u] = z1t.data() + (i0 + u) * rows_lo + a0;
        z2v[u] = _mm256_set1_ps(z2t[size_t((i0 + u) * rows_hi + kh)]);
        rv[u] = _mm256_set1_ps(r[i0 + u]);
      }
      const __m256 zero = _mm256_setzero_ps();
      int64_t k = 0;
      for (; k + 8 <= cnt; k += 8) {
        __m256 acc = _mm256_loadu_ps(lp + k);
        for (int u = 0; u < 4; ++u)
          acc = _mm256_fmadd_ps(
              rv[u], _mm256_max_ps(_mm256_add_ps(_mm256_loadu_ps(z1[u] + k), z2v[u]), zero), acc);
        _mm256_storeu_ps(lp + k, acc);
      }
      for (; k < cnt; ++k)
        for (int u = 0; u < 4; ++u)
          lp[k] += r[i0 + u] * std::max(z1[u][k] + z2t[size_t((i0 + u) * rows_hi + kh)], 0.f);
    }
#endif
    for (int64_t i = i0; i < hid; ++i) {  // l += r_i relu(z1 + z2[kh])
      const float* z1 = z1t.data() + i * rows_lo + a0;
      const float z2 = z2t[size_t(i * rows_hi + kh)], ri = r[i];
      for (int64_t k = 0; k < cnt; ++k) lp[k] += ri * std::max(z1[k] + z2, 0.f);
    }
    float block_max = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : block_max)
    for (int64_t k = 0; k < cnt; ++k) block_max = std::max(block_max, lp[k]);
    // Lazy rescaling: the reference point m moves only when a block exceeds it by more than
    // kSlack, so e = exp(l - m) stays below e^8 while the big Q tables are rescaled rarely.
    constexpr float kSlack = 8.f;
    if (block_max > m + kSlack || m == -std::numeric_limits<float>::infinity()) {
      const float scale = std::exp(m - block_max);
      s *= scale;
      for (double& x : st) x *= scale;
      if (want_grad) {
        for (float& x : qlo_t) x *= scale;
        for (float& x : qhi_t) x *= scale;
        for (float& x : gr) x *= scale;
      }
      m = block_max;
    }
    Eigen::Map<Eigen::ArrayXf> ev(e.data(), cnt);
    ev = (Eigen::Map<const Eigen::ArrayXf>(lp, cnt) - m).exp();
    s += ev.sum();
    if (want_grad) {
      const float* ep = e.data();
      for (int64_t i = 0; i < hid; ++i) {
        const float* z1 = z1t.data() + i * rows_lo + a0;
        float* ql = qlo_t.data() + i * rows_lo + a0;
        const float z2 = z2t[size_t(i * rows_hi + kh)];
        float qsum = 0.f, gsum = 0.f;
        int64_t k = 0;
#if defined(__AVX2__) && defined(__FMA__)
        // Explicit 8-lane accumulators: GCC keeps `omp simd` reduction lanes in memory here
        // (4x slower). Lane sums are combined in a fixed order: deterministic.
        __m256 qv = _mm256_setzero_ps(), gv = _mm256_setzero_ps();
        const __m256 z2v = _mm256_set1_ps(z2), zero = _mm256_setzero_ps();
        for (; k + 8 <= cnt; k += 8) {
          const __m256 z = _mm256_add_ps(_mm256_loadu_ps(z1 + k), z2v);
          const __m256 q =
              _mm256_and_ps(_mm256_cmp_ps(z, zero, _CMP_GT_OQ), _mm256_loadu_ps(ep + k));
          _mm256_storeu_ps(ql + k, _mm256_add_ps(_mm256_loadu_ps(ql + k), q));
          qv = _mm256_add_ps(qv, q);
          gv = _mm256_fmadd_ps(q, z, gv);
        }
        alignas(32) float qa[8], ga[8];
        _mm256_store_ps(qa, qv);
        _mm256_store_ps(ga, gv);
        for (int u = 0; u < 8; ++u) {
          qsum += qa[u];
          gsum += ga[u];
        }
#endif
        for (; k < cnt; ++k) {
          const float z = z1[k] + z2;
          const float q = z > 0.f ? ep[k] : 0.f;
          ql[k] += q;
          qsum += q;
          gsum += q * z;
        }
        qhi_t[size_t(i * rows_hi + kh)] += qsum;
        gr[size_t(i)] += gsum;
      }
    }
    if (want_stats || want_sample) {
      for (int64_t k = 0; k < cnt; ++k) {
        const uint32_t pat = uint32_t((kh << lb) + a0 + k);
        if (want_stats) {
          st[0] += double(e[size_t(k)]) * double(lp[k]);
          if (a.code.finite(pat)) {
            const double v = a.code.value(pat);
            st[1] += e[size_t(k)];
            st[2] += e[size_t(k)] * v;
            st[3] += e[size_t(k)] * v * v;
          }
        }
        if (want_sample) {
          const float key = lp[k] + sick_gumbel(a.seed, uint64_t(n), pat);
          if (key > best) {
            best = key;
            best_k = pat;
          }
        }
      }
    }
  }
  ptr<float>(a.m)[n] = m;
  ptr<float>(a.s)[n] = s;
  if (a.logz.data) ptr<float>(a.logz)[n] = m + std::log(s);
  if (want_grad) {
    for (int64_t i = 0; i < hid; ++i) {
      ptr<float>(a.gr)[n * hid + i] = gr[size_t(i)];
      for (int j = 0; j < bits; ++j) {
        const bool low = j < lb;
        const float* q = low ? qlo_t.data() + i * rows_lo : qhi_t.data() + i * rows_hi;
        const int64_t rows = low ? rows_lo : rows_hi;
        const int jj = low ? j : j - lb;
        float acc = 0.f;
#pragma omp simd reduction(+ : acc)
        for (int64_t k = 0; k < rows; ++k) acc += ((k >> jj) & 1 ? 1.f : -1.f) * q[k];
        ptr<float>(a.gw)[(n * hid + i) * bits + j] = acc;
      }
    }
  }
  if (want_stats)
    for (int c = 0; c < 4; ++c) ptr<float>(a.stats)[n * 4 + c] = float(st[c]);
  if (want_sample) ptr<int64_t>(a.sample)[n] = best_k;
}

}  // namespace

void sick_forward(const SickArgs& args, Scratch&, StreamHandle) {
  if (args.code.bits < 1 || args.code.bits > 24) kernel_fail("sick", "bits must be in [1, 24]");
  if (args.w.dtype == DType::f32 && args.precomputed && args.code.bits >= 2) {
    // Examples are independent: split them over the cores (each example's sums stay in one
    // thread, in a fixed order, so the result does not depend on the thread count).
    const int64_t n_ex = sick_rows(args);
    const int threads =
        int(std::min<int64_t>(n_ex, std::max(1u, std::thread::hardware_concurrency())));
    std::vector<std::thread> pool;
    std::exception_ptr error;
    std::mutex mu;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        try {
          // exp(l - m) underflows into subnormals for most patterns; x86 handles those in
          // microcode (5x slower overall). Flush them to zero in this worker only.
          const unsigned csr = _mm_getcsr();
          _mm_setcsr(csr | 0x8040u);  // FTZ | DAZ
          for (int64_t n = t; n < n_ex; n += threads) sick_fast_example(args, n);
          _mm_setcsr(csr);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu);
          error = std::current_exception();
        }
      });
    for (auto& th : pool) th.join();
    if (error) std::rethrow_exception(error);
    return;
  }
  dispatch_float(args.w.dtype, "sick", [&](auto zero) { sick_typed<decltype(zero)>(args); });
}

// z = sum_j (+-1 by bit j of k) w[j]: one hidden unit's pre-activation at pattern k.
template <typename T>
double pattern_z(const T* w, uint64_t k, int bits) {
  double z = 0;
  for (int j = 0; j < bits; ++j) z += ((k >> j) & 1u ? 1.0 : -1.0) * double(w[j]);
  return z;
}

void bide_logits(const KView& l, const KView& w, const KView& r, const KView& y, int bits,
                 const KView& logz, const KView& logp, StreamHandle) {
  dispatch_float(w.dtype, "bide_logits", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const int64_t n_ex = w.shape[0], hid = w.shape[1];
    for (int64_t n = 0; n < n_ex; ++n) {
      const uint64_t k = uint64_t(ptr<int64_t>(y)[n]);
      double logit = 0;
      for (int64_t i = 0; i < hid; ++i)
        logit += double(ptr<T>(r)[n * hid + i]) *
                 std::max(pattern_z(ptr<T>(w) + (n * hid + i) * bits, k, bits), 0.0);
      if (logz.data)
        ptr<Acc>(logp)[n] = Acc(logit - double(ptr<Acc>(logz)[n]));
      else
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
        const double z = pattern_z(wi, k, bits);
        const double ri = double(ptr<T>(r)[n * hid + i]);
        ptr<T>(dr)[n * hid + i] =
            T(gn * (std::max(z, 0.0) - double(ptr<Acc>(gr)[n * hid + i]) * inv_s));
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
