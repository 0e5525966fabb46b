// layernorm_rows.h: which of layernorm_backward's kernels takes a row (layernorm.cu decides it
// here), for a kernel that must give its dx bits, bit for bit (bitlinear_backward.cu).
#pragma once
#include <cstdint>

#include "../kernel_types.h"

namespace bg::cuda {

// True when layernorm_backward computes dx of rows c wide with its block-per-row kernel, whose
// sums run in another order than the warp-per-row kernel's (f32 rows of 2048 to 8192).
bool layernorm_backward_block_rows(DType x, int64_t c);

}  // namespace bg::cuda
