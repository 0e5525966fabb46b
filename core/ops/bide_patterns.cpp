// bide_patterns.cpp: what BIDE values are as bit patterns: encoding values (round to nearest
// even), value ranges as pattern ranges (the support of bide.range), and the materialised
// log-probability of every pattern that evaluation and plots read.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "../bide.h"
#include "../dispatch.h"

namespace bg {
namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// IEEE binary16, round to nearest even, from a float.
uint32_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f), sign = (x >> 16) & 0x8000u;
  const int32_t exp = int32_t((x >> 23) & 0xFF) - 127 + 15;
  uint32_t mant = x & 0x7FFFFFu;
  if (((x >> 23) & 0xFF) == 0xFF) return sign | 0x7C00u | (mant ? 0x200u : 0u);
  if (exp >= 31) return sign | 0x7C00u;  // overflow to Inf
  if (exp <= 0) {                        // subnormal or zero
    if (exp < -10) return sign;
    mant |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return sign | h;
  }
  uint32_t h = (uint32_t(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return sign | h;
}

uint32_t float_to_bf16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7F800000u) == 0x7F800000u) return (x >> 16) | ((x & 0xFFFFu) ? 0x40u : 0u);
  return (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
}

}  // namespace

bool bide_encode(const BideCode& code, double v, uint32_t* pattern, std::string* why) {
  if (!std::isfinite(v)) {
    *why = "not a finite number";
    return false;
  }
  switch (code.type) {
    case BideValueType::f16:
    case BideValueType::bf16: {
      const uint32_t k = code.type == BideValueType::f16 ? float_to_half_bits(float(v))
                                                         : float_to_bf16_bits(float(v));
      if (!code.finite(k)) {
        *why = str_cat("value ", v, " overflows ",
                       code.type == BideValueType::f16 ? "float16" : "bfloat16");
        return false;
      }
      *pattern = k;
      return true;
    }
    default: {
      const bool sgn = code.type == BideValueType::sint;
      const double lo = sgn ? -std::ldexp(1.0, code.bits - 1) : 0.0;
      const double hi = sgn ? std::ldexp(1.0, code.bits - 1) - 1 : std::ldexp(1.0, code.bits) - 1;
      if (v != std::floor(v) || v < lo || v > hi) {
        *why = str_cat("value ", v, " is not an integer in [", lo, ", ", hi, "]");
        return false;
      }
      *pattern = uint32_t(int64_t(v) & ((int64_t(1) << code.bits) - 1));
      return true;
    }
  }
}

std::vector<std::pair<int64_t, int64_t>> bide_value_range_patterns(const BideCode& code, double lo,
                                                                   double hi) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (!(lo <= hi)) return out;
  auto add = [&](int64_t a, int64_t b) {
    if (a < b) out.emplace_back(a, b);
  };
  if (!code.is_float()) {
    const double vlo = std::ceil(lo), vhi = std::floor(hi);
    const int64_t full = int64_t(1) << code.bits;
    if (code.type == BideValueType::uint) {
      const double a = std::max(vlo, 0.0), b = std::min(vhi, double(full - 1));
      if (a <= b) add(int64_t(a), int64_t(b) + 1);
      return out;
    }
    const int64_t half = full / 2;  // two's complement: [0, half) then -half..-1 at [half, full)
    const double a = std::max(vlo, 0.0), b = std::min(vhi, double(half - 1));
    if (a <= b) add(int64_t(a), int64_t(b) + 1);
    const double c = std::max(vlo, double(-half)), d = std::min(vhi, -1.0);
    if (c <= d) add(int64_t(c) + full, int64_t(d) + full + 1);
    std::sort(out.begin(), out.end());
    return out;
  }
  // Floats: magnitudes grow with the pattern in each sign half; finite magnitudes are the
  // patterns below the first Inf pattern.
  const uint32_t sign = 1u << (code.bits - 1);
  const uint32_t inf = ((1u << code.exponent_bits()) - 1u) << code.mantissa_bits();
  auto first_at_least = [&](double m) {  // smallest magnitude pattern with value >= m
    uint32_t a = 0, b = inf;
    while (a < b) {
      const uint32_t mid = (a + b) / 2;
      if (code.value(mid) >= m)
        b = mid;
      else
        a = mid + 1;
    }
    return int64_t(a);
  };
  auto last_at_most = [&](double m) {  // one past the largest magnitude pattern <= m
    return first_at_least(std::nextafter(m, INFINITY));
  };
  if (hi >= 0) add(first_at_least(std::max(lo, 0.0)), last_at_most(hi));  // +0 .. +max
  if (lo <= 0)  // -0 .. -max, as magnitudes in [max(-hi, 0), -lo]
    add(int64_t(sign) + first_at_least(std::max(-hi, 0.0)), int64_t(sign) + last_at_most(-lo));
  return out;
}

Tensor bide_support_table(const BideCode& code,
                          const std::vector<std::pair<double, double>>& ranges) {
  const int64_t n = int64_t(ranges.size());
  std::vector<int64_t> t(static_cast<size_t>(4 * n), 0);
  for (int64_t i = 0; i < n; ++i) {
    const auto [lo, hi] = ranges[size_t(i)];
    const auto pieces = bide_value_range_patterns(code, lo, hi);
    BG_CHECK(!pieces.empty(), "bide", "value range [", lo, ", ", hi, "] holds no ", code.bits,
             "-bit value of this type");
    for (size_t j = 0; j < pieces.size(); ++j) {
      t[size_t((2 * j) * n + i)] = pieces[j].first;
      t[size_t((2 * j + 1) * n + i)] = pieces[j].second;
    }
  }
  return from_vector(t, {4, n});
}

void bide_set_support(BideOptions& opt, const Tensor& table, Device device) {
  BG_CHECK(table.defined() && !table.is_cuda() && table.ndim() == 2 && table.size(0) == 4 &&
               table.dtype() == DType::i64,
           "bide", "a support table is a (4, N) i64 host tensor");
  const int64_t n = table.size(1), full = int64_t(1) << opt.code.bits;
  const std::vector<int64_t> t = table.contiguous().to_vector<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < 2; ++j) {
      const int64_t a = t[size_t(2 * j * n + i)], b = t[size_t((2 * j + 1) * n + i)];
      BG_CHECK(a >= 0 && a <= b && b <= full, "bide", "support range [", a, ", ", b,
               ") of example ", i, " is not inside [0, ", full, ")");
    }
  opt.ranges_host = table.contiguous();
  opt.ranges = opt.ranges_host.to(device);
}

bool bide_in_support(const BideOptions& opt, int64_t n, uint32_t k) {
  if (!opt.ranges_host.defined()) {
    const int64_t hi = opt.support_hi < 0 ? (int64_t(1) << opt.code.bits) : opt.support_hi;
    return int64_t(k) >= opt.support_lo && int64_t(k) < hi;
  }
  const int64_t cols = opt.ranges_host.size(1);
  const int64_t* t = static_cast<const int64_t*>(opt.ranges_host.data_ptr());
  return (int64_t(k) >= t[n] && int64_t(k) < t[cols + n]) ||
         (int64_t(k) >= t[2 * cols + n] && int64_t(k) < t[3 * cols + n]);
}

Tensor bide_pattern_log_probs(const Tensor& w, const Tensor& r, const BideOptions& opt,
                              int64_t k_begin, int64_t k_end) {
  NoGradGuard ng;
  bide_check(w, r, opt, "bide_pattern_log_probs");
  const int64_t full = int64_t(1) << opt.code.bits;
  if (k_end < 0) k_end = full;
  BG_CHECK(k_begin >= 0 && k_begin < k_end && k_end <= full, "bide_pattern_log_probs",
           "patterns [", k_begin, ", ", k_end, ") are not a non-empty range inside [0, ", full, ")");
  const Tensor log_z = bide_log_normalizer(w, r, opt).to(Device::cpu(), DType::f64);
  const int64_t n = w.size(0), k_all = k_end - k_begin, chunk = std::min<int64_t>(k_all, 8192);
  struct {
    Tensor w, r;
    int64_t hidden;
    bool half;
  } p{compute_input(w.detach()), compute_input(r.detach()), w.size(1),
      w.is_cuda() && opt.precision == SickPrecision::fp16};
  Tensor out = empty({n, k_all}, DType::f64);
  for (int64_t i = 0; i < n; ++i) {
    const Tensor wi = p.w.slice(0, i, i + 1), ri = p.r.slice(0, i, i + 1);
    for (int64_t k0 = 0; k0 < k_all; k0 += chunk) {
      const int64_t c = std::min(chunk, k_all - k0);
      Tensor we = wi.expand({c, p.hidden, opt.code.bits}).contiguous(),
             re = ri.expand({c, p.hidden}).contiguous();
      if (p.half) {  // the same f16 rounding of W and r as the fp16 SICK pass
        we = we.to(DType::f16);
        re = re.to(DType::f16);
      }
      const Tensor ys =
          add_scalar(arange(c, DType::f64), double(k_begin + k0)).to(DType::i64).to(w.device());
      Tensor l = empty({c}, we.dtype(), p.w.device());
      BG_DISPATCH(p.w.device(), bide_logits, l.kview(), we.kview(), re.kview(), ys.kview(),
                  opt.code.bits, null_view(), null_view(), stream_for(p.w.device()));
      out.slice(0, i, i + 1)
          .slice(1, k0, k0 + c)
          .copy_(add_scalar(l.to(Device::cpu(), DType::f64), -log_z.slice(0, i, i + 1).item())
                     .reshape({1, c}));
    }
  }
  // Outside the support a pattern has no mass.
  const bool restricted = opt.ranges_host.defined() || opt.support_lo != 0 || opt.support_hi >= 0;
  if (restricted) {
    double* o = static_cast<double*>(out.data_ptr());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < k_all; ++k)
        if (!bide_in_support(opt, i, uint32_t(k_begin + k))) o[i * k_all + k] = -INFINITY;
  }
  return out;
}

}  // namespace bg
