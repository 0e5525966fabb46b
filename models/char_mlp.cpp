#include "char_mlp.h"

#include <cmath>

#include "core/checkpoint.h"

namespace bg {

void save_char_mlp_config(CheckpointWriter& ck, const CharMLPConfig& cfg) {
  ck.attr("model.vocab_size", cfg.vocab_size);
  ck.attr("model.context", cfg.context);
  ck.attr("model.n_embd", cfg.n_embd);
  ck.attr("model.n_hidden", cfg.n_hidden);
  ck.attr("model.n_layer", cfg.n_layer);
}

CharMLPConfig load_char_mlp_config(const CheckpointReader& ck, const std::string& path) {
  BG_CHECK(ck.has_attr("model.context"), "checkpoint", path,
           ": a char_mlp checkpoint written before they recorded their architecture (train it "
           "again to sample from it)");
  CharMLPConfig cfg;
  cfg.vocab_size = ck.int_attr("model.vocab_size");
  cfg.context = ck.int_attr("model.context");
  cfg.n_embd = ck.int_attr("model.n_embd");
  cfg.n_hidden = ck.int_attr("model.n_hidden");
  cfg.n_layer = ck.int_attr("model.n_layer");
  // The bounds train's config allows.
  BG_CHECK(cfg.vocab_size >= 1 && cfg.vocab_size <= (1 << 24) && cfg.context >= 1 &&
               cfg.context <= 4096 && cfg.n_embd >= 1 && cfg.n_embd <= 65536 && cfg.n_hidden >= 1 &&
               cfg.n_hidden <= (1 << 20) && cfg.n_layer >= 0 && cfg.n_layer <= 64,
           "checkpoint", path, ": inconsistent model.* attributes of a char_mlp");
  return cfg;
}

CharMLP::CharMLP(const CharMLPConfig& cfg, Generator& init) : cfg_(cfg) {
  wte_ = register_module("wte", std::make_shared<Embedding>(cfg.vocab_size, cfg.n_embd, init, 1.0));
  int64_t width = cfg.context * cfg.n_embd;
  for (int64_t i = 0; i < cfg.n_layer; ++i) {
    const std::string idx = std::to_string(i);
    // Kaiming-style scale for the GELU stack.
    hidden_.push_back(register_module(
        "hidden." + idx,
        std::make_shared<Linear>(width, cfg.n_hidden, true, init, std::sqrt(2.0 / double(width)))));
    hidden_.back()->set_site(MatmulSite::mlp);  // lmul.scope: mlp covers the hidden layers
    norms_.push_back(
        register_module("norm." + idx, std::make_shared<LayerNorm>(cfg.n_hidden, true)));
    width = cfg.n_hidden;
  }
  head_ =
      register_module("head", std::make_shared<Linear>(width, cfg.vocab_size, true, init, 0.02));
  head_->set_site(MatmulSite::lm_head);
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
