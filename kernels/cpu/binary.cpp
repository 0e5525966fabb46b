// binary.cpp (CPU): broadcasting add/sub/mul/div/maximum/minimum and comparisons (u8 out).
#include "../elementwise_math.h"
#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {

void binary_forward(BinaryOp op, const KView& out, const KView& a, const KView& b, StreamHandle) {
  dispatch_float(a.dtype, "binary", [&](auto zero) {
    using T = decltype(zero);
    const T* pa = ptr<T>(a);
    const T* pb = ptr<T>(b);
    const int64_t n = out.numel();
    StridedWalker wa(a), wb(b);
    if (binary_is_comparison(op)) {
      uint8_t* po = ptr<uint8_t>(out);
      for (int64_t i = 0; i < n; ++i, wa.next(), wb.next())
        po[i] = uint8_t(binary_scalar<T>(op, pa[wa.offset], pb[wb.offset]) != T(0));
    } else {
      T* po = ptr<T>(out);
      for (int64_t i = 0; i < n; ++i, wa.next(), wb.next())
        po[i] = binary_scalar<T>(op, pa[wa.offset], pb[wb.offset]);
    }
  });
}

void where_forward(const KView& out, const KView& cond, const KView& a, const KView& b,
                   StreamHandle) {
  dispatch_float(a.dtype, "where", [&](auto zero) {
    using T = decltype(zero);
    const uint8_t* pc = ptr<uint8_t>(cond);
    const T* pa = ptr<T>(a);
    const T* pb = ptr<T>(b);
    T* po = ptr<T>(out);
    StridedWalker wc(cond), wa(a), wb(b);
    for (int64_t i = 0, n = out.numel(); i < n; ++i, wc.next(), wa.next(), wb.next())
      po[i] = pc[wc.offset] ? pa[wa.offset] : pb[wb.offset];
  });
}

}  // namespace bg::cpu
