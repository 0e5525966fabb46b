// bide_values.h: what a BIDE bit pattern means. A value of B bits is read as the unsigned
// pattern k in [0, 2^B); bit j (LSB first) becomes b_j = +1 if set, -1 if not. The value type
// says how k decodes to a number (float16, bfloat16, unsigned or two's-complement integers)
// and gives the natural order used by CDFs: for floats, sign-magnitude, so negative patterns
// run in reverse; NaN/Inf patterns (exponent all ones) sit outside the order.
#pragma once
#include <cmath>
#include <cstdint>

#include "elementwise_math.h"
#include "philox.h"

namespace bg {

enum class BideValueType : uint8_t { f16, bf16, uint, sint };

struct BideCode {
  BideValueType type = BideValueType::uint;
  int bits = 16;

  BG_HD uint32_t count() const { return 1u << bits; }
  BG_HD bool is_float() const { return type == BideValueType::f16 || type == BideValueType::bf16; }
  BG_HD int exponent_bits() const { return type == BideValueType::f16 ? 5 : 8; }
  BG_HD int mantissa_bits() const { return type == BideValueType::f16 ? 10 : 7; }

  BG_HD bool finite(uint32_t k) const {
    if (!is_float()) return true;
    const uint32_t exp_mask = ((1u << exponent_bits()) - 1u) << mantissa_bits();
    return (k & exp_mask) != exp_mask;
  }

  BG_HD double value(uint32_t k) const {
    switch (type) {
      case BideValueType::uint:
        return double(k);
      case BideValueType::sint:
        return (k >> (bits - 1)) ? double(int64_t(k) - (int64_t(1) << bits)) : double(k);
      default: {
        const int mb = mantissa_bits(), eb = exponent_bits();
        const uint32_t mant = k & ((1u << mb) - 1u);
        const uint32_t e = (k >> mb) & ((1u << eb) - 1u);
        const double sign = (k >> 15) ? -1.0 : 1.0;
        const int bias = (1 << (eb - 1)) - 1;
        if (e == uint32_t((1 << eb) - 1)) return mant ? NAN : sign * INFINITY;
        if (e == 0) return sign * ldexp(double(mant), 1 - bias - mb);
        return sign * ldexp(double(mant | (1u << mb)), int(e) - bias - mb);
      }
    }
  }

  // Monotone key: key(a) < key(b) iff value(a) < value(b) (for finite patterns; -0 < +0).
  BG_HD uint32_t order_key(uint32_t k) const {
    const uint32_t sign = 1u << (bits - 1);
    if (type == BideValueType::uint) return k;
    if (type == BideValueType::sint) return k ^ sign;
    return (k & sign) ? (~k & (count() - 1u)) : (k | sign);
  }
  BG_HD uint32_t from_order_key(uint32_t key) const {
    const uint32_t sign = 1u << (bits - 1);
    if (type == BideValueType::uint) return key;
    if (type == BideValueType::sint) return key ^ sign;
    return (key & sign) ? (key & ~sign) : (~key & (count() - 1u));
  }

  // log of the width of the value's bucket (for densities): 2^(E - bias - mantissa bits) for
  // normal floats, the subnormal spacing for E = 0; 0 (width 1) for integers.
  BG_HD double log_bucket_width(uint32_t k) const {
    if (!is_float()) return 0.0;
    const int mb = mantissa_bits(), eb = exponent_bits(), bias = (1 << (eb - 1)) - 1;
    const int e = int((k >> mb) & ((1u << eb) - 1u));
    return double((e == 0 ? 1 : e) - bias - mb) * 0.6931471805599453;
  }
};

// Flags for one fused SICK pass.
enum SickOutputs : uint32_t {
  kSickGrad = 1,    // gr = sum e_k h_k (N, H), gw = sum e_k 1[z_k > 0] b_k (N, H, B)
  kSickStats = 2,   // stats (N, 4): sum e l, sum_finite e, sum_finite e v, sum_finite e v^2
  kSickSample = 4,  // sample (N): argmax_k l_k + Gumbel_k (an exact draw from the softmax)
};

// Gumbel noise for pattern k of example n: one Philox stream per (seed, n).
BG_HD float sick_gumbel(uint64_t seed, uint64_t n, uint32_t k) {
  const Philox4 r = philox4x32((n << 32) | k, seed ^ 0x6A09E667F3BCC909ULL);
  const float u = (float(r.v[0] >> 8) + 0.5f) * (1.0f / 16777216.0f);
  return -logf(-logf(u));
}

}  // namespace bg

namespace bg {

// One fused SICK pass (see kernels/cpu/sick.cpp). All views contiguous.
struct SickArgs {
  KView w, r;    // (N, H, B), (N, H)
  KView lo, hi;  // (N) i64 pattern ranges [lo, hi); data == nullptr: [0, 2^B)
  KView m, s;    // (N): max logit and sum of exp(l - m) over the range
  KView gr, gw;  // kSickGrad: (N, H), (N, H, B)
  KView stats;   // kSickStats: (N, 4)
  KView sample;  // kSickSample: (N) i64
  BideCode code;
  uint32_t outputs = 0;       // SickOutputs flags
  uint64_t seed = 0;          // kSickSample
  bool precomputed = false;   // z from tables over bit groups instead of b . W^T
  bool half_compute = false;  // CUDA: round W and r to f16 in registers (sick.dtype fp16)
  bool one_slice = false;     // CUDA: one CTA slice per example whatever N (batch invariance)
  KView logz;                 // optional (N): log Z = m + log s, written by the pass itself
  // Rows of ranges and outputs when they outnumber W's: row n reads W and r row n % N, so
  // several ranges of one example's law need no copies of W (0: N rows).
  int64_t rows = 0;
};

}  // namespace bg
