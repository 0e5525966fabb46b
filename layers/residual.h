// residual.h: the end of attention and of the MLP: the output projection, its dropout and the
// residual add, fused as far as the mode allows.
#pragma once
#include "linear.h"
#include "module.h"

namespace bg {

// dropout(y), or residual + dropout(y) in one pass when a residual is given (the same mask and
// numbers as the two ops).
inline Tensor dropout_then_add(const Tensor& y, double p, bool training, Generator& gen,
                               const Tensor& residual) {
  return residual.defined() ? dropout_add(residual, y, p, training, gen)
                            : dropout(y, p, training, gen);
}

// residual + dropout(proj(y)) (dropout(proj(y)) without a residual). Where no dropout applies,
// the projection adds the residual in its GEMM's epilogue instead of a pass of its own. y as a
// GELU's output: the projection may run GELU's backward in its own (forward_after_gelu).
inline Tensor project_then_add(const LinearLayer& proj, const GeluOutput& y, double p,
                               bool training, Generator& gen, const Tensor& residual) {
  if (residual.defined() && (p == 0.0 || !training)) return proj.forward_after_gelu(y, residual);
  return dropout_then_add(proj.forward_after_gelu(y, Tensor()), p, training, gen, residual);
}
inline Tensor project_then_add(const LinearLayer& proj, const Tensor& y, double p, bool training,
                               Generator& gen, const Tensor& residual) {
  return project_then_add(proj, GeluOutput{y, Tensor()}, p, training, gen, residual);
}

}  // namespace bg
