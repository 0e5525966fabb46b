// rng.h: a counter-based generator. A Generator is (seed, offset); each random op takes a
// fresh range of counters [offset, offset + n), so results do not depend on device or launch
// shape, and a generator's state is two integers (stored in checkpoints).
#pragma once
#include <cstdint>

namespace bg {

struct Generator {
  uint64_t seed = 0;
  uint64_t offset = 0;
  explicit Generator(uint64_t s = 0) : seed(s) {}
  // Reserves n counters and returns the first. Ranges are 4-aligned (one Philox block each).
  uint64_t take(uint64_t n) {
    const uint64_t first = offset;
    offset += (n + 3) & ~uint64_t(3);
    return first;
  }
};

}  // namespace bg
