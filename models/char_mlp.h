// char_mlp.h: the smallest end-to-end language model (Bengio et al. 2003, as in makemore):
// embed the last `context` characters, concatenate, then n_layer x (Linear -> LayerNorm ->
// GELU -> dropout) and a Linear head predicting the next character. It exercises embedding,
// linear, layernorm, gelu, dropout and cross-entropy, and trains in seconds on a CPU.
#pragma once
#include <memory>
#include <vector>

#include "layers/layers.h"

namespace bg {

struct CharMLPConfig {
  int64_t vocab_size = 0, context = 16, n_embd = 32, n_hidden = 256, n_layer = 2;
  double dropout = 0.0;
};

class CharMLP : public Module {
 public:
  CharMLP(const CharMLPConfig& cfg, Generator& init);
  Tensor forward(const Tensor& idx, Generator& gen) const;  // (B, context) -> (B, vocab)
  const CharMLPConfig& config() const { return cfg_; }

 private:
  CharMLPConfig cfg_;
  std::shared_ptr<Embedding> wte_;
  std::vector<std::shared_ptr<Linear>> hidden_;
  std::vector<std::shared_ptr<LayerNorm>> norms_;
  std::shared_ptr<Linear> head_;
};

}  // namespace bg
