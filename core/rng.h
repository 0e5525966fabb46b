// rng.h: a counter-based generator. A Generator is (seed, offset); each random op takes a
// fresh range of counters [offset, offset + n), so results do not depend on device or launch
// shape, and a generator's state is two integers (stored in checkpoints).
#pragma once
#include <cstdint>

#include "kernels/philox.h"

namespace bg {

struct Generator {
  uint64_t seed = 0;
  uint64_t offset = 0;
  // A device u64 the CUDA kernels add to the offsets they are given (nullptr: none): a step
  // captured as a CUDA graph keeps its capture's offsets, and each replay shifts them by the
  // counters taken since (train.cuda_graph with dropout).
  const uint64_t* device_shift = nullptr;
  explicit Generator(uint64_t s = 0) : seed(s) {}
  // Reserves n counters and returns the first. Ranges are 4-aligned (one Philox block each).
  uint64_t take(uint64_t n) {
    const uint64_t first = offset;
    offset += (n + 3) & ~uint64_t(3);
    return first;
  }
};

// One uniform in [0, 1) with 53 random bits, from the generator's next Philox block (the
// sampler's draw: 24 bits would make every draw a multiple of 2^-24).
inline double uniform53(Generator& gen) { return philox_uniform53(gen.seed, gen.take(4) / 4); }

}  // namespace bg
