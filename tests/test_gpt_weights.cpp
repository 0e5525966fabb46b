// test_gpt_weights.cpp: GPT-2's weights between bitgrad's names and other tools' layouts
// (models/gpt/gpt_weights.h): Hugging Face's state dict (Conv1D transposed, the prefix optional,
// mask buffers skipped, a tied lm_head checked, the vocabulary padded and cut) and llm.c's
// stacked tensors, both ways bit for bit; a model loaded from the exported weights computes the
// original's logits bit for bit; config.json read and written; bad dicts refused in one line.
#include <filesystem>
#include <map>

#include "core/files.h"
#include "data/llmc_format.h"
#include "data/safetensors.h"
#include "harness.h"
#include "data/tokenizer.h"
#include "models/gpt/gpt_weights.h"
#include "models/lm_builder.h"

namespace bg::test {
namespace {

GPTConfig tiny_gpt2() {
  GPTConfig c;
  c.vocab_size = 16;  // padded; the tokenizer's vocabulary is 11
  c.block_size = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.bias = true;
  c.fused_attention = false;
  return c;
}
constexpr int64_t kVocab = 11;

NamedTensors params_of(const GPT& m) {
  NamedTensors out;
  for (const auto& [name, t] : m.named_parameters()) out.emplace_back(name, t.detach().clone());
  return out;
}

void load_into(GPT& m, const NamedTensors& params) {
  const auto named = m.named_parameters();
  REQUIRE(named.size() == params.size());
  for (size_t i = 0; i < named.size(); ++i) {
    REQUIRE(named[i].first == params[i].first);
    named[i].second.detach().copy_(params[i].second);
  }
}

}  // namespace

TEST_CASE("cpu: GPT-2 weights go to Hugging Face's layout and back, and the logits follow") {
  Generator init(7), gen(8);
  const GPTConfig cfg = tiny_gpt2();
  GPT a(cfg, init);
  const NamedTensors ours = params_of(a);
  const NamedTensors hf = hf_from_gpt_params(ours, cfg, kVocab);
  // transformers' names and layout: Conv1D (in, out), the vocabulary cut to the tokenizer's.
  std::map<std::string, Tensor> dict;
  for (const auto& [name, t] : hf) dict[name] = t;
  CHECK(dict.at("transformer.wte.weight").shape() == Shape{kVocab, 16});
  CHECK(dict.at("transformer.h.1.attn.c_attn.weight").shape() == Shape{16, 48});
  CHECK(dict.at("transformer.h.0.mlp.c_proj.weight").shape() == Shape{64, 16});
  CHECK(dict.at("transformer.h.0.mlp.c_fc.bias").shape() == Shape{64});
  // Back, with the prefix dropped as GPT2Model saves it, mask buffers and a tied lm_head.
  std::map<std::string, Tensor> bare;
  for (const auto& [name, t] : dict) bare[name.substr(12)] = t;
  bare["h.0.attn.bias"] = ones({1, 1, 8, 8});
  bare["h.1.attn.masked_bias"] = full({}, -1e4);
  bare["lm_head.weight"] = dict.at("transformer.wte.weight");
  for (const auto* d : {&dict, &bare}) {
    const NamedTensors back = gpt_params_from_hf(*d, cfg, kVocab);
    REQUIRE(back.size() == ours.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      CAPTURE(ours[i].first);
      CHECK(back[i].first == ours[i].first);
      const bool wte = ours[i].first == "transformer.wte.weight";
      const Tensor want = wte ? ours[i].second.slice(0, 0, kVocab) : ours[i].second;
      const Tensor got = wte ? back[i].second.slice(0, 0, kVocab) : back[i].second;
      CHECK(bit_mismatches(got, want) == 0);
      if (wte) CHECK(max(abs(back[i].second.slice(0, kVocab, 16))).item() == 0.0);  // padding
    }
    // A model holding the imported weights: the same logits over the tokenizer's ids.
    Generator other(99);
    GPT b(cfg, other);
    load_into(b, back);
    a.train(false);
    b.train(false);
    const Tensor idx = from_vector<int64_t>({1, 4, 2, 8, 0, 3, 10, 7}, {1, 8});
    CHECK(bit_mismatches(a.forward(idx, gen).slice(2, 0, kVocab),
                         b.forward(idx, gen).slice(2, 0, kVocab)) == 0);
  }
  // Through a safetensors file, as transformers would hand it over.
  const std::string path =
      scratch_path("gpt2_weights.safetensors");
  write_safetensors(path, hf, {{"format", "pt"}});
  const SafetensorsReader r(path);
  std::map<std::string, Tensor> from_file;
  for (const SafetensorsEntry& e : r.entries()) from_file[e.name] = r.read(e.name);
  const NamedTensors back = gpt_params_from_hf(from_file, cfg, kVocab);
  CHECK(bit_mismatches(back[3].second, ours[3].second) == 0);
}

TEST_CASE("cpu: bad Hugging Face GPT-2 state dicts are refused in one line") {
  Generator init(9);
  const GPTConfig cfg = tiny_gpt2();
  const NamedTensors hf = hf_from_gpt_params(params_of(GPT(cfg, init)), cfg, kVocab);
  std::map<std::string, Tensor> good;
  for (const auto& [name, t] : hf) good[name] = t;
  auto refused = [&](std::map<std::string, Tensor> d, const std::string& why) {
    CAPTURE(why);
    CHECK_THROWS_WITH((void)gpt_params_from_hf(d, cfg, kVocab), doctest::Contains(why.c_str()));
  };
  auto missing = good;
  missing.erase("transformer.h.1.ln_2.bias");
  refused(missing, "no tensor \"h.1.ln_2.bias\"");
  auto extra = good;
  extra["transformer.h.2.ln_1.weight"] = ones({16});
  refused(extra, "an unexpected tensor \"transformer.h.2.ln_1.weight\"");
  auto turned = good;
  turned["transformer.h.0.attn.c_attn.weight"] = zeros({48, 16});  // (out, in): not Conv1D's
  refused(turned, "(Conv1D: in, out)");
  auto untied = good;
  untied["lm_head.weight"] = good.at("transformer.wte.weight") + 1.0;
  refused(untied, "lm_head.weight (11, 16) differs from wte");
  auto big_vocab = good;
  big_vocab["transformer.wte.weight"] = zeros({17, 16});
  refused(big_vocab, "\"wte.weight\" is (17, 16), expected (11, 16)");
  // A row short of the vocabulary's ids is refused, not padded with a zero row.
  auto short_vocab = good;
  short_vocab["transformer.wte.weight"] = zeros({10, 16});
  refused(short_vocab, "is (10, 16), expected (11, 16) (a row for each");
  // One tensor under both its names: which is meant is not said.
  auto twice = good;
  twice["h.0.ln_1.weight"] = good.at("transformer.h.0.ln_1.weight");
  refused(twice, "\"h.0.ln_1.weight\" is given twice");
  // A rank-0 tied head (shape []) is refused, never indexed.
  auto scalar_head = good;
  scalar_head["lm_head.weight"] = full({}, 1.0);
  refused(scalar_head, "lm_head.weight () differs from wte");
  auto scalar_wpe = good;
  scalar_wpe["transformer.wpe.weight"] = full({}, 1.0);
  refused(scalar_wpe, "\"wpe.weight\" is (), expected (8, 16)");
  GPTConfig no_bias = cfg;
  no_bias.bias = false;
  CHECK_THROWS_WITH((void)gpt_params_from_hf(good, no_bias, kVocab), doctest::Contains("with biases"));
}

TEST_CASE("cpu: GPT-2 weights go to llm.c's stacked layout and back through a file") {
  Generator init(10);
  const GPTConfig cfg = tiny_gpt2();
  const NamedTensors ours = params_of(GPT(cfg, init));
  const std::string path = scratch_path("gpt2.bin");
  for (const DType dt : {DType::f32, DType::bf16}) {
    CAPTURE(dtype_name(dt));
    write_llmc(path, llmc_from_gpt_params(ours, cfg, kVocab, dt));
    const LlmcCheckpoint ck = read_llmc(path);
    CHECK(ck.header.vocab_size == kVocab);
    // llm.c's own exporter's rule: the model's 16 rows, then zero rows to a multiple of 128.
    CHECK(ck.header.padded_vocab_size == 128);
    // Imported, the model has the token ids' rows only: llm.c's softmax ignores the padding.
    CHECK(pretrained_gpt2_config(path).config.vocab_size == kVocab);
    CHECK(pretrained_gpt2_config(path).token_ids == kVocab);
    GPTConfig padded = cfg;
    padded.vocab_size = 128;
    const NamedTensors back = gpt_params_from_llmc(ck, padded);
    REQUIRE(back.size() == ours.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      CAPTURE(ours[i].first);
      CHECK(back[i].first == ours[i].first);
      Tensor got = back[i].second;
      if (back[i].first == "transformer.wte.weight") {
        CHECK(bit_mismatches(got.slice(0, 16, 128), zeros({112, cfg.n_embd})) == 0);
        got = got.slice(0, 0, 16);
      }
      CHECK(bit_mismatches(got, ours[i].second.to(dt).to(DType::f32)) == 0);
    }
  }
  GPTConfig wider = cfg;
  wider.n_embd = 32;
  CHECK_THROWS_WITH((void)gpt_params_from_llmc(read_llmc(path), wider),
                    doctest::Contains("for a GPT of 2, 2, 32"));
}

TEST_CASE("cpu: a Hugging Face GPT-2 config.json is read, checked and written") {
  const std::string json = R"({"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
    "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
    "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024,
    "n_embd": 768, "n_head": 12, "n_inner": null, "n_layer": 12, "n_positions": 1024,
    "vocab_size": 50257})";
  const GPTConfig cfg = gpt_config_from_hf(json, "config.json", 50304);
  CHECK(cfg.n_layer == 12);
  CHECK(cfg.n_head == 12);
  CHECK(cfg.n_embd == 768);
  CHECK(cfg.block_size == 1024);
  CHECK(cfg.vocab_size == 50304);
  CHECK(cfg.gelu == GeluForm::tanh);
  CHECK(cfg.bias);
  const GPTConfig again = gpt_config_from_hf(hf_config_json(cfg, 50257), "written");
  CHECK(again.vocab_size == 50257);
  CHECK(again.n_layer == 12);
  CHECK(again.gelu == GeluForm::tanh);
  auto swap = [&](const std::string& from, const std::string& to) {
    std::string s = json;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  CHECK_THROWS_WITH(gpt_config_from_hf(swap("gelu_new", "relu"), "c.json"),
                    doctest::Contains("activation_function relu"));
  CHECK_THROWS_WITH(gpt_config_from_hf(swap("1e-05", "1e-06"), "c.json"),
                    doctest::Contains("layer_norm_epsilon must be 1e-5"));
  CHECK_THROWS_WITH(gpt_config_from_hf(swap("\"n_head\": 12", "\"n_head\": 7"), "c.json"),
                    doctest::Contains("not a multiple of n_head 7"));
  CHECK_THROWS_WITH(gpt_config_from_hf(swap("\"n_layer\": 12", "\"n_layer\": -1"), "c.json"),
                    doctest::Contains("n_layer must be a non-negative integer"));
  CHECK_THROWS_WITH(gpt_config_from_hf(swap("\"n_embd\": 768,", ""), "c.json"),
                    doctest::Contains("no \"n_embd\""));
}

// model.init_from: a run's GPT starts from the file's weights (a Hugging Face folder, a
// .safetensors file beside its config.json, an llm.c .bin), wpe cropped to a smaller block and
// the vocabulary padded; another architecture is refused in one line.
TEST_CASE("cpu: model.init_from starts a GPT from Hugging Face or llm.c weights") {
  namespace fs = std::filesystem;
  Generator init(11);
  const GPTConfig cfg = tiny_gpt2();
  const NamedTensors source = params_of(GPT(cfg, init));
  const fs::path dir = fs::path(scratch_path("init_from"));
  fs::create_directories(dir);
  write_safetensors((dir / "model.safetensors").string(), hf_from_gpt_params(source, cfg, kVocab));
  write_file_atomic((dir / "config.json").string(), hf_config_json(cfg, kVocab));
  const std::string bin = (dir / "gpt2.bin").string();
  write_llmc(bin, llmc_from_gpt_params(source, cfg, kVocab, DType::f32));
  const CharTokenizer tok("abcdefghijk");  // 11 ids
  REQUIRE(tok.vocab_size() == kVocab);
  for (const std::string& from :
       {dir.string(), (dir / "model.safetensors").string(), bin}) {
    CAPTURE(from);
    ModelSpec spec;
    spec.type = ModelType::gpt;
    spec.gpt = cfg;
    spec.gpt.block_size = 5;  // cropped from 8
    spec.attention = AttentionChoice::composed;
    spec.init_from = from;
    Generator g(12);
    const auto model = build_language_model(spec, tok, {}, ComputeMode(), Device::cpu(), g);
    const auto named = model->named_parameters();
    REQUIRE(named.size() == source.size());
    for (size_t i = 0; i < named.size(); ++i) {
      CAPTURE(named[i].first);
      Tensor want = source[i].second;
      if (named[i].first == "transformer.wpe.weight") want = want.slice(0, 0, 5);
      if (named[i].first == "transformer.wte.weight") {  // the file's 11 ids, zeros or llm.c's pad
        CHECK(bit_mismatches(named[i].second.slice(0, 0, kVocab), want.slice(0, 0, kVocab)) == 0);
        continue;
      }
      CHECK(bit_mismatches(named[i].second, want) == 0);
    }
  }
  // BitNet QAT from pretrained weights: the BitLinear projections' latent weights are GPT-2's.
  {
    ModelSpec spec;
    spec.type = ModelType::gpt;
    spec.gpt = cfg;
    spec.gpt.linear.kind = LinearKind::bitlinear;
    spec.attention = AttentionChoice::composed;
    spec.init_from = bin;
    Generator g(14);
    const auto model = build_language_model(spec, tok, {}, ComputeMode(), Device::cpu(), g);
    const auto named = model->named_parameters();
    REQUIRE(named.size() == source.size());
    for (size_t i = 0; i < named.size(); ++i) {
      CAPTURE(named[i].first);
      CHECK(named[i].first == source[i].first);
      CHECK(bit_mismatches(named[i].second, source[i].second) == 0);
    }
  }
  // A BIDE head, and a hybrid one tied to wte, on the pretrained trunk: the trunk is the file's,
  // the head's own parameters what the same seed draws without the file.
  for (bool hybrid : {false, true}) {
    CAPTURE(hybrid);
    ModelSpec spec;
    spec.type = ModelType::gpt;
    spec.gpt = cfg;
    spec.gpt.head = HeadKind::bide;
    spec.gpt.bide.hidden = 8;
    if (hybrid) {
      spec.gpt.bide.softmax_ids = 4;
      spec.gpt.bide.tie_softmax = true;
    }
    spec.attention = AttentionChoice::composed;
    Generator g1(15), g2(15);
    const auto fresh = build_language_model(spec, tok, {}, ComputeMode(), Device::cpu(), g1);
    spec.init_from = dir.string();
    const auto model = build_language_model(spec, tok, {}, ComputeMode(), Device::cpu(), g2);
    std::map<std::string, Tensor> want;
    for (const auto& [name, t] : source) want.emplace(name, t);
    const auto named = model->named_parameters(), drawn = fresh->named_parameters();
    REQUIRE(named.size() == drawn.size());
    int64_t head = 0;
    for (size_t i = 0; i < named.size(); ++i) {
      CAPTURE(named[i].first);
      const auto it = want.find(named[i].first);
      if (it == want.end()) {
        CHECK(named[i].first.rfind("lm_head.", 0) == 0);
        CHECK(bit_mismatches(named[i].second, drawn[i].second) == 0);
        ++head;
      } else if (named[i].first == "transformer.wte.weight") {
        CHECK(bit_mismatches(named[i].second.slice(0, 0, kVocab), it->second.slice(0, 0, kVocab)) == 0);
      } else {
        CHECK(bit_mismatches(named[i].second, it->second) == 0);
      }
    }
    CHECK(head > 0);
  }
  ModelSpec wide;
  wide.type = ModelType::gpt;
  wide.gpt = cfg;
  wide.gpt.n_embd = 32;
  wide.init_from = dir.string();
  Generator g(13);
  CHECK_THROWS_WITH(build_language_model(wide, tok, {}, ComputeMode(), Device::cpu(), g),
                    doctest::Contains("holds 2 layers, 2 heads, width 16; the config asks for 2, 2, 32"));
  ModelSpec long_block = wide;
  long_block.gpt.n_embd = 16;
  long_block.gpt.block_size = 9;
  CHECK_THROWS_WITH(build_language_model(long_block, tok, {}, ComputeMode(), Device::cpu(), g),
                    doctest::Contains("has 8 positions; model.block_size 9"));
  ModelSpec erf = long_block;
  erf.gpt.block_size = 8;
  erf.gpt.gelu = GeluForm::erf;
  CHECK_THROWS_WITH(build_language_model(erf, tok, {}, ComputeMode(), Device::cpu(), g),
                    doctest::Contains("its GELU is the tanh form"));
  ModelSpec missing = long_block;
  missing.gpt.block_size = 8;
  missing.init_from = (dir / "nothing.bin").string();
  CHECK_THROWS_WITH(build_language_model(missing, tok, {}, ComputeMode(), Device::cpu(), g),
                    doctest::Contains("nothing.bin"));
}

}  // namespace bg::test
