#include "char_mlp.h"

#include <cmath>

#include "core/checkpoint.h"
#include "models/generate.h"

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

// The window's last position is the one target: y's last column.
Tensor CharMLP::loss(const Tensor& x, const Tensor& y, Generator& gen) const {
  const Tensor target = y.slice(1, cfg_.context - 1, cfg_.context).reshape({x.size(0)});
  return cross_entropy(forward(x, gen), target);
}

TargetScores CharMLP::score(const Tensor& x, const Tensor& y) const {
  Generator unused;  // no dropout: the caller evaluates (train(false))
  const Tensor target = y.slice(1, cfg_.context - 1, cfg_.context).reshape({x.size(0)});
  return {cross_entropy(forward(x, unused), target, -100, "none"), Tensor()};
}

std::vector<int32_t> CharMLP::generate(std::vector<int32_t> ids, const SampleSettings& s,
                                       int64_t vocab_limit, Generator& gen, Device device,
                                       const std::function<bool(int32_t)>& on_token) const {
  BG_CHECK(vocab_limit == cfg_.vocab_size, "char_mlp", "a char MLP draws from its whole vocabulary");
  Generator unused;
  return generate_windowed([&](const Tensor& x) { return forward(x, unused); }, cfg_.context,
                           std::move(ids), s, gen, device, on_token);
}

void CharMLP::save_description(CheckpointWriter& ck) const { save_char_mlp_config(ck, cfg_); }

std::string CharMLP::architecture_difference(const CheckpointReader& ck,
                                             const std::string& path) const {
  // The oldest checkpoints record no architecture: their parameters' shapes decide on load.
  if (!ck.has_attr("model.context")) return "";
  const CharMLPConfig saved = load_char_mlp_config(ck, path);
  std::string d;
  auto cmp = [&](const char* name, int64_t x, int64_t y) {
    if (x != y) d += str_cat(d.empty() ? "" : ", ", name, " ", x, " vs ", y);
  };
  cmp("vocab_size", saved.vocab_size, cfg_.vocab_size);
  cmp("context", saved.context, cfg_.context);
  cmp("n_embd", saved.n_embd, cfg_.n_embd);
  cmp("n_hidden", saved.n_hidden, cfg_.n_hidden);
  cmp("n_layer", saved.n_layer, cfg_.n_layer);
  return d;
}

}  // namespace bg
