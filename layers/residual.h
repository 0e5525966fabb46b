// residual.h: the dropout that ends attention and the MLP, fused with the residual add.
#pragma once
#include "module.h"

namespace bg {

// dropout(y), or residual + dropout(y) in one pass when a residual is given (the same mask and
// numbers as the two ops).
inline Tensor dropout_then_add(const Tensor& y, double p, bool training, Generator& gen,
                               const Tensor& residual) {
  return residual.defined() ? dropout_add(residual, y, p, training, gen)
                            : dropout(y, p, training, gen);
}

}  // namespace bg
