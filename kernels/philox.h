// philox.h: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
// Counter-based: element i of a stream (seed, offset) depends only on (seed, offset + i), so the
// CPU and CUDA backends produce the same numbers in any launch shape. Uniforms are exact
// (24-bit integer -> float); normals use Box-Muller in double and round once to float, which
// matches across backends except with probability ~2^-28 per value.
#pragma once
#include <cstdint>

#include "elementwise_math.h"

namespace bg {

struct Philox4 {
  uint32_t v[4];
};

BG_HD uint32_t philox_mulhi(uint32_t a, uint32_t b, uint32_t* lo) {
  uint64_t p = uint64_t(a) * uint64_t(b);
  *lo = uint32_t(p);
  return uint32_t(p >> 32);
}

BG_HD Philox4 philox4x32(uint64_t counter, uint64_t key) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t lo0, lo1;
    uint32_t hi0 = philox_mulhi(0xD2511F53u, c0, &lo0);
    uint32_t hi1 = philox_mulhi(0xCD9E8D57u, c2, &lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Uniform in [0, 1) with 24 random bits: exactly representable, identical everywhere.
BG_HD float philox_uniform(uint64_t seed, uint64_t index) {
  Philox4 r = philox4x32(index >> 2, seed);
  return float(r.v[index & 3] >> 8) * (1.0f / 16777216.0f);
}

// Uniform in [0, 1) with 53 random bits (a double's whole mantissa), from Philox block `block`:
// a draw among many small probabilities (a sampler over 50,257 ids or 65,536 float16 patterns)
// needs more than a float's 24 bits, which would make every draw a multiple of 2^-24.
BG_HD double philox_uniform53(uint64_t seed, uint64_t block) {
  Philox4 r = philox4x32(block, seed);
  const uint64_t a = (uint64_t(r.v[0]) << 21) ^ uint64_t(r.v[1] >> 11);
  return double(a & ((1ULL << 53) - 1)) * (1.0 / 9007199254740992.0);
}

BG_HD double philox_normal(uint64_t seed, uint64_t index) {
  Philox4 r = philox4x32(index, seed ^ 0x5DEECE66DULL);
  // 53-bit uniforms; u1 in (0, 1] so log(u1) is finite.
  uint64_t a = (uint64_t(r.v[0]) << 21) ^ uint64_t(r.v[1] >> 11);
  uint64_t b = (uint64_t(r.v[2]) << 21) ^ uint64_t(r.v[3] >> 11);
  double u1 = (double(a & ((1ULL << 53) - 1)) + 1.0) * (1.0 / 9007199254740992.0);
  double u2 = double(b & ((1ULL << 53) - 1)) * (1.0 / 9007199254740992.0);
  return ::sqrt(-2.0 * ::log(u1)) * ::cos(6.283185307179586 * u2);
}

enum class RandomKind : uint8_t { uniform, normal, bernoulli };

}  // namespace bg
