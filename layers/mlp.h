// mlp.h: the transformer MLP, Linear(4C) -> GELU -> Linear(C) -> dropout, its projections built
// by the linear factory.
#pragma once
#include <memory>

#include "linear.h"

namespace bg {

// GPT-2 and llm.c use the tanh approximation; nanoGPT's nn.GELU() is the exact erf form.
// model.gelu: tanh (GPT-2, llm.c) or erf (nanoGPT's nn.GELU()); part of the architecture.
#define BG_GELU_FORMS(X) X(tanh, "tanh") X(erf, "erf")
BG_NAMED_ENUM(GeluForm, BG_GELU_FORMS)

class MLP : public Module {
 public:
  MLP(int64_t n_embd, bool bias, double dropout, Generator& init, double proj_std,
      GeluForm gelu = GeluForm::tanh, const LinearSpec& linear = LinearSpec());
  Tensor forward(const Tensor& x, Generator& gen, const Tensor& residual = Tensor()) const;
  std::shared_ptr<LinearLayer> c_fc, c_proj;

 private:
  double dropout_;
  GeluForm gelu_;
};

}  // namespace bg
