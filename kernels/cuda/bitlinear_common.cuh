// bitlinear_common.cuh: what BitLinear's quantising kernels share (bitlinear.cu's activation
// quantiser, bitlinear_backward.cu's recomputation of its integers).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace bg::cuda {

// Rounds x to the nearest integer, ties to even, as rintf does, after clamping it to the
// integer range [lo, hi] of act_bits (|lo|, |hi| <= 128): two full-rate adds instead of the
// quarter-rate round and conversions. Adding 1.5 * 2^23 leaves a float whose last place is 1,
// so the add itself rounds, and the integer sits in the low mantissa bits. Clamping before
// rounding equals clamping after, the bounds being integers; a rounded -0 comes out +0, what an
// int8 holds.
constexpr uint32_t kRoundedZero = 0x4B400000;  // the bits of 1.5 * 2^23: integer 0

// The float bits round_clamped reads its integer from: kRoundedZero + q, whose low byte is q as
// an int8 holds it (q in [-128, 127] never borrows from the bytes above).
__device__ __forceinline__ uint32_t rounded_bits(float x, float lo, float hi) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return __float_as_uint(__fadd_rn(fminf(fmaxf(x, lo), hi), kMagic));
}
__device__ __forceinline__ int round_clamped(float x, float lo, float hi) {
  return int(rounded_bits(x, lo, hi) - kRoundedZero);
}
// Four int8s, from rounded_bits of each, as one little-endian word (two byte permutes).
__device__ __forceinline__ uint32_t pack_int8(uint32_t b0, uint32_t b1, uint32_t b2, uint32_t b3) {
  return __byte_perm(__byte_perm(b0, b1, 0x0040), __byte_perm(b2, b3, 0x0040), 0x5410);
}

}  // namespace bg::cuda
