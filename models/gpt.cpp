#include "gpt.h"

#include <cmath>

namespace bg {

Block::Block(const GPTConfig& cfg, Generator& init) {
  const double proj_std = 0.02 / std::sqrt(2.0 * double(cfg.n_layer));
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(cfg.n_embd, cfg.bias));
  attn =
      register_module("attn", std::make_shared<CausalSelfAttention>(
                                  cfg.n_embd, cfg.n_head, cfg.bias, cfg.dropout, init, proj_std));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(cfg.n_embd, cfg.bias));
  mlp = register_module("mlp",
                        std::make_shared<MLP>(cfg.n_embd, cfg.bias, cfg.dropout, init, proj_std));
}

Tensor Block::forward(const Tensor& x, Generator& gen) const {
  const Tensor h = x + attn->forward(ln_1->forward(x), gen);
  return h + mlp->forward(ln_2->forward(h), gen);
}

GPT::GPT(const GPTConfig& cfg, Generator& init) : cfg_(cfg) {
  BG_CHECK(cfg.vocab_size > 0 && cfg.block_size > 0 && cfg.n_layer > 0, "gpt",
           "vocab_size, block_size and n_layer must be positive, got ", cfg.vocab_size, ", ",
           cfg.block_size, ", ", cfg.n_layer);
  wte_ = register_module("transformer.wte",
                         std::make_shared<Embedding>(cfg.vocab_size, cfg.n_embd, init, 0.02));
  wpe_ = register_module("transformer.wpe",
                         std::make_shared<Embedding>(cfg.block_size, cfg.n_embd, init, 0.02));
  for (int64_t i = 0; i < cfg.n_layer; ++i)
    blocks_.push_back(
        register_module("transformer.h." + std::to_string(i), std::make_shared<Block>(cfg, init)));
  ln_f_ = register_module("transformer.ln_f", std::make_shared<LayerNorm>(cfg.n_embd, cfg.bias));
}

Tensor GPT::forward(const Tensor& idx, Generator& gen) const {
  BG_CHECK(idx.ndim() == 2, "gpt", "expected (B, T) token ids, got ", shape_str(idx.shape()));
  const int64_t t = idx.size(1);
  BG_CHECK(t >= 1 && t <= cfg_.block_size, "gpt", "sequence length ", t,
           " is outside [1, block_size = ", cfg_.block_size, "]");
  // Positions 0..T-1 embed to the first T rows of wpe: a slice, no index tensor to upload.
  Tensor x =
      dropout(wte_->forward(idx) + wpe_->weight.slice(0, 0, t), cfg_.dropout, training(), gen);
  for (const auto& block : blocks_) x = block->forward(x, gen);
  return linear(ln_f_->forward(x), wte_->weight);  // the LM head tied to the token embedding
}

Tensor GPT::loss(const Tensor& idx, const Tensor& targets, Generator& gen) const {
  const Tensor logits = forward(idx, gen);
  const int64_t rows = idx.size(0) * idx.size(1);
  return cross_entropy(logits.reshape({rows, cfg_.vocab_size}), targets.reshape({rows}));
}

int64_t GPT::non_embedding_parameters() const { return parameter_count() - wpe_->weight.numel(); }

}  // namespace bg
