// char_mlp.h: the smallest end-to-end language model (Bengio et al. 2003, as in makemore):
// embed the last `context` characters, concatenate, then n_layer x (Linear -> LayerNorm ->
// GELU -> dropout) and a Linear head predicting the next character. It exercises embedding,
// linear, layernorm, gelu, dropout and cross-entropy, and trains in seconds on a CPU.
#pragma once
#include <memory>
#include <vector>

#include "layers/layers.h"
#include "models/language_model.h"

namespace bg {

class CheckpointWriter;
class CheckpointReader;

struct CharMLPConfig {
  int64_t vocab_size = 0, context = 16, n_embd = 32, n_hidden = 256, n_layer = 2;
  double dropout = 0.0;
};

// Its declared fields (core/settings.h): the config keys, and the architecture as checkpoint
// attributes (model.vocab_size, model.context, model.n_embd, model.n_hidden, model.n_layer),
// from which sample and eval rebuild the model.
const Settings<CharMLPConfig>& char_mlp_settings();
void save_char_mlp_config(CheckpointWriter& ck, const CharMLPConfig& cfg);
CharMLPConfig load_char_mlp_config(const CheckpointReader& ck, const std::string& path);

class CharMLP : public LanguageModel {
 public:
  CharMLP(const CharMLPConfig& cfg, Generator& init);
  Tensor forward(const Tensor& idx, Generator& gen) const;  // (B, context) -> (B, vocab)
  // forward from the embedded window (B, context, n_embd).
  Tensor forward_from_embeddings(const Tensor& x, Generator& gen) const;
  const CharMLPConfig& config() const { return cfg_; }
  // LanguageModel: exactly `context` tokens, one target after them.
  const char* type() const override { return "char_mlp"; }
  int64_t context() const override { return cfg_.context; }
  bool predicts_every_position() const override { return false; }
  int64_t vocab_size() const override { return cfg_.vocab_size; }
  Tensor loss(const Tensor& x, const Tensor& y, Generator& gen) const override;
  TargetScores score(const Tensor& x, const Tensor& y) const override;
  std::vector<int32_t> generate(std::vector<int32_t> ids, const SampleSettings& s,
                                int64_t vocab_limit, Generator& gen, Device device,
                                const std::function<bool(int32_t)>& on_token = {}) const override;
  void save_description(CheckpointWriter& ck) const override;
  DeterminismProbe probe(const Tensor& x, const Tensor& y) const override;
  std::string architecture_difference(const CheckpointReader& ck,
                                      const std::string& path) const override;

 private:
  CharMLPConfig cfg_;
  std::shared_ptr<Embedding> wte_;
  std::vector<std::shared_ptr<Linear>> hidden_;
  std::vector<std::shared_ptr<LayerNorm>> norms_;
  std::shared_ptr<Linear> head_;
};

}  // namespace bg
