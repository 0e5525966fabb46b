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

namespace bg {

class CheckpointWriter;
class CheckpointReader;

// model.input: how a token enters the trunk. embedding: its row of the (vocab_size, n_embd)
// table transformer.wte (which the softmax head is tied to); bits: its id's B bits in {-1, +1}
// (B the fewest that hold vocab_size, bit 0 first) through the bias-free B -> n_embd linear layer
// transformer.wbe, so with a BIDE head no matrix has a vocabulary-sized dimension.
#define BG_INPUT_KINDS(X) X(embedding, "embedding") X(bits, "bits")
BG_NAMED_ENUM(InputKind, BG_INPUT_KINDS)

struct GPTConfig {
  int64_t vocab_size = 0, block_size = 256, n_layer = 6, n_head = 6, n_embd = 384;
  InputKind input = InputKind::embedding;
  // Tokens each position predicts jointly (2 for data.tokenizer: byte_pair): position t's target
  // is the id sum_j token[t + 1 + j] vocab_size^(P - 1 - j), one of vocab_size^P
  // (joint_target_ids below).
  int64_t predict_tokens = 1;
  double dropout = 0.0;
  bool bias = false;
  GeluForm gelu = GeluForm::tanh;  // part of the architecture: saved as model.gelu
  // The projections' layer kind and BitLinear's quantisers (model.linear, bitlinear.*; saved as
  // such).
  LinearSpec linear;
  // The output head (models/gpt_head.h): the tied softmax head, dense or (bitlinear.lm_head) a
  // BitLinear product of the token embedding; or a BIDE head over the token's bits (bide).
  HeadKind head = HeadKind::softmax;
  BideHeadSpec bide;  // head == bide
  // fused_causal_attention (one kernel per pass; on CUDA bf16 tensor cores, head dim 64, so only
  // under bf16 precision) or the composed matmul + causal_softmax + dropout + matmul (any
  // mode). Not part of the architecture: a checkpoint trained one way evaluates either way.
  // Chosen by choose_fused_attention, the one place that decides it.
  bool fused_attention = true;
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

// model.attention: the fused kernel, the composed ops, or auto: the fused kernel wherever it
// honours the run's compute mode, the composed ops elsewhere.
#define BG_ATTENTION_CHOICES(X) X(automatic, "auto") X(fused, "fused") X(composed, "composed")
BG_NAMED_ENUM(AttentionChoice, BG_ATTENTION_CHOICES)
// Whether a GPT of head dim `head_dim` running `mode` on `device` uses the fused attention
// kernel. fused where the kernel cannot honour the mode is a one-line error naming the key.
// Why a model cannot run with `mode`'s activations ("" when it can): bf16 activations
// (train.activations) are the GPT's with dense projections and the softmax head. `gpt` is null
// for the other models. The one rule train configs and checkpoint loaders apply.
std::string activations_problem(const ComputeMode& mode, const GPTConfig* gpt);

bool choose_fused_attention(AttentionChoice choice, const ComputeMode& mode, Device device,
                            int64_t head_dim);
// The attention a run computed with (fused or composed), as the checkpoint's `attention`
// attribute; read back, automatic when a file has none.
void save_trained_attention(CheckpointWriter& ck, AttentionChoice ran);
AttentionChoice load_trained_attention(const CheckpointReader& ck, const std::string& path);

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
// Empty when a and b are the same architecture; else what differs ("model.n_layer: 2 vs 6").
std::string gpt_architecture_difference(const GPTConfig& a, const GPTConfig& b);

// Keys and values of every layer for incremental decoding: (B, H, block_size, D) each.
struct KVCache {
  std::vector<Tensor> k, v;
  int64_t length = 0;  // positions held
};

// x + attn(ln_1(x)), then x + mlp(ln_2(x)).
class Block : public Module {
 public:
  Block(const GPTConfig& cfg, Generator& init);
  Tensor forward(const Tensor& x, Generator& gen) const;
  Tensor forward_cached(const Tensor& x, const Tensor& k, const Tensor& v, int64_t past) const;
  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<MLP> mlp;
};

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
    return 6.0 * double(non_embedding_parameters()) +
           12.0 * double(cfg_.n_layer * cfg_.n_embd * cfg_.block_size);
  }
  const GPTConfig& config() const { return cfg_; }
  // The output head: every reader of the next-token distribution goes through it.
  const GPTHead& head() const { return *head_; }
  // The BIDE head (model.head: bide), else null.
  BideTokenHead* bide_head() { return dynamic_cast<BideTokenHead*>(head_.get()); }
  const BideTokenHead* bide_head() const { return dynamic_cast<const BideTokenHead*>(head_.get()); }
  // With a BitLinear head, its packed form (models/gpt_packed.h): the tied head then runs
  // bitlinear_packed, while wte stays for the embedding.
  void use_packed_head(PackedTernary packed);
  // The input table (model.input: embedding; undefined with bits).
  Tensor token_embedding() const { return wte_ ? wte_->weight : Tensor(); }
  // Parameters excluding position embeddings (what nanoGPT reports as the model size).
  int64_t non_embedding_parameters() const;

 private:
  // Each token's input features (B, T, n_embd): its wte row, or its bits through wbe.
  Tensor token_features(const Tensor& idx) const;
  // token_features(idx) plus the positions past.. of wpe, in the residual stream's dtype.
  Tensor stream_input(const Tensor& idx, int64_t past) const;
  // With BitLinear blocks, their weights quantised for this forward (quantize_bitlinear_weights).
  void quantize_weights() const;
  GPTConfig cfg_;
  std::shared_ptr<GPTHead> head_;
  std::shared_ptr<Embedding> wte_, wpe_;
  std::shared_ptr<Linear> wbe_;  // model.input: bits
  mutable Tensor bit_table_;     // (vocab_size, B) +-1, on the device of the last call
  std::vector<std::shared_ptr<Block>> blocks_;
  std::shared_ptr<LayerNorm> ln_f_;
};

}  // namespace bg
