// int_rescale.h: the one float step of BitLinear's integer products on the CPU, shared by
// int8_linear, w2a8_linear and bitplane_linear so that they round alike:
// y[i][j] = fma(T(acc[i][j]) * step[i], T(beta), bias[j] or 0), in y's dtype (f32 or f64).
#pragma once
#include <cstdint>

#include "../kernel_types.h"

namespace bg::cpu {

// acc is (M, N) row-major int32; y (M, N) contiguous; bias may be a null view.
void rescale_int_product(const KView& y, const int32_t* acc, const KView& step, const KView& beta,
                         const KView& bias, const char* op);

}  // namespace bg::cpu
