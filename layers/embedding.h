// embedding.h: a lookup table of learned rows (nn.Embedding's layout: weight (num, dim)).
#pragma once
#include "module.h"

namespace bg {

class Embedding : public Module {
 public:
  Embedding(int64_t num, int64_t dim, Generator& gen, double init_std = 0.02);
  Tensor forward(const Tensor& idx) const { return embedding(weight, idx); }
  Tensor weight;
};

}  // namespace bg
