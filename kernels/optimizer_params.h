// optimizer_params.h: scalar hyper-parameters of one optimizer step, shared by both backends.
#pragma once
#include <cstdint>

namespace bg {
struct AdamWParams {
  float lr, beta1, beta2, eps, weight_decay;
  // 1 - beta^step, computed once on the host so both backends use the same bits.
  float bias_correction1, bias_correction2;
};
}  // namespace bg
