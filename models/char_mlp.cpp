#include "char_mlp.h"

#include <cmath>

namespace bg {

CharMLP::CharMLP(const CharMLPConfig& cfg, Generator& init) : cfg_(cfg) {
  wte_ = register_module("wte", std::make_shared<Embedding>(cfg.vocab_size, cfg.n_embd, init, 1.0));
  int64_t width = cfg.context * cfg.n_embd;
  for (int64_t i = 0; i < cfg.n_layer; ++i) {
    const std::string idx = std::to_string(i);
    // Kaiming-style scale for the GELU stack.
    hidden_.push_back(register_module(
        "hidden." + idx,
        std::make_shared<Linear>(width, cfg.n_hidden, true, init, std::sqrt(2.0 / double(width)))));
    norms_.push_back(
        register_module("norm." + idx, std::make_shared<LayerNorm>(cfg.n_hidden, true)));
    width = cfg.n_hidden;
  }
  head_ =
      register_module("head", std::make_shared<Linear>(width, cfg.vocab_size, true, init, 0.02));
}

Tensor CharMLP::forward(const Tensor& idx, Generator& gen) const {
  BG_CHECK(idx.ndim() == 2 && idx.size(1) == cfg_.context, "char_mlp", "expected (B, ",
           cfg_.context, ") token ids, got ", shape_str(idx.shape()));
  Tensor h = wte_->forward(idx).reshape({idx.size(0), cfg_.context * cfg_.n_embd});
  for (size_t i = 0; i < hidden_.size(); ++i)
    h = dropout(gelu(norms_[i]->forward(hidden_[i]->forward(h))), cfg_.dropout, training(), gen);
  return head_->forward(h);
}

}  // namespace bg
