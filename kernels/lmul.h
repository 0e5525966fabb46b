// lmul.h: L-Mul (Luo & Sun, "Addition is All You Need", seed 004): a float product made by one
// integer add of the operands' bit patterns, the one definition the CPU and CUDA kernels share
// (so they agree bit for bit). docs/lmul.md states it in full.
//
// For operands with m mantissa bits (fp32: 23; bf16: 7; fp16: 10; fp8-like: 4, 3), in fp32's
// bit layout: |r| = |a| + |b| - offset(m) as integers, sign(r) = sign(a) xor sign(b), where
// offset(m) = 0x3F800000 (the exponent bias) - 2^(23 - l(m)) (the 2^-l(m) term in the mantissa
// field), l(m) = m for m <= 3, 3 for m = 4 and 4 for m > 4: 0x3F780000 for m > 4. A mantissa
// sum that carries into the exponent is part of the method. Operands are first rounded to m
// mantissa bits (to nearest, ties to even; the exponent range stays fp32's); the result then
// has at most m mantissa bits and needs no rounding.
//
// The edge cases the bare integer form gets wrong are handled explicitly:
// - a zero or denormal operand gives +-0 (the xor of the signs); lmul_round flushes denormal
//   operands to zero first, so a denormal times Inf is NaN, as zero times Inf;
// - an exponent sum below the normal range (underflow) gives +-0;
// - one above it (overflow) gives +-Inf, not a saturated finite value;
// - a NaN or Inf operand gives the IEEE product (NaN propagates; Inf x 0 is NaN).
#pragma once
#include <cstdint>
#include <cstring>

#include "elementwise_math.h"

namespace bg {

// The GEMM's fixed summation order (docs/lmul.md): K is cut into chunks of kLmulChunk; each
// chunk's products are added in order from zero, and the chunk sums are added in order from
// zero. It never depends on M, N or the batch, and it lets the GPU spread a long K (a weight
// gradient's tokens) over blocks without changing a bit.
constexpr int64_t kLmulChunk = 1024;

struct LmulParams {
  int mantissa_bits = 23;         // 1..23
  uint32_t offset = 0x3F780000u;  // offset(mantissa_bits)
};

inline int lmul_l(int m) { return m <= 3 ? m : m == 4 ? 3 : 4; }
inline LmulParams lmul_params(int mantissa_bits) {
  LmulParams p;
  p.mantissa_bits = mantissa_bits;
  p.offset = 0x3F800000u - (1u << (23 - lmul_l(mantissa_bits)));
  return p;
}

BG_HD uint32_t lmul_bits_of(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
#endif
}

BG_HD float lmul_float_of(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, 4);
  return x;
#endif
}

// x rounded to m mantissa bits, to nearest with ties to even, in fp32's layout (a carry may
// raise the exponent, up to Inf); a denormal becomes a zero of its sign (L-Mul counts it as
// zero). NaN and Inf pass unchanged.
BG_HD float lmul_round(float x, int m) {
  const uint32_t u = lmul_bits_of(x);
  if ((u & 0x7F800000u) == 0) return lmul_float_of(u & 0x80000000u);
  if (m >= 23 || (u & 0x7F800000u) == 0x7F800000u) return x;
  const int drop = 23 - m;
  const uint32_t half = 1u << (drop - 1), keep_lsb = (u >> drop) & 1u;
  const uint32_t rounded = (u + half - 1u + keep_lsb) & ~((1u << drop) - 1u);
  return lmul_float_of(rounded);
}

// The L-Mul product of operands already rounded to the mantissa width.
BG_HD float lmul(float a, float b, uint32_t offset) {
  const uint32_t ua = lmul_bits_of(a), ub = lmul_bits_of(b);
  const uint32_t sign = (ua ^ ub) & 0x80000000u;
  const uint32_t ma = ua & 0x7FFFFFFFu, mb = ub & 0x7FFFFFFFu;
  if (ma >= 0x7F800000u || mb >= 0x7F800000u) return a * b;              // NaN, Inf: IEEE
  if (ma < 0x00800000u || mb < 0x00800000u) return lmul_float_of(sign);  // zero, denormal
  const uint32_t t = ma + mb;                                // < 2^32: both below 0x7F800000
  if (t < offset + 0x00800000u) return lmul_float_of(sign);  // underflow: +-0
  if (t >= offset + 0x7F800000u) return lmul_float_of(sign | 0x7F800000u);  // overflow: +-Inf
  return lmul_float_of((t - offset) | sign);
}

}  // namespace bg
