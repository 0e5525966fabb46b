#include "char_mlp.h"

#include <cmath>

#include "core/checkpoint.h"
#include "models/gpt/generate.h"

namespace bg {

const Settings<CharMLPConfig>& char_mlp_settings() {
  static const Settings<CharMLPConfig> s = [] {
    Settings<CharMLPConfig> s("char_mlp");
    s.integer("model.context", [](auto& c) -> auto& { return c.context; }, 1, 4096,
              "characters of context", kArchitecture);
    s.integer("model.n_embd", [](auto& c) -> auto& { return c.n_embd; }, 1, 65536,
              "embedding width per character", kArchitecture);
    s.integer("model.n_hidden", [](auto& c) -> auto& { return c.n_hidden; }, 1, 1 << 20,
              "hidden width", kArchitecture);
    s.integer("model.n_layer", [](auto& c) -> auto& { return c.n_layer; }, 0, 64,
              "hidden layers", kArchitecture);
    s.number("model.dropout", [](auto& c) -> auto& { return c.dropout; }, 0.0, 0.95,
             "dropout probability (after each hidden layer)");
    s.integer("model.vocab_size", [](auto& c) -> auto& { return c.vocab_size; }, 1, 1 << 24,
              "the tokenizer's ids", kArchitecture | kDerived);
    return s;
  }();
  return s;
}

void save_char_mlp_config(CheckpointWriter& ck, const CharMLPConfig& cfg) {
  char_mlp_settings().save(ck, cfg);
}

CharMLPConfig load_char_mlp_config(const CheckpointReader& ck, const std::string& path) {
  BG_CHECK(ck.has_attr("model.context"), "checkpoint", path,
           ": a char_mlp checkpoint written before they recorded their architecture (train it "
           "again to sample from it)");
  return char_mlp_settings().load(ck, path);
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
  return forward_from_embeddings(wte_->forward(idx), gen);
}

Tensor CharMLP::forward_from_embeddings(const Tensor& x, Generator& gen) const {
  Tensor h = x.reshape({x.size(0), cfg_.context * cfg_.n_embd});
  for (size_t i = 0; i < hidden_.size(); ++i)
    h = dropout(gelu(norms_[i]->forward(hidden_[i]->forward(h))), cfg_.dropout, training(), gen);
  return head_->forward(h);
}

DeterminismProbe CharMLP::probe(const Tensor& idx, const Tensor& y) const {
  Generator unused;
  const Tensor x = wte_->forward(idx).detach().requires_grad_(true);
  const Tensor logits = forward_from_embeddings(x, unused);
  const Tensor target = y.slice(1, cfg_.context - 1, cfg_.context).reshape({idx.size(0)});
  cross_entropy(logits, target, -100, "sum").backward();
  return {logits.detach(), x.grad()};
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
  return char_mlp_settings().difference(load_char_mlp_config(ck, path), cfg_);
}

}  // namespace bg
