// cuda_kernels.h: the CUDA kernels, one .cu per op, declared by kernels/kernel_list.h (the
// same list kernels/cpu/cpu_kernels.h declares for the CPU).
#pragma once
#include "../attention_dropout.h"
#include "../bide_values.h"
#include "../kernel_types.h"
#include "../lmul.h"
#include "../optimizer_params.h"
#include "../philox.h"

namespace bg::cuda {
#include "../kernel_list.h"
}  // namespace bg::cuda
