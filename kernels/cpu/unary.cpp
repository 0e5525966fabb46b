// unary.cpp (CPU): exp/log/tanh/relu/gelu/silu/sigmoid/neg/sqrt/rsqrt/abs/affine and their
// backward; the scalar formulas live in elementwise_math.h, shared with the CUDA kernels.
#include "../elementwise_math.h"
#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {

void unary_forward(UnaryOp op, const KView& out, const KView& x, double a, double b, StreamHandle) {
  dispatch_float(x.dtype, "unary", [&](auto zero) {
    using T = decltype(zero);
    Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> in(ptr<T>(x), x.numel());
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> res(ptr<T>(out), out.numel());
    const T ta = T(a), tb = T(b);
    res = in.unaryExpr([=](T v) { return unary_scalar<T>(op, v, ta, tb); });
  });
}

void unary_backward(UnaryOp op, const KView& dx, const KView& x, const KView& y, const KView& dy,
                    double a, StreamHandle) {
  dispatch_float(dy.dtype, "unary_backward", [&](auto zero) {
    using T = decltype(zero);
    const T* px = ptr<T>(x);
    const T* py = ptr<T>(y);
    const T* pdy = ptr<T>(dy);
    T* pdx = ptr<T>(dx);
    const T ta = T(a);
    for (int64_t i = 0, n = dx.numel(); i < n; ++i)
      pdx[i] = unary_scalar_grad<T>(op, px ? px[i] : T(0), py ? py[i] : T(0), pdy[i], ta);
  });
}

}  // namespace bg::cpu
