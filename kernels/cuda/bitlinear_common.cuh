// bitlinear_common.cuh: what BitLinear's quantising kernels share (bitlinear.cu's activation
// quantiser, bitlinear_backward.cu's recomputation of its integers).
#pragma once
#include <cuda_runtime.h>

namespace bg::cuda {

// Rounds x to the nearest integer, ties to even, as rintf does, after clamping it to the
// integer range [lo, hi] of act_bits (|lo|, |hi| <= 128): two full-rate adds instead of the
// quarter-rate round and conversions. Adding 1.5 * 2^23 leaves a float whose last place is 1,
// so the add itself rounds, and the integer sits in the low mantissa bits. Clamping before
// rounding equals clamping after, the bounds being integers; a rounded -0 comes out +0, what an
// int8 holds.
__device__ __forceinline__ int round_clamped(float x, float lo, float hi) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return __float_as_int(__fadd_rn(fminf(fmaxf(x, lo), hi), kMagic)) - 0x4B400000;
}

}  // namespace bg::cuda
