// w2a8_common.cuh: the W2A8 kernels' weight layout (w2a8.cu's GEMV and mma.sync GEMM,
// w2a8_wgmma.cu's Hopper GEMM; w2_layout makes it from the export layout). Per weight row,
// blocks of 128 k of 32 bytes; in block h the u32 at byte 8t + 4u holds, at bits 8j + 2s, the
// code w + 1 of k = 128h + 64u + 16s + 4t + j. So (word >> 2s) & 0x03030303 is four codes, one
// per byte, in the order an int8 MMA's fragments want them: thread t of a quad holds
// k = 4t..4t+3 (s even) and 16 + 4t.. (s odd) of each 32-k step.
#pragma once
#include <cstdint>

namespace bg::cuda::w2a8 {

constexpr uint32_t kCodeMask = 0x03030303u;  // four codes, one a byte, from (word >> 2s)
constexpr int kBlockK = 128, kBlockBytes = 32;

}  // namespace bg::cuda::w2a8
