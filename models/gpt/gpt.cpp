#include "gpt.h"

#include <cmath>

#include "core/checkpoint.h"

namespace bg {

const Settings<GPTConfig>& gpt_settings() {
  static const Settings<GPTConfig> s = [] {
    Settings<GPTConfig> s("gpt");
    s.nested(trunk_settings(), [](auto& c) -> TrunkConfig& { return c; });
    // Files before model.head had the tied softmax head (or, with BitLinear, the legacy
    // bitlinear.lm_head attribute load_gpt_config reads).
    s.choice("model.head", [](auto& c) -> auto& { return c.head; },
             "softmax (tied to the token embedding), bitlinear (the same tied head as a "
             "BitLinear product; needs model.linear bitlinear) or bide (the next token's id as a "
             "bit pattern, normalised exactly over the vocabulary by SICK)",
             kArchitecture | kOptional);
    s.when([](const GPTConfig& c) { return c.head == HeadKind::bide; },
           [](const GPTConfig& c) { return "model.head is " + std::string(enum_name(c.head)); });
    s.nested(bide_head_settings(), [](auto& c) -> auto& { return c.bide; });
    s.always();
    // Files before model.input / model.predict_tokens had an embedding and one token.
    s.choice("model.input", [](auto& c) -> auto& { return c.input; },
             "embedding (a vocab_size x n_embd table) or bits (the id's bits in {-1, +1} "
             "through a linear layer; needs model.head bide)",
             kArchitecture | kOptional);
    s.integer("model.predict_tokens", [](auto& c) -> auto& { return c.predict_tokens; }, 1, 2,
              "tokens each position predicts jointly (2 for data.tokenizer byte_pair)",
              kArchitecture | kDerived | kOptional);
    // 0 in a config: the tokenizer's size; a checkpoint holds what ran.
    s.integer("model.vocab_size", [](auto& c) -> auto& { return c.vocab_size; }, 0, 1 << 24,
              "0 = the tokenizer's size; larger pads the embedding (GPT-2: 50304)",
              kArchitecture);
    return s;
  }();
  return s;
}

SettingProblem gpt_config_problem(const GPTConfig& c, bool resolved) {
  const BideHeadSpec& b = c.bide;
  const bool bide = c.head == HeadKind::bide;
  if (const SettingProblem p = trunk_config_problem(c)) return p;
  if (c.head == HeadKind::bitlinear && c.linear.kind != LinearKind::bitlinear)
    return {"model.head", "bitlinear makes the tied head a BitLinear product like the "
                          "projections; it needs model.linear: bitlinear"};
  if (bide && b.variant == SickVariant::precomputed && b.hidden > kMaxPrecomputedSickHidden)
    return {"head.bide.sick.variant",
            "the precomputed kernel holds up to " + std::to_string(kMaxPrecomputedSickHidden) +
                " hidden units; use bruteforce or auto for head.bide.hidden " +
                std::to_string(b.hidden)};
  if (bide && b.softmax_ids > 0 && b.code == BideTokenCode::id)
    return {"head.bide.softmax_ids",
            "the softmax takes the most frequent ids, the first patterns of head.bide.code: "
            "frequency or frequent_first; set one"};
  if (bide && b.softmax_ids == 0 && b.code == BideTokenCode::frequent_first)
    return {"head.bide.code",
            "frequent_first ranks the hybrid's softmax ids first; set head.bide.softmax_ids > 0 "
            "(or use frequency)"};
  if (bide && b.tie_softmax && b.softmax_ids == 0)
    return {"head.bide.tie_softmax",
            "ties the hybrid's softmax rows to the token embedding; set head.bide.softmax_ids > 0"};
  if (c.input == InputKind::bits && !bide)
    return {"model.input",
            "bits leaves no token embedding for the softmax head to tie to; use model.head: bide"};
  if (bide && c.input == InputKind::bits && b.tie_softmax)
    return {"head.bide.tie_softmax",
            "model.input: bits leaves no token embedding to tie the softmax rows to"};
  if (c.predict_tokens != 1 && !bide)
    return {"model.predict_tokens",
            std::to_string(c.predict_tokens) + " tokens predicted jointly need a BIDE head"};
  if (!resolved) return {};
  if (c.vocab_size < 1) return {"model.vocab_size", "is 0, expected the vocabulary's size"};
  if (bide && !(b.bits >= 1 && b.support >= 2 && b.support <= target_vocabulary(c) &&
                b.support <= (int64_t(1) << b.bits) && b.softmax_ids < b.support))
    return {"head.bide.support",
            "inconsistent head.bide.* (bits " + std::to_string(b.bits) + ", support " +
                std::to_string(b.support) + ", softmax_ids " + std::to_string(b.softmax_ids) +
                ", targets " + std::to_string(target_vocabulary(c)) + ")"};
  return {};
}

void save_gpt_config(CheckpointWriter& ck, const GPTConfig& cfg) {
  gpt_settings().save(ck, cfg);
}

GPTConfig load_gpt_config(const CheckpointReader& ck, const std::string& path) {
  BG_CHECK(ck.has_attr("model_type") && ck.str_attr("model_type") == "gpt", "gpt", path,
           " does not hold a GPT (model_type '",
           ck.has_attr("model_type") ? ck.str_attr("model_type") : std::string("?"), "')");
  GPTConfig cfg = gpt_settings().load(ck, path);
  // Files before model.head: bitlinear said so by bitlinear.lm_head: 1 beside model.head softmax.
  if (cfg.linear.kind == LinearKind::bitlinear && ck.has_attr("bitlinear.lm_head")) {
    const int64_t head = ck.int_attr("bitlinear.lm_head");
    BG_CHECK((head == 0 || head == 1) && (head == 0 || cfg.head == HeadKind::softmax),
             "checkpoint", path, ": attribute bitlinear.lm_head is ", head, " with model.head ",
             enum_name(cfg.head), ", expected 0, or 1 with softmax");
    if (head == 1) cfg.head = HeadKind::bitlinear;
  }
  if (const SettingProblem p = gpt_config_problem(cfg, true))
    fail("checkpoint", path, ": attribute ", p.key, ": ", p.message);
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
  return gpt_settings().difference(a, b);
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

std::string activations_problem(const ComputeMode& mode, const GPTConfig* gpt) {
  if (mode.activations != ActivationDtype::bf16) return "";
  if (!gpt)
    return "bf16 activations are a transformer trunk's (model.type: gpt or forecaster)";
  if (const std::string p = trunk_activations_problem(mode, *gpt); !p.empty()) return p;
  if (gpt->head != HeadKind::softmax)
    return "bf16 activations feed the softmax head; model.head: bide keeps fp32";
  return "";
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
  trunk_ = register_module("transformer", std::make_shared<Trunk>(cfg, init));
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
  return dropout(stream_input(idx, 0), cfg_.dropout, training(), gen);
}

Tensor GPT::stream_input(const Tensor& idx, int64_t past) const {
  return trunk_->stream_input(token_features(idx), past);
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

Tensor GPT::hidden_from_embeddings(const Tensor& embedded, Generator& gen) const {
  return trunk_->forward(embedded, gen);
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
  return trunk_->new_cache(batch, device, dtype);
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
  return trunk_->forward_cached(stream_input(idx, past), cache);
}

Tensor GPT::loss(const Tensor& idx, const Tensor& targets, Generator& gen) const {
  const Tensor h = hidden_from_embeddings(embed(idx, gen), gen);
  const int64_t rows = idx.size(0) * idx.size(1);
  return head_->loss(h.reshape({rows, cfg_.n_embd}), targets.reshape({rows}));
}

int64_t GPT::non_embedding_parameters() const {
  return parameter_count() - trunk_->position_parameters();
}

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

void save_bide_code(CheckpointWriter& ck, const GPT& model) {
  const BideTokenHead* head = model.bide_head();
  if (!head || head->code_of_id().empty()) return;
  const std::vector<int64_t>& code = head->code_of_id();
  ck.tensor(kBideCodeDataset, from_vector(code, {int64_t(code.size())}));
}

void load_bide_code(const CheckpointReader& ck, const std::string& path, GPT& model) {
  BideTokenHead* head = model.bide_head();
  // A table beside the id code means the attribute and the datasets disagree: the head would
  // read its logits under the wrong patterns.
  BG_CHECK(!ck.has(kBideCodeDataset) || (head && model.config().bide.code != BideTokenCode::id),
           "checkpoint", path, ": holds a token code table (", kBideCodeDataset,
           ") but head.bide.code is ", head ? enum_name(model.config().bide.code) : "unset",
           "; the attribute does not match the file");
  if (!head || model.config().bide.code == BideTokenCode::id) return;
  const int64_t support = model.config().bide.support;
  BG_CHECK(ck.has(kBideCodeDataset), "checkpoint", path, ": head.bide.code is ",
           enum_name(model.config().bide.code), " but the file holds no ", kBideCodeDataset);
  const Tensor code = ck.tensor(kBideCodeDataset, DType::i64, {support});
  try {
    head->set_code(code.to_vector<int64_t>());
  } catch (const Error& e) {
    fail("checkpoint", path, ": ", kBideCodeDataset, ": ", e.what());
  }
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

DeterminismProbe GPT::probe(const Tensor& idx, const Tensor& targets) const {
  Generator unused;
  const int64_t n = idx.size(0), t = idx.size(1);
  const Tensor x = embed(idx, unused).detach().requires_grad_(true);
  const Tensor h = hidden_from_embeddings(x, unused).reshape({n * t, cfg_.n_embd});
  const Tensor out = head().outputs(h);
  head().loss(h, targets.reshape({n * t}), "sum").backward();
  return {out.detach(), x.grad()};
}

Tensor GPT::sampler_outputs(const Tensor& idx) const {
  NoGradGuard no_grad;
  KVCache cache = new_cache(1, idx.device());
  std::vector<Tensor> rows;
  for (int64_t pos = 0; pos < idx.size(1); ++pos)
    rows.push_back(head().outputs(forward_cached_hidden(idx.slice(1, pos, pos + 1), cache)));
  return concat(rows, 0);
}

std::string GPT::architecture_difference(const CheckpointReader& ck,
                                         const std::string& path) const {
  return gpt_architecture_difference(load_gpt_config(ck, path), cfg_);
}

}  // namespace bg
