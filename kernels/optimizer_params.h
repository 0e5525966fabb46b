// optimizer_params.h: scalar hyper-parameters of one optimizer step, shared by both backends.
#pragma once
#include <cstdint>

namespace bg {
struct AdamWParams {
  float lr, beta1, beta2, eps, weight_decay;
  // 1 - beta^step, computed once on the host so both backends use the same bits.
  float bias_correction1, bias_correction2;
  // When set: {lr, bias_correction1, bias_correction2} are read from this memory (on the
  // kernel's device) instead, so a captured CUDA graph can take a new step's values.
  const float* hyper = nullptr;
};
}  // namespace bg
