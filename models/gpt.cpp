#include "gpt.h"

#include <cmath>

#include "core/checkpoint.h"
#include "models/generate.h"
#include "models/lm_checkpoint.h"

namespace bg {

void save_gpt_config(CheckpointWriter& ck, const GPTConfig& cfg) {
  ck.attr("model.vocab_size", cfg.vocab_size);
  ck.attr("model.block_size", cfg.block_size);
  ck.attr("model.n_layer", cfg.n_layer);
  ck.attr("model.n_head", cfg.n_head);
  ck.attr("model.n_embd", cfg.n_embd);
  ck.attr("model.bias", int64_t(cfg.bias));
  ck.attr("model.gelu", std::string(enum_name(cfg.gelu)));
  ck.attr("model.input", std::string(enum_name(cfg.input)));
  ck.attr("model.predict_tokens", cfg.predict_tokens);
  ck.attr("model.linear", std::string(enum_name(cfg.linear.kind)));
  if (cfg.linear.kind == LinearKind::bitlinear) {
    const BitLinearOptions& o = cfg.linear.bitlinear;
    ck.attr("bitlinear.weight_scale", std::string(enum_name(o.weight_scale)));
    ck.attr("bitlinear.act_bits", int64_t(o.act.bits));
    ck.attr("bitlinear.norm", std::string(enum_name(o.act.norm)));
    ck.attr("bitlinear.lm_head", int64_t(cfg.head == HeadKind::bitlinear));
  }
  ck.attr("model.head", std::string(cfg.head == HeadKind::bide ? "bide" : "softmax"));
  if (cfg.head == HeadKind::bide) {
    ck.attr("head.bide.bits", int64_t(cfg.bide.bits));
    ck.attr("head.bide.hidden", cfg.bide.hidden);
    ck.attr("head.bide.support", cfg.bide.support);
    ck.attr("head.bide.sick.dtype", std::string(enum_name(cfg.bide.precision)));
    ck.attr("head.bide.sick.variant", std::string(enum_name(cfg.bide.variant)));
    ck.attr("head.bide.code", std::string(enum_name(cfg.bide.code)));
    ck.attr("head.bide.softmax_ids", cfg.bide.softmax_ids);
    ck.attr("head.bide.tie_softmax", int64_t(cfg.bide.tie_softmax));
  }
}

GPTConfig load_gpt_config(const CheckpointReader& ck, const std::string& path) {
  BG_CHECK(ck.has_attr("model_type") && ck.str_attr("model_type") == "gpt", "gpt", path,
           " does not hold a GPT (model_type '",
           ck.has_attr("model_type") ? ck.str_attr("model_type") : std::string("?"), "')");
  GPTConfig cfg;
  cfg.vocab_size = ck.int_attr("model.vocab_size");
  cfg.block_size = ck.int_attr("model.block_size");
  cfg.n_layer = ck.int_attr("model.n_layer");
  cfg.n_head = ck.int_attr("model.n_head");
  cfg.n_embd = ck.int_attr("model.n_embd");
  cfg.bias = ck.int_attr("model.bias") != 0;
  const std::string gelu = ck.has_attr("model.gelu") ? ck.str_attr("model.gelu") : "tanh";
  BG_CHECK(parse_enum(gelu, &cfg.gelu), "gpt", path, ": model.gelu is '", gelu, "', expected ",
           enum_names_text<GeluForm>());
  // Checkpoints before model.input / model.predict_tokens had an embedding and one token.
  const std::string input = ck.has_attr("model.input") ? ck.str_attr("model.input") : "embedding";
  BG_CHECK(parse_enum(input, &cfg.input), "gpt", path, ": model.input is '", input, "', expected ",
           enum_names_text<InputKind>());
  cfg.predict_tokens =
      ck.has_attr("model.predict_tokens") ? ck.int_attr("model.predict_tokens") : 1;
  const std::string linear = ck.has_attr("model.linear") ? ck.str_attr("model.linear") : "dense";
  BG_CHECK(parse_enum(linear, &cfg.linear.kind), "gpt", path, ": model.linear is '", linear,
           "', expected ", enum_names_text<LinearKind>());
  if (cfg.linear.kind == LinearKind::bitlinear) {
    BitLinearOptions& o = cfg.linear.bitlinear;
    const std::string scale = ck.str_attr("bitlinear.weight_scale");
    BG_CHECK(parse_enum(scale, &o.weight_scale), "gpt", path, ": bitlinear.weight_scale is '",
             scale, "', expected ", enum_names_text<TernaryScale>());
    const std::string norm = ck.str_attr("bitlinear.norm");
    BG_CHECK(parse_enum(norm, &o.act.norm), "gpt", path, ": bitlinear.norm is '", norm,
             "', expected ", enum_names_text<BitNorm>());
    o.act.bits = int(ck.int_attr("bitlinear.act_bits"));
    BG_CHECK(o.act.bits >= 2 && o.act.bits <= 8, "gpt", path, ": bitlinear.act_bits is ",
             o.act.bits, ", expected 2 to 8");
    const int64_t head = ck.int_attr("bitlinear.lm_head");
    BG_CHECK(head == 0 || head == 1, "gpt", path, ": bitlinear.lm_head is ", head,
             ", expected 0 or 1");
    cfg.head = head == 1 ? HeadKind::bitlinear : HeadKind::softmax;
  }
  // Checkpoints before model.head had the tied softmax head.
  const std::string head = ck.has_attr("model.head") ? ck.str_attr("model.head") : "softmax";
  BG_CHECK(head == "softmax" || head == "bide", "checkpoint", path, ": attribute model.head is '",
           head, "', expected softmax or bide");
  if (head == "bide") {
    BG_CHECK(cfg.head == HeadKind::softmax, "checkpoint", path,
             ": model.head bide with bitlinear.lm_head");
    cfg.head = HeadKind::bide;
    BideHeadSpec& b = cfg.bide;
    b.bits = int(ck.int_attr("head.bide.bits"));
    b.hidden = ck.int_attr("head.bide.hidden");
    b.support = ck.int_attr("head.bide.support");
    const std::string dtype = ck.str_attr("head.bide.sick.dtype"),
                      variant = ck.str_attr("head.bide.sick.variant");
    BG_CHECK(parse_enum(dtype, &b.precision), "checkpoint", path,
             ": attribute head.bide.sick.dtype is '", dtype, "', expected ",
             enum_names_text<SickPrecision>());
    BG_CHECK(parse_enum(variant, &b.variant), "checkpoint", path,
             ": attribute head.bide.sick.variant is '", variant, "', expected ",
             enum_names_text<SickVariant>());
    const std::string code = ck.has_attr("head.bide.code") ? ck.str_attr("head.bide.code") : "id";
    BG_CHECK(parse_enum(code, &b.code), "checkpoint", path, ": attribute head.bide.code is '", code,
             "', expected ", enum_names_text<BideTokenCode>());
    b.softmax_ids = ck.has_attr("head.bide.softmax_ids") ? ck.int_attr("head.bide.softmax_ids") : 0;
    const int64_t tie =
        ck.has_attr("head.bide.tie_softmax") ? ck.int_attr("head.bide.tie_softmax") : 0;
    BG_CHECK((tie == 0 || tie == 1) &&
                 (tie == 0 || (b.softmax_ids > 0 && cfg.input == InputKind::embedding)),
             "checkpoint", path, ": attribute head.bide.tie_softmax is ", tie,
             ", expected 0, or 1 with head.bide.softmax_ids > 0 and model.input embedding");
    b.tie_softmax = tie == 1;
    BG_CHECK(b.bits >= 1 && b.bits <= 24 && b.hidden >= 1 && b.hidden <= kMaxBideHidden &&
                 b.support >= 2 && b.support <= target_vocabulary(cfg) &&
                 b.support <= (int64_t(1) << b.bits) && b.softmax_ids >= 0 &&
                 b.softmax_ids < b.support,
             "checkpoint", path, ": inconsistent head.bide.* attributes (bits ", b.bits,
             ", hidden ", b.hidden, ", support ", b.support, ", softmax_ids ", b.softmax_ids, ")");
  }
  // The ranges train's config allows, each named: a crafted attribute must not become a huge
  // allocation.
  auto in_range = [&](const char* key, int64_t v, int64_t lo, int64_t hi) {
    BG_CHECK(v >= lo && v <= hi, "checkpoint", path, ": attribute ", key, " is ", v, ", expected ",
             lo, " to ", hi);
  };
  in_range("model.vocab_size", cfg.vocab_size, 1, 1 << 24);
  in_range("model.block_size", cfg.block_size, 1, 1 << 20);
  in_range("model.n_layer", cfg.n_layer, 1, 256);
  in_range("model.n_head", cfg.n_head, 1, 1024);
  in_range("model.n_embd", cfg.n_embd, 1, 1 << 16);
  in_range("model.predict_tokens", cfg.predict_tokens, 1, 2);
  BG_CHECK(cfg.predict_tokens == 1 || cfg.head == HeadKind::bide, "checkpoint", path,
           ": model.predict_tokens ", cfg.predict_tokens, " without a BIDE head");
  BG_CHECK(cfg.input == InputKind::embedding || cfg.head == HeadKind::bide, "checkpoint", path,
           ": model.input bits without a BIDE head (the softmax head is tied to wte)");
  BG_CHECK(cfg.n_embd % cfg.n_head == 0, "checkpoint", path, ": attribute model.n_embd ",
           cfg.n_embd, " is not divisible by model.n_head ", cfg.n_head);
  // The embeddings the file holds must be the attributes' sizes, before anything is allocated.
  const bool bits = cfg.input == InputKind::bits;
  const int64_t in_bits = bits_for_vocabulary(cfg.vocab_size);
  for (const auto& [name, want] :
       {std::pair<const char*, Shape>{
            bits ? "transformer.wbe.weight" : "transformer.wte.weight",
            bits ? Shape{cfg.n_embd, in_bits} : Shape{cfg.vocab_size, cfg.n_embd}},
        {"transformer.wpe.weight", Shape{cfg.block_size, cfg.n_embd}}}) {
    BG_CHECK(ck.has(name), "checkpoint", path, ": missing tensor '", name, "'");
    const Shape shape = ck.shape(name);
    BG_CHECK(shape == want, "checkpoint", path, ": tensor '", name, "' has shape ",
             shape_str(shape), ", but the model.* attributes say ", shape_str(want));
  }
  const std::string last_block =
      "transformer.h." + std::to_string(cfg.n_layer - 1) + ".ln_1.weight";
  BG_CHECK(ck.has(last_block) && !ck.has("transformer.h." + std::to_string(cfg.n_layer)),
           "checkpoint", path, ": the file's blocks do not number model.n_layer = ", cfg.n_layer);
  return cfg;
}

std::string gpt_architecture_difference(const GPTConfig& a, const GPTConfig& b) {
  std::string d;
  auto cmp = [&](const char* name, int64_t x, int64_t y) {
    if (x != y)
      d += (d.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(x) + " vs " +
           std::to_string(y);
  };
  cmp("vocab_size", a.vocab_size, b.vocab_size);
  cmp("block_size", a.block_size, b.block_size);
  cmp("n_layer", a.n_layer, b.n_layer);
  cmp("n_head", a.n_head, b.n_head);
  cmp("n_embd", a.n_embd, b.n_embd);
  cmp("bias", a.bias, b.bias);
  cmp("predict_tokens", a.predict_tokens, b.predict_tokens);
  if (a.input != b.input)
    d += std::string(d.empty() ? "" : ", ") + "input " + enum_name(a.input) + " vs " +
         enum_name(b.input);
  if (a.linear.kind != b.linear.kind)
    d += std::string(d.empty() ? "" : ", ") + "linear " + enum_name(a.linear.kind) + " vs " +
         enum_name(b.linear.kind);
  if (a.linear.kind == LinearKind::bitlinear && b.linear.kind == LinearKind::bitlinear) {
    const BitLinearOptions &x = a.linear.bitlinear, &y = b.linear.bitlinear;
    auto name = [&](const char* key, const std::string& u, const std::string& v) {
      if (u != v) d += (d.empty() ? "" : ", ") + std::string(key) + " " + u + " vs " + v;
    };
    name("bitlinear.weight_scale", enum_name(x.weight_scale), enum_name(y.weight_scale));
    name("bitlinear.norm", enum_name(x.act.norm), enum_name(y.act.norm));
    cmp("bitlinear.act_bits", x.act.bits, y.act.bits);
    cmp("bitlinear.lm_head", a.head == HeadKind::bitlinear, b.head == HeadKind::bitlinear);
  }
  if (a.gelu != b.gelu)
    d += std::string(d.empty() ? "" : ", ") + "gelu " + enum_name(a.gelu) + " vs " +
         enum_name(b.gelu);
  if ((a.head == HeadKind::bide) != (b.head == HeadKind::bide))
    d += std::string(d.empty() ? "" : ", ") + "head " + enum_name(a.head) + " vs " +
         enum_name(b.head);
  if (a.head == HeadKind::bide && b.head == HeadKind::bide) {
    cmp("head.bide.bits", a.bide.bits, b.bide.bits);
    cmp("head.bide.hidden", a.bide.hidden, b.bide.hidden);
    cmp("head.bide.support", a.bide.support, b.bide.support);
    cmp("head.bide.softmax_ids", a.bide.softmax_ids, b.bide.softmax_ids);
    cmp("head.bide.tie_softmax", a.bide.tie_softmax, b.bide.tie_softmax);
    if (a.bide.code != b.bide.code)
      d += std::string(d.empty() ? "" : ", ") + "head.bide.code " + enum_name(a.bide.code) +
           " vs " + enum_name(b.bide.code);
    if (a.bide.precision != b.bide.precision || a.bide.variant != b.bide.variant)
      d += std::string(d.empty() ? "" : ", ") + "head.bide.sick.dtype/variant " +
           enum_name(a.bide.precision) + "/" + enum_name(a.bide.variant) + " vs " +
           enum_name(b.bide.precision) + "/" + enum_name(b.bide.variant);
  }
  return d;
}

void resolve_bide_head(GPTConfig& cfg) {
  if (cfg.head != HeadKind::bide) return;
  BideHeadSpec& spec = cfg.bide;
  if (spec.support == 0) spec.support = target_vocabulary(cfg);
  if (spec.bits == 0) spec.bits = bits_for_vocabulary(spec.support);
}

int64_t target_vocabulary(const GPTConfig& cfg) {
  int64_t n = 1;
  for (int64_t j = 0; j < cfg.predict_tokens; ++j) n *= cfg.vocab_size;
  return n;
}

int64_t joint_target(const GPTConfig& cfg, const int32_t* next_tokens) {
  int64_t id = 0;
  for (int64_t j = 0; j < cfg.predict_tokens; ++j) id = id * cfg.vocab_size + next_tokens[j];
  return id;
}

void append_target_tokens(const GPTConfig& cfg, int64_t target, std::vector<int32_t>& out) {
  const size_t at = out.size();
  out.resize(at + size_t(cfg.predict_tokens));
  for (int64_t j = cfg.predict_tokens; j-- > 0;) {
    out[at + size_t(j)] = int32_t(target % cfg.vocab_size);
    target /= cfg.vocab_size;
  }
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

Block::Block(const GPTConfig& cfg, Generator& init) {
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

GPT::GPT(const GPTConfig& cfg, Generator& init) : cfg_(cfg) {
  BG_CHECK(cfg.vocab_size > 0 && cfg.block_size > 0 && cfg.n_layer > 0, "gpt",
           "vocab_size, block_size and n_layer must be positive, got ", cfg.vocab_size, ", ",
           cfg.block_size, ", ", cfg.n_layer);
  BG_CHECK(cfg.input == InputKind::embedding || cfg.head == HeadKind::bide, "gpt",
           "model.input: bits leaves no token embedding for the softmax head to tie to; use "
           "model.head: bide");
  BG_CHECK(cfg.predict_tokens == 1 || cfg.head == HeadKind::bide, "gpt", "predicting ",
           cfg.predict_tokens, " tokens jointly needs model.head: bide");
  if (cfg.input == InputKind::embedding) {
    wte_ = register_module("transformer.wte",
                           std::make_shared<Embedding>(cfg.vocab_size, cfg.n_embd, init, 0.02));
  } else {
    // +-1 inputs: N(0, 0.02 / sqrt(B)) weights give features of wte's scale.
    const int64_t bits = bits_for_vocabulary(cfg.vocab_size);
    wbe_ = register_module(
        "transformer.wbe",
        std::make_shared<Linear>(bits, cfg.n_embd, false, init, 0.02 / std::sqrt(double(bits))));
  }
  wpe_ = register_module("transformer.wpe",
                         std::make_shared<Embedding>(cfg.block_size, cfg.n_embd, init, 0.02));
  for (int64_t i = 0; i < cfg.n_layer; ++i)
    blocks_.push_back(
        register_module("transformer.h." + std::to_string(i), std::make_shared<Block>(cfg, init)));
  ln_f_ = register_module("transformer.ln_f", std::make_shared<LayerNorm>(cfg.n_embd, cfg.bias));
  if (cfg.head == HeadKind::bide) {
    resolve_bide_head(cfg_);  // what is still unset: the checkpoint records what ran
    const BideHeadSpec& spec = cfg_.bide;
    head_ = register_module(
        "lm_head",
        std::make_shared<BideTokenHead>(cfg.n_embd, spec, init, spec.tie_softmax ? wte_ : nullptr));
  } else {
    head_ = register_module(
        "lm_head", std::make_shared<TiedSoftmaxHead>(wte_, cfg.head, cfg.linear.bitlinear));
  }
}

Tensor GPT::forward(const Tensor& idx, Generator& gen) const {
  return forward_from_embeddings(embed(idx, gen), gen);
}

Tensor GPT::embed(const Tensor& idx, Generator& gen) const {
  BG_CHECK(idx.ndim() == 2, "gpt", "expected (B, T) token ids, got ", shape_str(idx.shape()));
  const int64_t t = idx.size(1);
  BG_CHECK(t >= 1 && t <= cfg_.block_size, "gpt", "sequence length ", t,
           " is outside [1, block_size = ", cfg_.block_size, "]");
  // Positions 0..T-1 embed to the first T rows of wpe: a slice, no index tensor to upload.
  return dropout(token_features(idx) + wpe_->weight.slice(0, 0, t), cfg_.dropout, training(), gen);
}

Tensor GPT::token_features(const Tensor& idx) const {
  if (wte_) return wte_->forward(idx);
  if (!bit_table_.defined() || bit_table_.device() != idx.device()) {
    const int64_t bits = wbe_->weight.size(1);
    std::vector<float> table(size_t(cfg_.vocab_size * bits));
    for (int64_t id = 0; id < cfg_.vocab_size; ++id)
      for (int64_t j = 0; j < bits; ++j) table[size_t(id * bits + j)] = (id >> j) & 1 ? 1.f : -1.f;
    bit_table_ = from_vector(table, {cfg_.vocab_size, bits}, idx.device());
  }
  return wbe_->forward(embedding(bit_table_, idx));
}

void GPT::quantize_weights() const {
  // The blocks' BitLinear weights in one pass (three launches on CUDA) rather than one per layer.
  // Not the head's: not every reader of the head runs all its layers once a forward.
  if (cfg_.linear.kind != LinearKind::bitlinear) return;
  std::vector<const Module*> blocks;
  for (const auto& block : blocks_) blocks.push_back(block.get());
  quantize_bitlinear_weights(blocks);
}

Tensor GPT::hidden_from_embeddings(const Tensor& embedded, Generator& gen) const {
  quantize_weights();
  Tensor x = embedded;
  for (const auto& block : blocks_) x = block->forward(x, gen);
  return ln_f_->forward_for_matmul(x);
}

Tensor GPT::forward_from_embeddings(const Tensor& embedded, Generator& gen) const {
  return head_->logits(hidden_from_embeddings(embedded, gen));
}

void GPT::use_packed_head(PackedTernary packed) {
  auto* tied = dynamic_cast<TiedSoftmaxHead*>(head_.get());
  BG_CHECK(tied, "gpt", "a packed LM head needs the tied BitLinear head");
  tied->use_packed(std::move(packed));
}

KVCache GPT::new_cache(int64_t batch, Device device, DType dtype) const {
  KVCache cache;
  const int64_t hd = cfg_.n_embd / cfg_.n_head;
  for (int64_t i = 0; i < cfg_.n_layer; ++i) {
    cache.k.push_back(zeros({batch, cfg_.n_head, cfg_.block_size, hd}, dtype, device));
    cache.v.push_back(zeros({batch, cfg_.n_head, cfg_.block_size, hd}, dtype, device));
  }
  return cache;
}

Tensor GPT::forward_cached(const Tensor& idx, KVCache& cache) const {
  const Tensor last = forward_cached_hidden(idx, cache);
  return head_->logits(last).reshape({idx.size(0), -1});
}

Tensor GPT::forward_cached_hidden(const Tensor& idx, KVCache& cache) const {
  BG_CHECK(!training(), "gpt", "forward_cached is for inference (call train(false) first)");
  const int64_t t = idx.size(1), past = cache.length;
  BG_CHECK(t >= 1 && past + t <= cfg_.block_size, "gpt", "positions ", past, "..", past + t - 1,
           " run past block_size = ", cfg_.block_size);
  quantize_weights();
  Tensor x = token_features(idx) + wpe_->weight.slice(0, past, past + t);
  for (size_t i = 0; i < blocks_.size(); ++i)
    x = blocks_[i]->forward_cached(x, cache.k[i], cache.v[i], past);
  cache.length = past + t;
  return ln_f_->forward(x.slice(1, t - 1, t)).reshape({idx.size(0), cfg_.n_embd});
}

Tensor GPT::loss(const Tensor& idx, const Tensor& targets, Generator& gen) const {
  const Tensor h = hidden_from_embeddings(embed(idx, gen), gen);
  const int64_t rows = idx.size(0) * idx.size(1);
  return head_->loss(h.reshape({rows, cfg_.n_embd}), targets.reshape({rows}));
}

int64_t GPT::non_embedding_parameters() const { return parameter_count() - wpe_->weight.numel(); }

TargetScores GPT::score(const Tensor& idx, const Tensor& targets) const {
  Generator unused;  // no dropout: the caller evaluates (train(false))
  const int64_t rows = idx.size(0) * idx.size(1);
  const Tensor h = hidden_from_embeddings(embed(idx, unused), unused).reshape({rows, cfg_.n_embd});
  TargetScores out;
  out.nll = head_->loss(h, targets.reshape({rows}), "none");
  if (const BideTokenHead* bide = bide_head()) {
    // The mass the same head would put outside the vocabulary, unrestricted. The two
    // normalisers come from separate SICK passes: with no mass outside, rounding can put
    // z_vocab a hair above z_all, which is no mass, not a negative one.
    const auto [z_vocab, z_all] = bide->log_normalizers(h);
    const Tensor mass = exp(z_vocab - z_all) * -1.0 + 1.0;
    out.outside_mass = maximum(mass, zeros({}, mass.dtype(), mass.device()));
  }
  return out;
}

std::vector<int32_t> GPT::generate(std::vector<int32_t> ids, const SampleSettings& s,
                                   int64_t vocab_limit, Generator& gen, Device device,
                                   const std::function<bool(int32_t)>& on_token) const {
  return generate_cached(*this, std::move(ids), s, vocab_limit, gen, device, on_token);
}

void GPT::save_description(CheckpointWriter& ck) const {
  if (cfg_.head != HeadKind::bide) ck.tensor(kTiedHeadAlias, wte_->weight);
  save_gpt_config(ck, cfg_);
  save_bide_code(ck, *this);
  save_trained_attention(ck, cfg_.fused_attention ? AttentionChoice::fused : AttentionChoice::composed);
}

void GPT::load_extras(const CheckpointReader& ck, const std::string& path) {
  load_bide_code(ck, path, *this);
}

std::string GPT::architecture_difference(const CheckpointReader& ck,
                                         const std::string& path) const {
  return gpt_architecture_difference(load_gpt_config(ck, path), cfg_);
}

}  // namespace bg
