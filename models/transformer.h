// transformer.h: the decoder-only trunk the GPT and the forecaster share, one place for both:
// its settings (model.block_size, n_layer, n_head, n_embd, dropout, bias, linear, gelu), the
// pre-LayerNorm Block (causal multi-head self-attention, MLP 4x with GELU), the KV cache, and
// the Trunk module: learned position embeddings (transformer.wpe), n_layer blocks
// (transformer.h.N) and the final LayerNorm (transformer.ln_f), with BitLinear weights quantised
// once a forward, the residual stream in the compute mode's activation dtype, a forward for
// training and a cached one for inference that gives training's bits (sampler = trainer). What
// enters the trunk (token embeddings, series values) and what reads ln_f (a softmax, BIDE or
// forecast head) is the model's own. Also here: which attention a trunk runs (fused or composed)
// and the record of it in a checkpoint.
#pragma once
#include <memory>
#include <vector>

#include "core/settings.h"
#include "layers/layers.h"

namespace bg {

class CheckpointWriter;
class CheckpointReader;

// The trunk's settings. A model's config derives from it, so both models read, save and compare
// these fields under the same keys (trunk_settings, nested first in each model's list).
struct TrunkConfig {
  int64_t block_size = 256, n_layer = 6, n_head = 6, n_embd = 384;
  double dropout = 0.0;
  bool bias = false;
  GeluForm gelu = GeluForm::tanh;  // part of the architecture: saved as model.gelu
  // The projections' layer kind and BitLinear's quantisers (model.linear, bitlinear.*).
  LinearSpec linear;
  // fused_causal_attention (one kernel per pass; on CUDA bf16 tensor cores, head dim 64, so only
  // under bf16 precision) or the composed matmul + causal_softmax + dropout + matmul (any
  // mode). Not part of the architecture: a checkpoint trained one way evaluates either way.
  // Chosen by choose_fused_attention, the one place that decides it.
  bool fused_attention = true;
};

// The trunk's declared fields (core/settings.h), nested first by each model's list; and its one
// rule between them (n_embd divisible by n_head).
const Settings<TrunkConfig>& trunk_settings();
SettingProblem trunk_config_problem(const TrunkConfig& cfg);

// Why a trunk of `cfg` cannot run `mode`'s activations ("" when it can): bf16 activations
// (train.activations) run dense projections; BitLinear's keep fp32.
std::string trunk_activations_problem(const ComputeMode& mode, const TrunkConfig& cfg);

// model.attention: the fused kernel, the composed ops, or auto: the fused kernel wherever it
// honours the run's compute mode, the composed ops elsewhere.
#define BG_ATTENTION_CHOICES(X) X(automatic, "auto") X(fused, "fused") X(composed, "composed")
BG_NAMED_ENUM(AttentionChoice, BG_ATTENTION_CHOICES)
// Whether a trunk of head dim `head_dim` running `mode` on `device` uses the fused attention
// kernel. fused where the kernel cannot honour the mode is a one-line error naming the key.
bool choose_fused_attention(AttentionChoice choice, const ComputeMode& mode, Device device,
                            int64_t head_dim);
// The attention a run computed with (fused or composed), as the checkpoint's `attention`
// attribute; read back, automatic when a file has none.
void save_trained_attention(CheckpointWriter& ck, AttentionChoice ran);
AttentionChoice load_trained_attention(const CheckpointReader& ck, const std::string& path);

// The attention a loaded checkpoint runs for inference on `device` in `mode` (its inference
// mode), given the one it trained with: a deterministic run keeps the composed ops it trained
// with (on the device kind it trained on, its outputs are the training forward's bit for bit);
// otherwise the fused kernel wherever it honours the mode (no dropout here, so both compute the
// same function). The one rule every model's loader applies.
bool inference_fused_attention(const ComputeMode& trained, AttentionChoice ran,
                               const ComputeMode& mode, Device device, int64_t head_dim);

// Keys and values of every layer for incremental decoding: (B, H, block_size, D) each.
struct KVCache {
  std::vector<Tensor> k, v;
  int64_t length = 0;  // positions held
};

// x + attn(ln_1(x)), then x + mlp(ln_2(x)).
class Block : public Module {
 public:
  Block(const TrunkConfig& cfg, Generator& init);
  Tensor forward(const Tensor& x, Generator& gen) const;
  Tensor forward_cached(const Tensor& x, const Tensor& k, const Tensor& v, int64_t past) const;
  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<MLP> mlp;
};

// Registered by a model under "transformer": its parameters are transformer.wpe.weight,
// transformer.h.N.* and transformer.ln_f.*, drawn in that order (GPT-2's initialisation: N(0,
// 0.02) weights, residual projections N(0, 0.02 / sqrt(2 n_layer)), zero biases, unit scales).
class Trunk : public Module {
 public:
  Trunk(const TrunkConfig& cfg, Generator& init);
  // The residual stream's input: `features` (B, T, n_embd) of positions past.. plus their rows
  // of wpe, in the stream's dtype (bf16 under train.activations: bf16), in training and in the
  // cached forward alike. T + past must fit model.block_size (the caller checks, naming it).
  Tensor stream_input(const Tensor& features, int64_t past) const;
  // The blocks and ln_f over a stream input: (B, T, n_embd), stored in the dtype the head's
  // matmuls read.
  Tensor forward(const Tensor& x, Generator& gen) const;
  // Inference through the cache: x (B, T, n_embd) from stream_input at past = cache.length;
  // ln_f's output at the last position (B, n_embd); the cache holds T more positions.
  Tensor forward_cached(const Tensor& x, KVCache& cache) const;
  KVCache new_cache(int64_t batch, Device device, DType dtype = DType::f32) const;
  // nanoGPT's estimate (PaLM appendix B) of a token's training FLOPs: 6 N + 12 L C T, N the
  // model's `non_embedding` parameters.
  double flops_per_token(int64_t non_embedding) const {
    return 6.0 * double(non_embedding) +
           12.0 * double(cfg_.n_layer * cfg_.n_embd * cfg_.block_size);
  }
  // The position table's size, left out of a model's non-embedding parameters.
  int64_t position_parameters() const { return wpe_->weight.numel(); }
  const TrunkConfig& config() const { return cfg_; }

 private:
  // With BitLinear blocks, their weights quantised for this forward in one pass.
  void quantize_weights() const;
  TrunkConfig cfg_;
  std::shared_ptr<Embedding> wpe_;
  std::vector<std::shared_ptr<Block>> blocks_;
  std::shared_ptr<LayerNorm> ln_f_;
};

}  // namespace bg
