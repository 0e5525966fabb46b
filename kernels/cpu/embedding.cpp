// embedding.cpp (CPU): row gather, and its backward as a scatter-add in token order.
#include <string>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {

void embedding_forward(const KView& out, const KView& weight, const KView& idx, StreamHandle) {
  dispatch_float(weight.dtype, "embedding", [&](auto zero) {
    using T = decltype(zero);
    dispatch_index(idx.dtype, "embedding", [&](auto izero) {
      using I = decltype(izero);
      const int64_t n = idx.numel(), vocab = weight.shape[0], c = weight.shape[1];
      for (int64_t i = 0; i < n; ++i) {
        const int64_t row = int64_t(ptr<I>(idx)[i]);
        if (row < 0 || row >= vocab)
          kernel_fail("embedding", "index " + std::to_string(row) + " out of range [0, " +
                                       std::to_string(vocab) + ")");
        std::copy_n(ptr<T>(weight) + row * c, c, ptr<T>(out) + i * c);
      }
    });
  });
}

void embedding_backward(const KView& dweight, const KView& dout, const KView& idx, Scratch&,
                        StreamHandle) {
  dispatch_float(dweight.dtype, "embedding_backward", [&](auto zero) {
    using T = decltype(zero);
    dispatch_index(idx.dtype, "embedding_backward", [&](auto izero) {
      using I = decltype(izero);
      const int64_t n = idx.numel(), c = dweight.shape[1];
      std::fill_n(ptr<T>(dweight), dweight.numel(), T(0));
      for (int64_t i = 0; i < n; ++i) {
        T* dst = ptr<T>(dweight) + int64_t(ptr<I>(idx)[i]) * c;
        const T* src = ptr<T>(dout) + i * c;
        for (int64_t j = 0; j < c; ++j) dst[j] += src[j];
      }
    });
  });
}

}  // namespace bg::cpu
