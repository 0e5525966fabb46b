#include "transformer.h"

#include <cmath>

#include "core/checkpoint.h"

namespace bg {

const Settings<TrunkConfig>& trunk_settings() {
  static const Settings<TrunkConfig> s = [] {
    Settings<TrunkConfig> s("gpt and forecaster");
    s.integer("model.block_size", [](auto& c) -> auto& { return c.block_size; }, 1, 1 << 20,
              "positions a window holds (a GPT's tokens; a forecaster's values, context and "
              "forecast steps): the position embeddings' rows",
              kArchitecture);
    s.integer("model.n_layer", [](auto& c) -> auto& { return c.n_layer; }, 1, 256,
              "transformer blocks", kArchitecture);
    s.integer("model.n_head", [](auto& c) -> auto& { return c.n_head; }, 1, 1024,
              "attention heads (must divide n_embd)", kArchitecture);
    s.integer("model.n_embd", [](auto& c) -> auto& { return c.n_embd; }, 1, 1 << 16,
              "model width", kArchitecture);
    s.number("model.dropout", [](auto& c) -> auto& { return c.dropout; }, 0.0, 0.95,
             "dropout probability (embeddings, attention weights, residual branches)");
    s.boolean("model.bias", [](auto& c) -> auto& { return c.bias; },
              "biases in the linears and LayerNorms", kArchitecture);
    s.nested(linear_settings(), [](auto& c) -> auto& { return c.linear; });
    // Files before model.gelu were trained with the tanh form.
    s.choice("model.gelu", [](auto& c) -> auto& { return c.gelu; },
             "tanh (GPT-2, llm.c) or erf (nanoGPT's nn.GELU())", kArchitecture | kOptional);
    return s;
  }();
  return s;
}

SettingProblem trunk_config_problem(const TrunkConfig& c) {
  if (c.n_embd % c.n_head != 0)
    return {"model.n_head", "n_embd " + std::to_string(c.n_embd) +
                                " is not divisible by n_head " + std::to_string(c.n_head)};
  return {};
}

bool choose_fused_attention(AttentionChoice choice, const ComputeMode& mode, Device device,
                            int64_t head_dim) {
  if (choice == AttentionChoice::composed) return false;
  const std::string why =
      fused_attention_supports(mode.at(MatmulSite::attention), device, head_dim);
  BG_CHECK(choice != AttentionChoice::fused || why.empty(), "config",
           "model.attention: fused cannot run here: ", why, " (compute ", mode.str(), " on ",
           device.str(), "); set model.attention: composed or auto");
  return why.empty();
}

void save_trained_attention(CheckpointWriter& ck, AttentionChoice ran) {
  BG_CHECK(ran != AttentionChoice::automatic, "gpt", "a run's attention is fused or composed");
  ck.attr("attention", std::string(enum_name(ran)));
}

AttentionChoice load_trained_attention(const CheckpointReader& ck, const std::string& path) {
  if (!ck.has_attr("attention")) return AttentionChoice::automatic;
  const std::string text = ck.str_attr("attention");
  AttentionChoice ran = AttentionChoice::automatic;
  BG_CHECK(parse_enum(text, &ran) && ran != AttentionChoice::automatic, "checkpoint", path,
           ": attribute attention is '", text, "', expected fused or composed");
  return ran;
}

std::string trunk_activations_problem(const ComputeMode& mode, const TrunkConfig& cfg) {
  if (mode.activations == ActivationDtype::bf16 && cfg.linear.kind != LinearKind::dense)
    return "bf16 activations run dense projections; model.linear: bitlinear keeps fp32";
  return "";
}

bool inference_fused_attention(const ComputeMode& trained, AttentionChoice ran,
                               const ComputeMode& mode, Device device, int64_t head_dim) {
  const AttentionChoice choice = trained.deterministic && ran == AttentionChoice::composed
                                     ? AttentionChoice::composed
                                     : AttentionChoice::automatic;
  return choose_fused_attention(choice, mode, device, head_dim);
}

Block::Block(const TrunkConfig& cfg, Generator& init) {
  const double proj_std = 0.02 / std::sqrt(2.0 * double(cfg.n_layer));
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(cfg.n_embd, cfg.bias));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(
                                     cfg.n_embd, cfg.n_head, cfg.bias, cfg.dropout, init, proj_std,
                                     cfg.fused_attention, cfg.linear));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(cfg.n_embd, cfg.bias));
  mlp = register_module("mlp", std::make_shared<MLP>(cfg.n_embd, cfg.bias, cfg.dropout, init,
                                                     proj_std, cfg.gelu, cfg.linear));
}

namespace {

// ln(x) for `reader`, a projection whose only input it is; where the reader quantises its input
// (BitLinear), the LayerNorm does so in its own pass and hands the result over.
Tensor normed_for(const LayerNorm& ln, const LinearLayer& reader, const Tensor& x) {
  const ActQuantOptions* quantizer = reader.input_quantizer();
  if (!quantizer) return ln.forward_for_matmul(x);
  NormedActivations out = ln.forward_quantized(x, *quantizer);
  reader.set_quantized_input(out.y, std::move(out.q));
  return out.y;
}

}  // namespace

Tensor Block::forward(const Tensor& x, Generator& gen) const {
  // x + attn(ln_1(x)), then h + mlp(ln_2(h))
  const Tensor h = attn->forward(normed_for(*ln_1, *attn->c_attn, x), gen, x);
  return mlp->forward(normed_for(*ln_2, *mlp->c_fc, h), gen, h);
}

Tensor Block::forward_cached(const Tensor& x, const Tensor& k, const Tensor& v,
                             int64_t past) const {
  // The residual adds as forward makes them (in c_proj's epilogue): the stream's bits are
  // training's (sampler = trainer).
  const Tensor h = attn->forward_cached(normed_for(*ln_1, *attn->c_attn, x), k, v, past, x);
  Generator unused;
  return mlp->forward(normed_for(*ln_2, *mlp->c_fc, h), unused, h);  // inference: dropout is off
}

Trunk::Trunk(const TrunkConfig& cfg, Generator& init) : cfg_(cfg) {
  BG_CHECK(cfg.block_size > 0 && cfg.n_layer > 0, "transformer",
           "block_size and n_layer must be positive, got ", cfg.block_size, ", ", cfg.n_layer);
  if (const SettingProblem p = trunk_config_problem(cfg)) fail("transformer", p.key, ": ", p.message);
  wpe_ = register_module("wpe", std::make_shared<Embedding>(cfg.block_size, cfg.n_embd, init, 0.02));
  for (int64_t i = 0; i < cfg.n_layer; ++i)
    blocks_.push_back(register_module("h." + std::to_string(i), std::make_shared<Block>(cfg, init)));
  ln_f_ = register_module("ln_f", std::make_shared<LayerNorm>(cfg.n_embd, cfg.bias));
}

Tensor Trunk::stream_input(const Tensor& features, int64_t past) const {
  // Positions past..past+T-1 embed to those rows of wpe: a slice, no index tensor to upload.
  // Features a layer stored narrowed (a forecaster's input projection under bf16 activations)
  // are widened first: the sum is f32 as the GPT's embedding sum, then stored in the stream's
  // dtype once.
  const Tensor& pos = wpe_->weight;
  const Tensor f = features.dtype() == pos.dtype() ? features : features.to(pos.dtype());
  const Tensor sum = f + pos.slice(0, past, past + features.size(1));
  const DType stream = activation_dtype(compute_mode(), features.device());
  return sum.dtype() == stream ? sum : sum.to(stream);
}

void Trunk::quantize_weights() const {
  // The blocks' BitLinear weights in one pass (three launches on CUDA) rather than one per layer.
  // Not a head's: not every reader of a head runs all its layers once a forward.
  if (cfg_.linear.kind != LinearKind::bitlinear) return;
  std::vector<const Module*> blocks;
  for (const auto& block : blocks_) blocks.push_back(block.get());
  quantize_bitlinear_weights(blocks);
}

Tensor Trunk::forward(const Tensor& x, Generator& gen) const {
  quantize_weights();
  Tensor h = x;
  for (const auto& block : blocks_) h = block->forward(h, gen);
  return ln_f_->forward_for_matmul(h);
}

Tensor Trunk::forward_cached(const Tensor& x, KVCache& cache) const {
  const int64_t t = x.size(1), past = cache.length;
  quantize_weights();
  Tensor h = x;
  for (size_t i = 0; i < blocks_.size(); ++i)
    h = blocks_[i]->forward_cached(h, cache.k[i], cache.v[i], past);
  cache.length = past + t;
  return ln_f_->forward(h.slice(1, t - 1, t)).reshape({x.size(0), cfg_.n_embd});
}

KVCache Trunk::new_cache(int64_t batch, Device device, DType dtype) const {
  KVCache cache;
  const int64_t hd = cfg_.n_embd / cfg_.n_head;
  for (int64_t i = 0; i < cfg_.n_layer; ++i) {
    cache.k.push_back(zeros({batch, cfg_.n_head, cfg_.block_size, hd}, dtype, device));
    cache.v.push_back(zeros({batch, cfg_.n_head, cfg_.block_size, hd}, dtype, device));
  }
  return cache;
}

}  // namespace bg
