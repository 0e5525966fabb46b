// cross_entropy.cpp (CPU): fused log-softmax + NLL per row; keeps only the row's log-sum-exp,
// never the probabilities. Rows whose target is ignore_index get loss 0.
#include <algorithm>
#include <cmath>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {

void cross_entropy_forward(const KView& losses, const KView& lse, const KView& valid,
                           const KView& logits, const KView& targets, int64_t ignore_index,
                           StreamHandle) {
  dispatch_float(logits.dtype, "cross_entropy", [&](auto zero) {
    using T = decltype(zero);
    dispatch_index(targets.dtype, "cross_entropy", [&](auto izero) {
      using I = decltype(izero);
      using Acc = acc_t<T>;
      const int64_t rows = logits.shape[0], vocab = logits.shape[1];
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = int64_t(ptr<I>(targets)[r]);
        const T* l = ptr<T>(logits) + r * vocab;
        double mx = -INFINITY;
        for (int64_t v = 0; v < vocab; ++v) mx = std::max(mx, double(l[v]));
        // In an order fixed by the vocabulary size (not the row's address): batch-invariant.
        const double s =
            fixed_order_sum<double>(vocab, [&](int64_t v) { return std::exp(double(l[v]) - mx); });
        const double row_lse = mx + std::log(s);
        ptr<Acc>(lse)[r] = Acc(row_lse);
        ptr<Acc>(valid)[r] = Acc(t == ignore_index ? 0 : 1);
        if (t == ignore_index) {
          ptr<Acc>(losses)[r] = Acc(0);
          continue;
        }
        if (t < 0 || t >= vocab)
          kernel_fail("cross_entropy", "target " + std::to_string(t) + " out of range [0, " +
                                           std::to_string(vocab) + ")");
        ptr<Acc>(losses)[r] = Acc(row_lse - double(l[t]));
      }
    });
  });
}

void cross_entropy_backward(const KView& dlogits, const KView& logits, const KView& lse,
                            const KView& targets, int64_t ignore_index, const KView& scale,
                            StreamHandle) {
  dispatch_float(logits.dtype, "cross_entropy_backward", [&](auto zero) {
    using T = decltype(zero);
    dispatch_index(targets.dtype, "cross_entropy_backward", [&](auto izero) {
      using I = decltype(izero);
      using Acc = acc_t<T>;
      const int64_t rows = logits.shape[0], vocab = logits.shape[1];
      const double g = *ptr<Acc>(scale);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = int64_t(ptr<I>(targets)[r]);
        const T* l = ptr<T>(logits) + r * vocab;
        T* d = ptr<T>(dlogits) + r * vocab;
        const double row_lse = ptr<Acc>(lse)[r];
        for (int64_t v = 0; v < vocab; ++v) {
          const double p = std::exp(double(l[v]) - row_lse);
          d[v] = t == ignore_index ? T(0) : T(g * (p - (v == t ? 1.0 : 0.0)));
        }
      }
    });
  });
}

}  // namespace bg::cpu
