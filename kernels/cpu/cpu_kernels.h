// cpu_kernels.h: the CPU reference implementation of every kernel (Eigen where it helps),
// declared by kernels/kernel_list.h, whose CUDA twins kernels/cuda/cuda_kernels.h declares from
// the same list.
#pragma once
#include "../attention_dropout.h"
#include "../bide_values.h"
#include "../kernel_types.h"
#include "../lmul.h"
#include "../optimizer_params.h"
#include "../philox.h"

namespace bg::cpu {
#include "../kernel_list.h"
}  // namespace bg::cpu
