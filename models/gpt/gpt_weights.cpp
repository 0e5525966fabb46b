#include "gpt_weights.h"

#include <cmath>
#include <cstdlib>

#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/files.h"
#include "core/json.h"
#include "core/ops.h"
#include "core/strings.h"
#include "data/safetensors.h"

namespace bg {
namespace {

constexpr const char* kOp = "gpt2 weights";

// GPT-2's parameters in bitgrad's order: named_parameters' names and shapes for `cfg`.
std::vector<std::pair<std::string, Shape>> gpt2_parameter_shapes(const GPTConfig& cfg) {
  BG_CHECK(cfg.bias && cfg.input == InputKind::embedding && cfg.predict_tokens == 1 &&
               cfg.head == HeadKind::softmax,
           kOp, "GPT-2's weights fit a GPT with biases, a token embedding, one token a position "
                "and the tied softmax head");
  const int64_t c = cfg.n_embd;
  std::vector<std::pair<std::string, Shape>> s = {{"transformer.wte.weight", {cfg.vocab_size, c}},
                                                  {"transformer.wpe.weight", {cfg.block_size, c}}};
  for (int64_t l = 0; l < cfg.n_layer; ++l) {
    const std::string h = "transformer.h." + std::to_string(l) + ".";
    const std::pair<std::string, Shape> layer[] = {
        {"ln_1.weight", {c}},          {"ln_1.bias", {c}},           {"attn.c_attn.weight", {3 * c, c}},
        {"attn.c_attn.bias", {3 * c}}, {"attn.c_proj.weight", {c, c}}, {"attn.c_proj.bias", {c}},
        {"ln_2.weight", {c}},          {"ln_2.bias", {c}},           {"mlp.c_fc.weight", {4 * c, c}},
        {"mlp.c_fc.bias", {4 * c}},    {"mlp.c_proj.weight", {c, 4 * c}}, {"mlp.c_proj.bias", {c}}};
    for (const auto& [name, shape] : layer) s.push_back({h + name, shape});
  }
  s.push_back({"transformer.ln_f.weight", {c}});
  s.push_back({"transformer.ln_f.bias", {c}});
  return s;
}

// Conv1D's weights: stored (in, out) by transformers.
bool is_conv1d(const std::string& name) {
  for (const char* tail : {"attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight",
                           "mlp.c_proj.weight"})
    if (ends_with(name, tail)) return true;
  return false;
}

// The vocabulary's rows: `w` (rows, C) padded with zero rows to `rows`, or cut to them.
Tensor vocabulary_rows(const Tensor& w, int64_t rows) {
  if (w.size(0) >= rows) return w.slice(0, 0, rows).contiguous();
  return concat({w, zeros({rows - w.size(0), w.size(1)}, w.dtype(), w.device())}, 0);
}

int64_t json_int(const JsonValue& root, const char* key, const std::string& where) {
  const JsonValue* v = root.find(key);
  BG_CHECK(v, kOp, where, ": no \"", key, "\"");
  const uint64_t n = v->as_uint64(kOp, where + ": " + key);
  BG_CHECK(n >= 1 && n <= (uint64_t(1) << 24), kOp, where, ": ", key, " ", n, " out of range");
  return int64_t(n);
}

// Per-layer name -> llm.c's stacked tensor, in bitgrad's layer order, which is also llm.c's
// order of its stacked tensors (llmc_parameter_shapes).
const std::pair<const char*, const char*> kLlmcLayer[] = {
    {"ln_1.weight", "ln1w"},         {"ln_1.bias", "ln1b"},          {"attn.c_attn.weight", "qkvw"},
    {"attn.c_attn.bias", "qkvb"},    {"attn.c_proj.weight", "attprojw"},
    {"attn.c_proj.bias", "attprojb"}, {"ln_2.weight", "ln2w"},        {"ln_2.bias", "ln2b"},
    {"mlp.c_fc.weight", "fcw"},      {"mlp.c_fc.bias", "fcb"},       {"mlp.c_proj.weight", "fcprojw"},
    {"mlp.c_proj.bias", "fcprojb"}};

}  // namespace

GPTConfig gpt_config_from_hf(const std::string& config_json, const std::string& where,
                             int64_t padded_vocab) {
  const JsonValue root = parse_json(config_json, kOp, where);
  BG_CHECK(root.kind == JsonValue::Kind::object, kOp, where, ": not a JSON object");
  GPTConfig cfg;
  cfg.n_layer = json_int(root, "n_layer", where);
  cfg.n_head = json_int(root, "n_head", where);
  cfg.n_embd = json_int(root, "n_embd", where);
  cfg.block_size = json_int(root, "n_positions", where);
  cfg.vocab_size = std::max(json_int(root, "vocab_size", where), padded_vocab);
  BG_CHECK(cfg.n_embd % cfg.n_head == 0, kOp, where, ": n_embd ", cfg.n_embd,
           " is not a multiple of n_head ", cfg.n_head);
  cfg.bias = true;
  cfg.dropout = 0.0;
  if (const JsonValue* act = root.find("activation_function")) {
    BG_CHECK(act->kind == JsonValue::Kind::string, kOp, where, ": activation_function is not a string");
    if (act->text == "gelu_new" || act->text == "gelu_pytorch_tanh" || act->text == "gelu_fast")
      cfg.gelu = GeluForm::tanh;
    else if (act->text == "gelu")
      cfg.gelu = GeluForm::erf;
    else
      fail(kOp, where, ": activation_function ", act->text, " (bitgrad's GPT has gelu_new, the "
           "tanh form, and gelu, the erf form)");
  }
  if (const JsonValue* eps = root.find("layer_norm_epsilon")) {
    BG_CHECK(eps->kind == JsonValue::Kind::number &&
                 std::fabs(std::strtod(eps->text.c_str(), nullptr) - 1e-5) < 1e-12,
             kOp, where, ": layer_norm_epsilon must be 1e-5 (bitgrad's layernorm), got ",
             eps->kind == JsonValue::Kind::number ? eps->text : "not a number");
  }
  // Fields of transformers' GPT2Config that change what the model computes: refused unless they
  // hold the value bitgrad computes (a field left out means transformers' default, which is).
  if (const JsonValue* type = root.find("model_type"))
    BG_CHECK(type->kind == JsonValue::Kind::string && type->text == "gpt2", kOp, where,
             ": model_type ", type->kind == JsonValue::Kind::string ? type->text : "(not a string)",
             " is not gpt2");
  const auto require_bool = [&](const char* key, bool want, const char* why) {
    const JsonValue* v = root.find(key);
    if (!v || v->kind == JsonValue::Kind::null) return;
    BG_CHECK(v->kind == JsonValue::Kind::boolean, kOp, where, ": ", key, " is not true or false");
    BG_CHECK(v->boolean == want, kOp, where, ": ", key, " ", v->boolean ? "true" : "false", ": ",
             why);
  };
  require_bool("scale_attn_weights", true,
               "bitgrad's attention always scales its scores by 1/sqrt(head size)");
  require_bool("scale_attn_by_inverse_layer_idx", false,
               "bitgrad's attention does not scale layer l's scores by 1/(l + 1)");
  require_bool("add_cross_attention", false, "bitgrad's GPT has no cross-attention");
  if (const JsonValue* inner = root.find("n_inner"); inner && inner->kind != JsonValue::Kind::null) {
    const uint64_t n = inner->as_uint64(kOp, where + ": n_inner");
    BG_CHECK(n == uint64_t(4 * cfg.n_embd), kOp, where, ": n_inner ", n,
             ": bitgrad's MLP is 4 x n_embd (", 4 * cfg.n_embd, ") wide");
  }
  if (const JsonValue* tie = root.find("tie_word_embeddings"))
    BG_CHECK(tie->kind != JsonValue::Kind::boolean || tie->boolean, kOp, where,
             ": tie_word_embeddings false: bitgrad's GPT-2 head is tied to the token embedding");
  return cfg;
}

std::string hf_config_json(const GPTConfig& cfg, int64_t vocab) {
  (void)gpt2_parameter_shapes(cfg);  // the same checks as the weights
  BG_CHECK(vocab >= 1 && vocab <= cfg.vocab_size, kOp, "a vocabulary of ", vocab, " for a model of ",
           cfg.vocab_size);
  return str_cat("{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n",
                 "  \"n_layer\": ", cfg.n_layer, ",\n  \"n_head\": ", cfg.n_head,
                 ",\n  \"n_embd\": ", cfg.n_embd, ",\n  \"n_positions\": ", cfg.block_size,
                 ",\n  \"n_ctx\": ", cfg.block_size, ",\n  \"vocab_size\": ", vocab,
                 ",\n  \"activation_function\": \"",
                 cfg.gelu == GeluForm::tanh ? "gelu_new" : "gelu",
                 "\",\n  \"layer_norm_epsilon\": 1e-05,\n  \"tie_word_embeddings\": true,\n",
                 "  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0\n}\n");
}

namespace {

// What a state dict's key is, by its name without "transformer.": one of GPT-2's parameters, the
// tied head (lm_head.weight), a causal-mask buffer (h.N.attn.bias, h.N.attn.masked_bias: not
// weights), or nothing GPT-2 has.
enum class HfKey { parameter, tied_head, mask, unknown };
HfKey hf_key_kind(const std::string& key, const std::set<std::string>& parameters) {
  const std::string bare = key.rfind("transformer.", 0) == 0 ? key.substr(12) : key;
  if (parameters.count("transformer." + bare)) return HfKey::parameter;
  if (bare == "lm_head.weight") return HfKey::tied_head;
  if (bare.rfind("h.", 0) == 0 && (ends_with(bare, ".attn.bias") || ends_with(bare, ".attn.masked_bias")))
    return HfKey::mask;
  return HfKey::unknown;
}

}  // namespace

void check_hf_keys(const std::vector<std::string>& keys, const GPTConfig& cfg) {
  std::set<std::string> parameters, seen;
  for (const auto& [name, shape] : gpt2_parameter_shapes(cfg)) parameters.insert(name);
  for (const std::string& key : keys) {
    BG_CHECK(hf_key_kind(key, parameters) != HfKey::unknown, kOp, "an unexpected tensor \"", key,
             "\" (not GPT-2's)");
    const std::string bare = key.rfind("transformer.", 0) == 0 ? key.substr(12) : key;
    BG_CHECK(seen.insert(bare).second, kOp, "\"", bare, "\" is given twice (as \"", bare,
             "\" and \"transformer.", bare, "\"): which one is meant is not said");
  }
}

NamedTensors gpt_params_from_hf(const std::map<std::string, Tensor>& hf, const GPTConfig& cfg,
                                int64_t token_ids) {
  BG_CHECK(token_ids >= 1 && token_ids <= cfg.vocab_size, kOp, token_ids,
           " token ids for a model of vocabulary ", cfg.vocab_size);
  const auto shapes = gpt2_parameter_shapes(cfg);
  std::vector<std::string> keys;
  for (const auto& [key, t] : hf) keys.push_back(key);
  check_hf_keys(keys, cfg);
  auto lookup = [&](const std::string& key) -> const Tensor* {
    for (const std::string& k : {key, "transformer." + key}) {
      auto it = hf.find(k);
      if (it != hf.end()) return &it->second;
    }
    return nullptr;
  };
  NamedTensors out;
  for (const auto& [name, shape] : shapes) {
    const std::string key = name.substr(std::string("transformer.").size());
    const Tensor* t = lookup(key);
    BG_CHECK(t, kOp, "no tensor \"", key, "\" (a GPT-2 of ", cfg.n_layer, " layers has one)");
    const bool wte = name == "transformer.wte.weight";
    const Shape want = is_conv1d(name) ? Shape{shape[1], shape[0]}
                       : wte           ? Shape{token_ids, cfg.n_embd}
                                       : shape;
    BG_CHECK(t->shape() == want, kOp, "\"", key, "\" is ", shape_str(t->shape()), ", expected ",
             shape_str(want), is_conv1d(name) ? " (Conv1D: in, out)" : "",
             wte ? " (a row for each of the vocabulary's token ids, no fewer)" : "");
    Tensor w = t->detach().to(Device::cpu(), DType::f32);
    if (is_conv1d(name)) w = w.transpose(0, 1).contiguous();
    if (wte) w = vocabulary_rows(w, cfg.vocab_size);  // the model's padding: zero rows
    out.emplace_back(name, w.contiguous());
  }
  if (const Tensor* head = lookup("lm_head.weight")) {
    const Tensor wte = out[0].second.slice(0, 0, token_ids);
    BG_CHECK(head->shape() == wte.shape() &&
                 max(abs(head->detach().to(Device::cpu(), DType::f32) - wte)).item() == 0.0,
             kOp, "lm_head.weight ", shape_str(head->shape()),
             " differs from wte: an untied head, which bitgrad's GPT-2 does not hold");
  }
  return out;
}

NamedTensors hf_from_gpt_params(const NamedTensors& params, const GPTConfig& cfg, int64_t vocab) {
  const auto shapes = gpt2_parameter_shapes(cfg);
  BG_CHECK(params.size() == shapes.size(), kOp, "a GPT-2 of ", cfg.n_layer, " layers has ",
           shapes.size(), " parameters, got ", params.size());
  BG_CHECK(vocab >= 1 && vocab <= cfg.vocab_size, kOp, "a vocabulary of ", vocab,
           " for a model of ", cfg.vocab_size);
  NamedTensors out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& [name, t] = params[i];
    BG_CHECK(name == shapes[i].first && t.shape() == shapes[i].second, kOp, "parameter \"", name,
             "\" ", shape_str(t.shape()), " where GPT-2 has \"", shapes[i].first, "\" ",
             shape_str(shapes[i].second));
    Tensor w = t.detach().to(Device::cpu(), DType::f32);
    if (is_conv1d(name)) w = w.transpose(0, 1);
    if (name == "transformer.wte.weight") w = vocabulary_rows(w, vocab);
    out.emplace_back(name, w.contiguous());
  }
  return out;
}

NamedTensors gpt_params_from_llmc(const LlmcCheckpoint& ck, const GPTConfig& cfg) {
  const auto shapes = gpt2_parameter_shapes(cfg);
  const LlmcHeader& h = ck.header;
  BG_CHECK(h.num_layers == cfg.n_layer && h.num_heads == cfg.n_head && h.channels == cfg.n_embd &&
               h.max_seq_len == cfg.block_size && h.padded_vocab_size == cfg.vocab_size,
           kOp, "an llm.c model of ", h.num_layers, " layers, ", h.num_heads, " heads, ", h.channels,
           " channels, block ", h.max_seq_len, ", vocabulary ", h.padded_vocab_size,
           " for a GPT of ", cfg.n_layer, ", ", cfg.n_head, ", ", cfg.n_embd, ", ", cfg.block_size,
           ", ", cfg.vocab_size);
  std::map<std::string, Tensor> by_name;
  for (const auto& [name, t] : ck.tensors) by_name[name] = t.to(DType::f32);
  NamedTensors out = {{"transformer.wte.weight", by_name.at("wte")},
                      {"transformer.wpe.weight", by_name.at("wpe")}};
  for (int64_t l = 0; l < cfg.n_layer; ++l)
    for (const auto& [ours, theirs] : kLlmcLayer)
      out.emplace_back("transformer.h." + std::to_string(l) + "." + ours,
                       by_name.at(theirs).slice(0, l, l + 1).squeeze(0).contiguous());
  out.emplace_back("transformer.ln_f.weight", by_name.at("lnfw"));
  out.emplace_back("transformer.ln_f.bias", by_name.at("lnfb"));
  for (size_t i = 0; i < out.size(); ++i)
    BG_CHECK(out[i].first == shapes[i].first && out[i].second.shape() == shapes[i].second, kOp,
             "llm.c's ", out[i].first, " is ", shape_str(out[i].second.shape()));
  return out;
}

LlmcCheckpoint llmc_from_gpt_params(const NamedTensors& params, const GPTConfig& cfg,
                                    int64_t vocab, DType dtype) {
  const auto shapes = gpt2_parameter_shapes(cfg);
  BG_CHECK(params.size() == shapes.size(), kOp, "a GPT-2 of ", cfg.n_layer, " layers has ",
           shapes.size(), " parameters, got ", params.size());
  std::map<std::string, Tensor> ours;
  for (size_t i = 0; i < shapes.size(); ++i) {
    BG_CHECK(params[i].first == shapes[i].first && params[i].second.shape() == shapes[i].second,
             kOp, "parameter \"", params[i].first, "\" where GPT-2 has \"", shapes[i].first, "\"");
    ours[params[i].first] = params[i].second.detach().to(Device::cpu(), DType::f32);
  }
  LlmcCheckpoint ck;
  // llm.c reads logit rows with 16-byte loads and needs cuBLASLt-aligned leading dimensions: its
  // own exporter (train_gpt2.py) pads the vocabulary to a multiple of 128 with zero rows, and so
  // does this one. llm.c's softmax covers the first `vocab` rows only, padded or trained.
  const int64_t padded = (cfg.vocab_size + 127) / 128 * 128;
  ck.header = {cfg.block_size, vocab, cfg.n_layer, cfg.n_head, cfg.n_embd, padded, dtype};
  ck.tensors = {{"wte", vocabulary_rows(ours.at("transformer.wte.weight"), padded)},
                {"wpe", ours.at("transformer.wpe.weight")}};
  for (const auto& [mine, theirs] : kLlmcLayer) {
    std::vector<Tensor> layers;
    for (int64_t l = 0; l < cfg.n_layer; ++l) {
      const Tensor& t = ours.at("transformer.h." + std::to_string(l) + "." + mine);
      Shape one = t.shape();
      one.insert(one.begin(), 1);
      layers.push_back(t.reshape(one));
    }
    ck.tensors.emplace_back(theirs, concat(layers, 0));
  }
  ck.tensors.emplace_back("lnfw", ours.at("transformer.ln_f.weight"));
  ck.tensors.emplace_back("lnfb", ours.at("transformer.ln_f.bias"));
  return ck;  // kLlmcLayer lists the stacked tensors in llm.c's own order
}

namespace {

// Where pretrained weights are: a Hugging Face folder or .safetensors file (with config.json
// beside it), or else an llm.c file.
struct PretrainedFiles {
  bool safetensors = false;
  std::string weights, config;
};
PretrainedFiles pretrained_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  BG_CHECK(fs::exists(path, ec), kOp, path, ": no such file or folder (expected a Hugging Face "
           "folder, a .safetensors file with config.json beside it, or an llm.c .bin)");
  const bool folder = fs::is_directory(path, ec);
  PretrainedFiles f;
  f.safetensors =
      folder || ends_with(path, ".safetensors");
  f.weights = folder ? (fs::path(path) / "model.safetensors").string() : path;
  if (f.safetensors) f.config = (fs::path(f.weights).parent_path() / "config.json").string();
  return f;
}

}  // namespace

void load_pretrained_into(GPT& model, const std::string& path) {
  // The trunk is GPT-2's whatever the head: a BIDE or hybrid head's own parameters (lm_head.*)
  // keep their drawn values; a hybrid head's softmax part ties to the pretrained wte.
  GPTConfig trunk = model.config();
  trunk.head = HeadKind::softmax;
  assign_pretrained(model, load_pretrained_gpt2(path, trunk), path);
}

void assign_pretrained(GPT& model, const NamedTensors& pretrained, const std::string& path) {
  std::map<std::string, Tensor> named;
  for (const auto& [name, t] : model.named_parameters()) named.emplace(name, t);
  for (const auto& [name, t] : pretrained) {
    const auto it = named.find(name);
    BG_CHECK(it != named.end() && it->second.shape() == t.shape(), kOp, path, ": GPT-2's \"",
             name, "\" ", shape_str(t.shape()), " has no place in the model",
             it == named.end() ? std::string() : " (its " + shape_str(it->second.shape()) + ")");
    it->second.detach().copy_(t);
    named.erase(it);
  }
  for (const auto& [name, t] : named)  // what GPT-2 does not have: the head's own
    BG_CHECK(name.rfind("lm_head.", 0) == 0, kOp, path, ": the model's \"", name,
             "\" has no GPT-2 weight");
}

PretrainedGpt2 pretrained_gpt2_config(const std::string& path) {
  const PretrainedFiles f = pretrained_files(path);
  PretrainedGpt2 out;
  if (f.safetensors) {
    out.config = gpt_config_from_hf(
        read_file_limited(f.config, kOp, "config.json", int64_t(1) << 20), f.config);
    out.token_ids = out.config.vocab_size;
    return out;
  }
  const LlmcHeader h = read_llmc_header(path);
  out.config.n_layer = h.num_layers;
  out.config.n_head = h.num_heads;
  out.config.n_embd = h.channels;
  out.config.block_size = h.max_seq_len;
  // llm.c's softmax ignores the padded rows; a model over the token ids alone computes its loss
  // (import --vocab-size pads again).
  out.config.vocab_size = h.vocab_size;
  out.config.bias = true;
  out.config.dropout = 0.0;
  out.config.gelu = GeluForm::tanh;  // llm.c's GELU
  out.token_ids = h.vocab_size;
  return out;
}

NamedTensors load_pretrained_gpt2(const std::string& path, const GPTConfig& cfg) {
  (void)gpt2_parameter_shapes(cfg);  // a GPT-2-shaped model first
  const std::string where = path;
  // The file's own model: its architecture checked against cfg's, its sizes the file's.
  GPTConfig file = cfg;
  auto check_architecture = [&](int64_t layers, int64_t heads, int64_t width, int64_t positions) {
    BG_CHECK(layers == cfg.n_layer && heads == cfg.n_head && width == cfg.n_embd, kOp, where,
             " holds ", layers, " layers, ", heads, " heads, width ", width, "; the config asks for ",
             cfg.n_layer, ", ", cfg.n_head, ", ", cfg.n_embd);
    BG_CHECK(cfg.block_size <= positions, kOp, where, " has ", positions,
             " positions; model.block_size ", cfg.block_size, " needs that many");
    file.block_size = positions;
  };
  NamedTensors params;
  const PretrainedFiles files = pretrained_files(path);
  if (files.safetensors) {
    const std::string& weights = files.weights;
    const std::string& config = files.config;
    const GPTConfig hf = gpt_config_from_hf(
        read_file_limited(config, kOp, "config.json", int64_t(1) << 20), config);
    check_architecture(hf.n_layer, hf.n_head, hf.n_embd, hf.block_size);
    BG_CHECK(hf.gelu == cfg.gelu, kOp, where, ": its GELU is the ", enum_name(hf.gelu),
             " form, model.gelu ", enum_name(cfg.gelu));
    BG_CHECK(hf.vocab_size <= cfg.vocab_size, kOp, where, " has ", hf.vocab_size,
             " token ids; model.vocab_size ", cfg.vocab_size, " must hold them");
    const SafetensorsReader reader(weights);
    std::vector<std::string> keys;
    for (const SafetensorsEntry& e : reader.entries()) keys.push_back(e.name);
    check_hf_keys(keys, file);  // names before any data is read
    std::map<std::string, Tensor> dict;
    for (const SafetensorsEntry& e : reader.entries()) dict[e.name] = reader.read(e.name);
    params = gpt_params_from_hf(dict, file, hf.vocab_size);  // wte: config.json's rows exactly
  } else {
    const LlmcCheckpoint ck = read_llmc(path);
    const LlmcHeader& h = ck.header;
    check_architecture(h.num_layers, h.num_heads, h.channels, h.max_seq_len);
    BG_CHECK(cfg.vocab_size >= h.vocab_size, kOp, where, " has ", h.vocab_size,
             " token ids; model.vocab_size ", cfg.vocab_size, " must hold them");
    file.vocab_size = h.padded_vocab_size;
    params = gpt_params_from_llmc(ck, file);
    params[0].second = vocabulary_rows(params[0].second, cfg.vocab_size);
  }
  params[1].second = params[1].second.slice(0, 0, cfg.block_size).contiguous();  // wpe
  // A weight that is NaN or infinite (a corrupt file, an F16 value past 65,504) would be
  // imported only to be refused later by eval, sample and export as if training had diverged.
  for (const auto& [name, t] : params) {
    const Tensor host = t.to(Device::cpu(), DType::f32).contiguous();
    const float* v = static_cast<const float*>(host.data_ptr());
    int64_t bad = 0;
    for (int64_t i = 0; i < host.numel(); ++i) bad += !std::isfinite(v[i]);
    BG_CHECK(bad == 0, kOp, where, ": \"", name, "\" holds ", bad,
             " NaN or infinite value(s) (a corrupt file, or an F16/BF16 value past its range)");
  }
  return params;
}

}  // namespace bg
