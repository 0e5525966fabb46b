// gpt.h: nanoGPT's GPT (Radford et al. 2019 as in Karpathy's model.py): token + position
// embeddings, n_layer pre-LayerNorm blocks (causal multi-head self-attention, MLP 4x with
// GELU), a final LayerNorm and an LM head tied to the token embedding. Parameter names and
// layouts are model.py's state_dict keys (transformer.h.0.attn.c_attn.weight, (out, in)), so
// checkpoints load into PyTorch directly; the tied lm_head.weight is transformer.wte.weight.
#pragma once
#include <memory>
#include <vector>

#include "gpt_head.h"
#include "layers/layers.h"
#include "models/language_model.h"
#include "models/transformer.h"

namespace bg {

class CheckpointWriter;
class CheckpointReader;

// model.input: how a token enters the trunk. embedding: its row of the (vocab_size, n_embd)
// table transformer.wte (which the softmax head is tied to); bits: its id's B bits in {-1, +1}
// (B the fewest that hold vocab_size, bit 0 first) through the bias-free B -> n_embd linear layer
// transformer.wbe, so with a BIDE head no matrix has a vocabulary-sized dimension.
#define BG_INPUT_KINDS(X) X(embedding, "embedding") X(bits, "bits")
BG_NAMED_ENUM(InputKind, BG_INPUT_KINDS)

// The trunk's fields (models/transformer.h: block_size, n_layer, n_head, n_embd, dropout, bias,
// gelu, linear, fused_attention) and the GPT's own.
struct GPTConfig : TrunkConfig {
  int64_t vocab_size = 0;
  InputKind input = InputKind::embedding;
  // Tokens each position predicts jointly (2 for data.tokenizer: byte_pair): position t's target
  // is the id sum_j token[t + 1 + j] vocab_size^(P - 1 - j), one of vocab_size^P
  // (joint_target_ids below).
  int64_t predict_tokens = 1;
  // The output head (models/gpt/gpt_head.h): the tied softmax head, dense or (bitlinear.lm_head) a
  // BitLinear product of the token embedding; or a BIDE head over the token's bits (bide).
  HeadKind head = HeadKind::softmax;
  BideHeadSpec bide;  // head == bide
};

// The ids a position's target ranges over: vocab_size^predict_tokens.
int64_t target_vocabulary(const GPTConfig& cfg);
// A BIDE head's settings resolved against the model (the one place they are): support 0 becomes
// the targets' count, bits 0 the fewest that hold it. The builder calls it with the tokenizer's
// own vocabulary first (a padded vocabulary's extra ids are never targets); GPT::GPT fills what
// is still unset.
void resolve_bide_head(GPTConfig& cfg);
// Position t's target from tokens[t + 1 .. t + predict_tokens] (the layout above); and back, the
// tokens a target id stands for, appended to `out`.
int64_t joint_target(const GPTConfig& cfg, const int32_t* next_tokens);
void append_target_tokens(const GPTConfig& cfg, int64_t target, std::vector<int32_t>& out);

// Why a GPT (or, `gpt` null, a model without a trunk) cannot run `mode`'s activations ("" when
// it can): bf16 activations (train.activations) run on the trunk's rule
// (trunk_activations_problem: dense projections) and feed the softmax head. The forecaster
// applies the trunk's rule alone. Train configs and checkpoint loaders apply them.
std::string activations_problem(const ComputeMode& mode, const GPTConfig* gpt);

// Its declared fields (core/settings.h): model.*, and the linear's and head's under their
// keys. Reading a config, the checkpoint attributes (from which sample and eval rebuild the
// model), loading them (files that predate an attribute meant its default) and the difference
// all walk this list.
const Settings<GPTConfig>& gpt_settings();
// The rules between GPT fields a config or checkpoint breaks (n_embd divisible by n_head, a
// hybrid's code, ...): the key to blame and why. `resolved`: also those of a built model's
// values (vocab_size, head.bide.bits and support set), which a checkpoint must keep.
SettingProblem gpt_config_problem(const GPTConfig& cfg, bool resolved);
void save_gpt_config(CheckpointWriter& ck, const GPTConfig& cfg);
GPTConfig load_gpt_config(const CheckpointReader& ck, const std::string& path);
// A BIDE head's token code (head.bide.code other than id), kept beside the state_dict as the
// dataset head/bide_code_of_id (i64, one pattern per id); save does nothing for the id code,
// load sets the head's code from the file (one line if it is missing or not a permutation).
inline constexpr const char* kBideCodeDataset = "head/bide_code_of_id";
// The tied head's matrix stored again under PyTorch's name (nanoGPT's state_dict holds both).
inline constexpr const char* kTiedHeadAlias = "lm_head.weight";
class GPT;
void save_bide_code(CheckpointWriter& ck, const GPT& model);
void load_bide_code(const CheckpointReader& ck, const std::string& path, GPT& model);

// Empty when a and b are the same architecture; else what differs ("model.n_layer: 2 vs 6").
std::string gpt_architecture_difference(const GPTConfig& a, const GPTConfig& b);

class GPT : public LanguageModel {
 public:
  // GPT-2 initialisation: N(0, 0.02) weights, residual projections (c_proj) N(0, 0.02 /
  // sqrt(2 n_layer)), zero biases, unit LayerNorm scales; all drawn from `init` in module order.
  GPT(const GPTConfig& cfg, Generator& init);
  // idx (B, T) token ids with T <= block_size -> logits (B, T, vocab_size).
  Tensor forward(const Tensor& idx, Generator& gen) const;
  // forward in two halves: the token + position embeddings (B, T, n_embd), and the blocks and
  // head from them (what check-determinism differentiates to get each sequence's own dx).
  Tensor embed(const Tensor& idx, Generator& gen) const;
  Tensor forward_from_embeddings(const Tensor& x, Generator& gen) const;
  // The blocks and ln_f from the embeddings: (B, T, n_embd), what the head reads.
  Tensor hidden_from_embeddings(const Tensor& x, Generator& gen) const;
  // Inference: idx (B, T) continues the cache's positions; returns the logits of the last
  // position (B, vocab_size) and appends T positions to the cache.
  KVCache new_cache(int64_t batch, Device device, DType dtype = DType::f32) const;
  Tensor forward_cached(const Tensor& idx, KVCache& cache) const;
  // forward_cached up to the head: ln_f's output at the last position (B, n_embd).
  Tensor forward_cached_hidden(const Tensor& idx, KVCache& cache) const;
  // The head's mean negative log-likelihood of targets (B, T) (cross-entropy for softmax).
  Tensor loss(const Tensor& idx, const Tensor& targets, Generator& gen) const override;
  // LanguageModel: a window of up to block_size tokens, a target at every position.
  const char* type() const override { return "gpt"; }
  int64_t context() const override { return cfg_.block_size; }
  bool predicts_every_position() const override { return true; }
  int64_t tokens_per_target() const override { return cfg_.predict_tokens; }
  int64_t vocab_size() const override { return cfg_.vocab_size; }
  TargetScores score(const Tensor& idx, const Tensor& targets) const override;
  std::vector<int32_t> generate(std::vector<int32_t> ids, const SampleSettings& s,
                                int64_t vocab_limit, Generator& gen, Device device,
                                const std::function<bool(int32_t)>& on_token = {}) const override;
  // The architecture (save_gpt_config), a BIDE head's token code, the attention that ran, and
  // the tied head again as lm_head.weight (PyTorch's state_dict holds both).
  void save_description(CheckpointWriter& ck) const override;
  DeterminismProbe probe(const Tensor& x, const Tensor& y) const override;
  Tensor sampler_outputs(const Tensor& x) const override;
  std::string architecture_difference(const CheckpointReader& ck,
                                      const std::string& path) const override;
  void load_extras(const CheckpointReader& ck, const std::string& path) override;
  // As nanoGPT estimates it (PaLM appendix B): 6 N + 12 L C T, N the non-embedding parameters.
  double flops_per_token() const override {
    return trunk_->flops_per_token(non_embedding_parameters());
  }
  const GPTConfig& config() const { return cfg_; }
  // The output head: every reader of the next-token distribution goes through it.
  const GPTHead& head() const { return *head_; }
  // The BIDE head (model.head: bide), else null.
  BideTokenHead* bide_head() { return dynamic_cast<BideTokenHead*>(head_.get()); }
  const BideTokenHead* bide_head() const { return dynamic_cast<const BideTokenHead*>(head_.get()); }
  // With a BitLinear head, its packed form (models/gpt/gpt_packed.h): the tied head then runs
  // bitlinear_packed, while wte stays for the embedding.
  void use_packed_head(PackedTernary packed);
  // The input table (model.input: embedding; undefined with bits).
  Tensor token_embedding() const { return wte_ ? wte_->weight : Tensor(); }
  // Parameters excluding position embeddings (what nanoGPT reports as the model size).
  int64_t non_embedding_parameters() const;

 private:
  // Each token's input features (B, T, n_embd): its wte row, or its bits through wbe.
  Tensor token_features(const Tensor& idx) const;
  // token_features(idx) entering the trunk's stream at positions past..
  Tensor stream_input(const Tensor& idx, int64_t past) const;
  GPTConfig cfg_;
  std::shared_ptr<GPTHead> head_;
  std::shared_ptr<Embedding> wte_;
  std::shared_ptr<Linear> wbe_;  // model.input: bits
  mutable Tensor bit_table_;     // (vocab_size, B) +-1, on the device of the last call
  std::shared_ptr<Trunk> trunk_;  // transformer.wpe, transformer.h.N, transformer.ln_f
};

}  // namespace bg
