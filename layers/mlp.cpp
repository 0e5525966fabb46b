#include "mlp.h"

#include "residual.h"

namespace bg {

MLP::MLP(int64_t n_embd, bool bias, double dropout, Generator& init, double proj_std, GeluForm gelu,
         const LinearSpec& linear)
    : dropout_(dropout), gelu_(gelu) {
  c_fc = register_module(
      "c_fc", make_linear(linear, n_embd, 4 * n_embd, bias, init, 0.02, MatmulSite::mlp));
  c_proj = register_module(
      "c_proj", make_linear(linear, 4 * n_embd, n_embd, bias, init, proj_std, MatmulSite::mlp));
}

Tensor MLP::forward(const Tensor& x, Generator& gen, const Tensor& residual) const {
  // GELU's input and output each feed one matmul: stored in the dtype those matmuls read. The
  // tanh form may run in c_fc's GEMM epilogue (forward_gelu) and its backward in c_proj's
  // (forward_after_gelu); cuBLASLt has no erf form.
  const GeluOutput h =
      gelu_ == GeluForm::erf
          ? GeluOutput{gelu_erf(c_fc->forward(x, Consumer::matmul), compute_mode()), Tensor()}
          : c_fc->forward_gelu(x);
  return project_then_add(*c_proj, h, dropout_, training(), gen, residual);
}

}  // namespace bg
