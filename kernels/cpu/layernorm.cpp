// layernorm.cpp (CPU): LayerNorm and RMSNorm (rms = true: no mean, no bias) over the last dim.
// Statistics are computed in double; mean/rstd are stored for the backward pass.
#include <cmath>
#include <vector>

#include "cpu_common.h"
#include "cpu_kernels.h"

namespace bg::cpu {

void layernorm_forward(const KView& y, const KView& mean, const KView& rstd, const KView& x,
                       const KView& weight, const KView& bias, double eps, bool rms, StreamHandle) {
  dispatch_float(x.dtype, "layernorm", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const int64_t c = x.shape[x.ndim - 1], rows = x.numel() / c;
    const T* w = ptr<T>(weight);
    const T* b = ptr<T>(bias);
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = ptr<T>(x) + r * c;
      T* yr = ptr<T>(y) + r * c;
      double mu = 0;
      if (!rms) {
        for (int64_t j = 0; j < c; ++j) mu += xr[j];
        mu /= double(c);
      }
      double var = 0;
      for (int64_t j = 0; j < c; ++j) var += (xr[j] - mu) * (xr[j] - mu);
      const double rs = 1.0 / std::sqrt(var / double(c) + eps);
      for (int64_t j = 0; j < c; ++j) {
        double v = (xr[j] - mu) * rs;
        if (w) v *= double(w[j]);
        if (b) v += double(b[j]);
        yr[j] = T(v);
      }
      if (mean.data) ptr<Acc>(mean)[r] = Acc(mu);
      ptr<Acc>(rstd)[r] = Acc(rs);
    }
  });
}

void layernorm_backward(const KView& dx, const KView& dx_addend, const KView& dweight,
                        const KView& dbias, const KView& dy, const KView& x, const KView& weight,
                        const KView& mean, const KView& rstd, bool rms, Scratch&, StreamHandle) {
  dispatch_float(x.dtype, "layernorm_backward", [&](auto zero) {
    using T = decltype(zero);
    using Acc = acc_t<T>;
    const int64_t c = x.shape[x.ndim - 1], rows = x.numel() / c;
    const T* w = ptr<T>(weight);
    std::vector<double> dw(size_t(c), 0.0), db(size_t(c), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = ptr<T>(x) + r * c;
      const T* gr = ptr<T>(dy) + r * c;
      const double mu = rms ? 0.0 : double(ptr<Acc>(mean)[r]);
      const double rs = ptr<Acc>(rstd)[r];
      double mean_g = 0, mean_gx = 0;
      for (int64_t j = 0; j < c; ++j) {
        const double xhat = (xr[j] - mu) * rs;
        const double g = double(gr[j]) * (w ? double(w[j]) : 1.0);
        mean_g += g;
        mean_gx += g * xhat;
        dw[size_t(j)] += double(gr[j]) * xhat;
        db[size_t(j)] += double(gr[j]);
      }
      mean_g /= double(c);
      mean_gx /= double(c);
      if (rms) mean_g = 0;
      T* dxr = ptr<T>(dx) + r * c;
      const T* addr = dx_addend.data ? ptr<T>(dx_addend) + r * c : nullptr;
      for (int64_t j = 0; j < c; ++j) {
        const double xhat = (xr[j] - mu) * rs;
        const double g = double(gr[j]) * (w ? double(w[j]) : 1.0);
        // volatile: the addend must meet dx rounded to T, not an FMA with its last product.
        volatile T own = T(rs * (g - mean_g - xhat * mean_gx));
        dxr[j] = addr ? T(own + addr[j]) : T(own);
      }
    }
    for (int64_t j = 0; j < c; ++j) {
      if (dweight.data) ptr<T>(dweight)[j] = T(dw[size_t(j)]);
      if (dbias.data) ptr<T>(dbias)[j] = T(db[size_t(j)]);
    }
  });
}

}  // namespace bg::cpu
