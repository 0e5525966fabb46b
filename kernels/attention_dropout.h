// attention_dropout.h: which attention probabilities the fused causal attention drops. One
// Philox call gives 8 16-bit uniforms, so a kernel thread holding two adjacent key columns
// in each of four 8-column groups of a query row (the mma accumulator layout) makes one call
// per 32 columns instead of one per value. The CPU reference and the three CUDA kernels
// (forward, dQ, dK/dV) all ask this function, so every pass sees the same mask.
#pragma once
#include <cstdint>

#include "philox.h"

namespace bg {

struct AttentionDropout {
  uint64_t seed = 0;
  uint64_t counter_base = 0;        // first Philox counter (the Generator's offset / 4)
  uint32_t keep_threshold = 65536;  // a value survives when its uniform u16 < threshold
  double keep_scale = 1.0;          // 1 / keep probability (f32 in the CUDA kernels)
  // A device u64 (Generator::device_shift) whose value / 4 the CUDA kernels add to counter_base
  // when they start (resolve_shift); nullptr: none. The CPU takes none.
  const uint64_t* counter_shift = nullptr;
  BG_HD bool active() const { return keep_threshold < 65536; }
#if defined(__CUDACC__)
  __device__ void resolve_shift() {
    if (counter_shift) counter_base += *counter_shift / 4;
    counter_shift = nullptr;
  }
#endif
};

// Philox counters the fused attention of (B*H) heads of T positions uses.
inline uint64_t attention_dropout_counters(int64_t heads, int64_t t) {
  return uint64_t(heads) * uint64_t(t) * uint64_t((t + 31) / 32) * 4;
}

// The counter covering (row = bh * T + q, key column kv): four counters per 32 columns, the
// column pair (kv % 8) / 2 choosing the counter, (kv % 32) / 8 the 32-bit word and kv % 2 the
// 16-bit half.
BG_HD uint64_t attention_dropout_counter(const AttentionDropout& d, int64_t row, int64_t t,
                                         int64_t kv) {
  return d.counter_base + (uint64_t(row) * uint64_t((t + 31) / 32) + uint64_t(kv / 32)) * 4 +
         uint64_t((kv % 8) / 2);
}

BG_HD bool attention_keeps(const AttentionDropout& d, int64_t row, int64_t t, int64_t kv) {
  const Philox4 r = philox4x32(attention_dropout_counter(d, row, t, kv), d.seed);
  const uint32_t word = r.v[(kv % 32) / 8];
  return ((kv & 1) ? word >> 16 : word & 0xFFFFu) < d.keep_threshold;
}

}  // namespace bg
