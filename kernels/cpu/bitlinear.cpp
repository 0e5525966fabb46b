// bitlinear.cpp (CPU): BitNet b1.58's quantisers, the exact int8 product and the dequantiser:
// the reference the CUDA kernels (kernels/cuda/bitlinear.cu, int8_gemm.cu) equal bit for bit.
// Every reduction here follows the order kernel_list.h states, and every rounding is spelled out
// (std::fma where CUDA fuses, nothing left for the compiler to contract).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cpu_common.h"
#include "cpu_kernels.h"
#include "int_rescale.h"

namespace bg::cpu {
namespace {

constexpr int64_t kAbsSumChunk = 4096;  // elements per first-stage partial (CUDA: one block)
constexpr int kTreeWidth = 256;         // threads per block: lanes of each stage's tree
constexpr float kMinScale = 1e-5f;      // BitNet's clamp of both scales

// Sums kTreeWidth f64 lanes by halving strides, as a CUDA block does in shared memory.
double tree_sum(double* lane) {
  for (int stride = kTreeWidth / 2; stride > 0; stride /= 2)
    for (int t = 0; t < stride; ++t) lane[t] += lane[t + stride];
  return lane[0];
}

// Lane t of a stage sums value(t), value(t + 256), ... in order; then the tree.
template <typename F>
double stage_sum(int64_t n, F&& value) {
  double lane[kTreeWidth] = {};
  for (int t = 0; t < kTreeWidth; ++t)
    for (int64_t i = t; i < n; i += kTreeWidth) lane[t] += value(i);
  return tree_sum(lane);
}

// The 32 lane partials of a row folded by an xor butterfly (CUDA's __shfl_xor_sync): every lane
// ends with the same value, lane 0's is returned.
template <typename A>
A butterfly(A* p) {
  for (int off = 16; off > 0; off /= 2) {
    A next[32];
    for (int i = 0; i < 32; ++i) next[i] = p[i] + p[i ^ off];
    std::copy(next, next + 32, p);
  }
  return p[0];
}

template <typename A, typename F>
A lane_sum(int64_t n, F&& term) {  // term(e, acc) -> acc with element e folded in
  A p[32] = {};
  for (int64_t e = 0; e < n; ++e) {
    A& lane = p[(e / 4) % 32];
    lane = term(e, lane);
  }
  return butterfly(p);
}

}  // namespace

namespace {

// ternary_quantize_group's work for one weight.
void ternary_quantize_one(const TernaryTarget& t, TernaryScale method) {
  const KView &wq = t.wq, &w = t.w;
  if (w.dtype != DType::f32 || wq.dtype != DType::i8 || t.beta.dtype != DType::f32)
    kernel_fail("ternary_quantize", "expects f32 weights, i8 output and an f32 scale");
  const int64_t n_rows = wq.shape[0], k = wq.shape[1], row = wq.strides[0], n = n_rows * k;
  const float* src = ptr<float>(w);
  float b = 0.0f;
  if (method == TernaryScale::absmean) {
    const int64_t chunks = (n + kAbsSumChunk - 1) / kAbsSumChunk;
    std::vector<double> partial(size_t(std::max<int64_t>(chunks, 1)), 0.0);
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t base = c * kAbsSumChunk, len = std::min(kAbsSumChunk, n - base);
      partial[size_t(c)] =
          stage_sum(len, [&](int64_t i) { return double(std::fabs(src[base + i])); });
    }
    const double total = stage_sum(chunks, [&](int64_t i) { return partial[size_t(i)]; });
    b = n ? float(total / double(n)) : 0.0f;
  } else {
    std::vector<float> mag(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) mag[size_t(i)] = std::fabs(src[i]);
    if (n) {
      auto mid = mag.begin() + (n - 1) / 2;  // the lower median, as torch.median
      std::nth_element(mag.begin(), mid, mag.end());
      b = *mid;
    }
  }
  b = std::max(b, kMinScale);
  *ptr<float>(t.beta) = b;
  int8_t* dst = ptr<int8_t>(wq);
  for (int64_t r = 0; r < n_rows; ++r) {
    int8_t* out = dst + r * row;
    for (int64_t j = 0; j < k; ++j)
      out[j] = int8_t(std::clamp(std::nearbyint(src[r * k + j] / b), -1.0f, 1.0f));
    std::memset(out + k, 0, size_t(row - k));
  }
  if (t.tilde.data) {  // W~ as int8_dequantize makes it from (wq, beta)
    KView scale{};
    scale.data = &b;
    scale.dtype = DType::f32;
    int8_dequantize(t.tilde, wq, KView{}, scale, nullptr);
  }
}

}  // namespace

void ternary_quantize_group(const TernaryTarget* targets, int count, TernaryScale method, Scratch&,
                            StreamHandle) {
  for (int i = 0; i < count; ++i) ternary_quantize_one(targets[i], method);
}

void act_quantize(const KView& xq, const KView& step, const KView& quant_scale, const KView& mean,
                  const KView& rstd, const KView& x, const ActQuantOptions& opt, StreamHandle) {
  if (xq.dtype != DType::i8) kernel_fail("act_quantize", "xq must be i8");
  dispatch_float(x.dtype, "act_quantize", [&](auto zero) {
    using T = decltype(zero);
    const int64_t m = xq.shape[0], k = xq.shape[1], row = xq.strides[0];
    const T q_max = T((1 << (opt.bits - 1)) - 1), q_min = -q_max - T(1);
    const T eps = T(opt.eps), min_scale = T(kMinScale);
    for (int64_t r = 0; r < m; ++r) {
      const T* xr = ptr<T>(x) + r * k;
      T mu = 0, rs = 1;
      if (opt.norm == BitNorm::layer)
        mu = lane_sum<T>(k, [&](int64_t e, T acc) { return acc + xr[e]; }) / T(k);
      if (opt.norm != BitNorm::none) {
        const T ss =
            lane_sum<T>(k, [&](int64_t e, T acc) { return std::fma(xr[e] - mu, xr[e] - mu, acc); });
        rs = T(1) / std::sqrt(ss / T(k) + eps);
      }
      auto normed = [&](int64_t e) {
        return opt.norm == BitNorm::none ? xr[e] : (xr[e] - mu) * rs;
      };
      T gamma = 0;
      for (int64_t e = 0; e < k; ++e) gamma = std::max(gamma, std::fabs(normed(e)));
      gamma = std::max(gamma, min_scale);
      const T inv = q_max / gamma;
      int8_t* out = ptr<int8_t>(xq) + r * row;
      for (int64_t e = 0; e < k; ++e)
        out[e] = int8_t(std::clamp(std::nearbyint(normed(e) * inv), q_min, q_max));
      std::memset(out + k, 0, size_t(row - k));
      ptr<T>(step)[r] = gamma / q_max;
      if (quant_scale.data) ptr<T>(quant_scale)[r] = inv;
      if (rstd.data) ptr<T>(rstd)[r] = rs;
      if (mean.data) ptr<T>(mean)[r] = mu;
    }
  });
}

void bitlinear_input_backward(const KView& dx, const KView& x_tilde, const KView& dxn,
                              const KView& x, const KView& mean, const KView& rstd,
                              const KView& step, const KView& quant_scale,
                              const ActQuantOptions& opt, StreamHandle stream) {
  // x_tilde from x as act_quantize rounds it (the same expressions), times step as
  // int8_dequantize multiplies; dx by layernorm_backward itself.
  dispatch_float(x.dtype, "bitlinear_input_backward", [&](auto zero) {
    using T = decltype(zero);
    if (x_tilde.dtype != x.dtype)
      kernel_fail("bitlinear_input_backward", "x_tilde must have x's dtype on the CPU");
    const int64_t m = x.shape[0], k = x.shape[1];
    const T q_max = T((1 << (opt.bits - 1)) - 1), q_min = -q_max - T(1);
    for (int64_t r = 0; r < m; ++r) {
      const T* xr = ptr<T>(x) + r * k;
      const T mu = mean.data ? ptr<T>(mean)[r] : T(0), rs = rstd.data ? ptr<T>(rstd)[r] : T(1);
      const T inv = ptr<T>(quant_scale)[r], st = ptr<T>(step)[r];
      T* out = ptr<T>(x_tilde) + r * k;
      for (int64_t e = 0; e < k; ++e) {
        const T normed = opt.norm == BitNorm::none ? xr[e] : (xr[e] - mu) * rs;
        // Through an integer, as x_q is stored: a rounded -0 becomes the +0 an int8 holds.
        const int q = int(std::clamp(std::nearbyint(normed * inv), q_min, q_max));
        out[e] = T(q) * st;
      }
    }
  });
  if (!dx.data) return;
  NoScratch none;  // scratch is for dweight and dbias only
  layernorm_backward(dx, KView(), KView(), KView(), dxn, x, KView(), mean, rstd,
                     opt.norm == BitNorm::rms, none, stream);
}

void int8_linear(const KView& y, const KView& xq, const KView& wq, const KView& step,
                 const KView& beta, const KView& bias, const KView& residual, StreamHandle) {
  using IntMatrix = Eigen::Matrix<int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Int8Map =
      Eigen::Map<const Eigen::Matrix<int8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                 Eigen::OuterStride<>>;
  const int64_t m = xq.shape[0], k = xq.shape[1], n = wq.shape[0];
  const Int8Map a(ptr<int8_t>(xq), m, k, Eigen::OuterStride<>(xq.strides[0]));
  const Int8Map b(ptr<int8_t>(wq), n, k, Eigen::OuterStride<>(wq.strides[0]));
  // Integer products and sums are exact in int32 (|acc| <= 128 K), so Eigen's blocking order
  // cannot change a bit.
  const IntMatrix acc = a.cast<int32_t>() * b.cast<int32_t>().transpose();
  rescale_int_product(y, acc.data(), step, beta, bias, "int8_linear");
  if (!residual.data) return;
  dispatch_float(y.dtype, "int8_linear", [&](auto zero) {  // the add after y's rounding
    using T = decltype(zero);
    for (int64_t i = 0; i < m * n; ++i) ptr<T>(y)[i] = ptr<T>(y)[i] + ptr<T>(residual)[i];
  });
}

void rescale_int_product(const KView& y, const int32_t* acc, const KView& step, const KView& beta,
                         const KView& bias, const char* op) {
  const int64_t m = y.shape[0], n = y.shape[1];
  const float scale = *ptr<float>(beta);
  dispatch_float(y.dtype, op, [&](auto zero) {
    using T = decltype(zero);
    const T* s = ptr<T>(step);
    const T* bv = ptr<T>(bias);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const T t = T(acc[i * n + j]) * s[i];
        ptr<T>(y)[i * n + j] = std::fma(t, T(scale), bv ? bv[j] : T(0));
      }
  });
}

void layernorm_quantize(const KView& y, const KView& mean, const KView& rstd, const KView& x,
                        const KView& weight, const KView& bias, double eps, bool rms,
                        const KView& xq, const KView& step, const KView& quant_scale,
                        const KView& q_mean, const KView& q_rstd, const ActQuantOptions& opt,
                        StreamHandle stream) {
  // The reference is the two kernels in turn; y (the CPU's compute dtype) as act_quantize reads
  // it, (rows, c).
  layernorm_forward(y, mean, rstd, x, weight, bias, eps, rms, stream);
  act_quantize(xq, step, quant_scale, q_mean, q_rstd, as_rows(y, x.ndim ? x.shape[x.ndim - 1] : 1),
               opt, stream);
}

void int8_dequantize(const KView& out, const KView& q, const KView& row_scale,
                     const KView& tensor_scale, StreamHandle) {
  dispatch_float(out.dtype, "int8_dequantize", [&](auto zero) {
    using T = decltype(zero);
    const int64_t r = q.shape[0], c = q.shape[1];
    const T* rs = ptr<T>(row_scale);
    const float* ts = ptr<float>(tensor_scale);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        T v = T(ptr<int8_t>(q)[i * q.strides[0] + j]);
        if (rs) v = v * rs[i];
        if (ts) v = v * T(*ts);
        ptr<T>(out)[i * c + j] = v;
      }
  });
}

void pack_ternary(const KView& packed, const KView& wq, StreamHandle) {
  const int64_t n = wq.shape[0], k = wq.shape[1], bytes = packed.shape[1];
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < bytes; ++j) {
      uint8_t b = 0;
      for (int i = 0; i < 4; ++i) {
        const int64_t e = 4 * j + i;
        const int code = e < k ? ptr<int8_t>(wq)[r * wq.strides[0] + e] + 1 : 1;
        b = uint8_t(b | (code << (2 * i)));
      }
      ptr<uint8_t>(packed)[r * bytes + j] = b;
    }
}

void unpack_ternary(const KView& wq, const KView& packed, StreamHandle) {
  const int64_t n = wq.shape[0], k = wq.shape[1], row = wq.strides[0], bytes = packed.shape[1];
  for (int64_t r = 0; r < n; ++r)
    for (int64_t e = 0; e < row; ++e)
      ptr<int8_t>(wq)[r * row + e] =
          e < k ? int8_t(((ptr<uint8_t>(packed)[r * bytes + e / 4] >> (2 * (e % 4))) & 3) - 1) : 0;
}

}  // namespace bg::cpu
