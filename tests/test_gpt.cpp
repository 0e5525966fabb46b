// test_gpt.cpp: the GPT model. nanoGPT's parameter names, shapes and initialisation; causality;
// a 2-layer model learns a tiny corpus, two runs are bitwise identical; CUDA and CPU agree on
// the loss and on every gradient.
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/checkpoint.h"
#include "core/optim.h"
#include "data/text.h"
#include "data/tokenizer.h"
#include "gpt_train_loop.h"
#include "harness.h"
#include "models/gpt/gpt.h"

namespace bg::test {
namespace {

// Head dim 8 (fused attention off unless asked: the CUDA kernel is built for head dim 64).
GPTConfig tiny_config(int64_t vocab, bool bias, bool fused = false, int64_t n_embd = 16,
                      double dropout = 0.1) {
  GPTConfig c;
  c.vocab_size = vocab;
  c.block_size = 12;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = n_embd;
  c.dropout = dropout;
  c.bias = bias;
  c.fused_attention = fused;
  return c;
}

std::string gpt_corpus() {
  std::string s;
  const char* words[] = {"the cat sat. ", "a dog ran. ", "to be or not. "};
  for (int i = 0; i < 200; ++i) s += words[(i * 5 + i / 4) % 3];
  return s;
}

double std_of(const Tensor& t) {
  const std::vector<double> v = t.to_vector<double>();
  double s = 0, s2 = 0;
  for (double x : v) s += x, s2 += x * x;
  const double m = s / double(v.size());
  return std::sqrt(s2 / double(v.size()) - m * m);
}

}  // namespace

TEST_CASE("cpu: gpt parameters carry nanoGPT names and shapes and GPT-2 init") {
  for (bool bias : {false, true}) {
    Generator init(1);
    const GPTConfig c = tiny_config(11, bias);
    GPT model(c, init);
    std::vector<std::pair<std::string, Shape>> want = {{"transformer.wte.weight", {11, 16}},
                                                       {"transformer.wpe.weight", {12, 16}}};
    for (int l = 0; l < 2; ++l) {
      const std::string h = "transformer.h." + std::to_string(l) + ".";
      auto add = [&](const std::string& n, Shape w, Shape b) {
        want.push_back({h + n + ".weight", w});
        if (bias) want.push_back({h + n + ".bias", b});
      };
      add("ln_1", {16}, {16});
      add("attn.c_attn", {48, 16}, {48});
      add("attn.c_proj", {16, 16}, {16});
      add("ln_2", {16}, {16});
      add("mlp.c_fc", {64, 16}, {64});
      add("mlp.c_proj", {16, 64}, {16});
    }
    want.push_back({"transformer.ln_f.weight", {16}});
    if (bias) want.push_back({"transformer.ln_f.bias", {16}});
    const auto named = model.named_parameters();
    REQUIRE(named.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CHECK(named[i].first == want[i].first);
      CHECK(named[i].second.shape() == want[i].second);
    }
  }
  // Init: N(0, 0.02) weights, residual projections N(0, 0.02 / sqrt(2 n_layer)), zero biases.
  GPTConfig big = tiny_config(97, true);
  big.n_embd = 64;
  big.n_layer = 4;
  Generator init(2);
  GPT model(big, init);
  for (const auto& [name, t] : model.named_parameters()) {
    if (name.find("c_proj.weight") != std::string::npos)
      CHECK(std_of(t) == doctest::Approx(0.02 / std::sqrt(8.0)).epsilon(0.03));
    else if (name.find("ln_") != std::string::npos && name.find(".weight") != std::string::npos)
      CHECK(std_of(t) == 0.0);
    else if (name.find(".bias") != std::string::npos)
      CHECK(std_of(t) == 0.0);
    else
      CHECK(std_of(t) == doctest::Approx(0.02).epsilon(0.05));
  }
}

TEST_CASE("cpu: gpt logits at a position ignore later tokens") {
  Generator init(3), gen(4);
  GPT model(tiny_config(9, true), init);
  model.train(false);
  std::vector<int64_t> a = {1, 4, 2, 8, 0, 3, 3, 7}, b = a;
  b[5] = 6;
  b[7] = 1;
  const Tensor la = model.forward(from_vector(a, {1, 8}), gen);
  const Tensor lb = model.forward(from_vector(b, {1, 8}), gen);
  CHECK(rel_err(la.slice(1, 0, 5), lb.slice(1, 0, 5)) == 0.0);
  CHECK(rel_err(la.slice(1, 5, 8), lb.slice(1, 5, 8)) > 1e-3);
  CHECK_THROWS_WITH(model.forward(zeros({1, 13}, DType::i64), gen),
                    doctest::Contains("outside [1, block_size = 12]"));
}

TEST_CASE("cpu: the softmax head's loss goes in equal row chunks past 2^28 logits") {
  // GPT-2's 16 x 1024 positions over 50,304 ids: 4 chunks of 4,096 rows; the Baby GPT's
  // 64 x 256 over 65: one chunk (the plain composition, its bits unchanged).
  CHECK(softmax_loss_chunk_rows(16384, 50304) == 4096);
  CHECK(softmax_loss_chunk_rows(64 * 256, 65) == 64 * 256);
  CHECK(softmax_loss_chunk_rows(5337, 50304) == 2669);  // 2 chunks, equal up to one row
  CHECK(softmax_loss_chunk_rows(1, int64_t(1) << 30) == 1);
  CHECK(softmax_loss_chunk_rows(0, 50304) == 1);
  // Through the head: the chunked mean and sum equal cross_entropy over the logits.
  Generator init(6), gen(7);
  GPT model(tiny_config(11, false), init);
  const Tensor h = randn({10, 16}, gen, 0, 1, DType::f32), t = from_vector<int64_t>(
      {1, 3, 10, 0, -100, 2, 2, 9, 4, 5}, {10});
  for (const std::string red : {"mean", "sum", "none"}) {
    CAPTURE(red);
    const Tensor want = cross_entropy(model.head().logits(h), t, -100, red);
    CHECK(rel_err(model.head().loss(h, t, red), want) < 1e-6);
  }
}

namespace {

// `steps` AdamW steps of a 2-layer GPT on the tiny corpus (dropout on); grads after the last.
GptRun train_gpt(Device device, int steps, bool fused = false, int64_t n_embd = 16,
                 const ComputeMode& mode = ComputeMode(), bool bias = false, double dropout = 0.1) {
  const std::string text = gpt_corpus();
  const CharTokenizer vocab(text);
  Generator init(5);
  GPT model(tiny_config(vocab.vocab_size(), bias, fused, n_embd, dropout), init);
  return train_gpt_steps(model, vocab.encode(text), device, steps, mode);
}

}  // namespace

TEST_CASE("cpu: a 2-layer gpt learns a tiny corpus and two runs are bitwise identical") {
  // Fused attention (the CPU reference kernel) here; the composed ops in the CUDA comparison.
  const GptRun a = train_gpt(Device::cpu(), 150, true), b = train_gpt(Device::cpu(), 150, true);
  double first = 0, last = 0;
  for (int i = 0; i < 10; ++i) first += a.losses[size_t(i)] / 10;
  for (int i = 140; i < 150; ++i) last += a.losses[size_t(i)] / 10;
  CHECK(first > 2.0);         // ~log(vocab) at the start
  CHECK(last < 0.5 * first);  // the corpus is three phrases
  CHECK(a.losses == b.losses);
  CHECK(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)) == 0);
}

TEST_CASE("cuda: a 2-layer gpt agrees with the CPU on the loss and every gradient") {
  BG_REQUIRE_CUDA();
  const GptRun c = train_gpt(Device::cpu(), 1), g = train_gpt(Device::cuda(0), 1);
  CHECK(g.losses[0] == doctest::Approx(c.losses[0]).epsilon(1e-5));
  const Tensor gc = from_vector(c.grads, {int64_t(c.grads.size())});
  const Tensor gg = from_vector(g.grads, {int64_t(g.grads.size())});
  CHECK(rel_err(gg, gc) < 1e-4);
  // Same seeds, same batches and dropout masks: 20 steps follow the same trajectory.
  const GptRun c20 = train_gpt(Device::cpu(), 20), g20 = train_gpt(Device::cuda(0), 20);
  for (size_t i = 0; i < 20; ++i)
    CHECK(g20.losses[i] == doctest::Approx(c20.losses[i]).epsilon(1e-3));
  const GptRun g20b = train_gpt(Device::cuda(0), 20);
  CHECK(std::memcmp(g20.params.data(), g20b.params.data(), g20.params.size() * sizeof(float)) == 0);
}

TEST_CASE("cuda: a 2-layer gpt with fused attention agrees with the CPU and repeats bit for bit") {
  BG_REQUIRE_CUDA();
  // Head dim 64; the CUDA run is in bf16 mode (every matmul on bf16 operands, activations and
  // logits stored in bf16, a biased projection's bias in its GEMM's epilogue) against the CPU's
  // fp32, with the same dropout masks (the fused kernels' own; composed attention draws others).
  const ComputeMode bf16 = precision_mode(MatmulPrecision::bf16);
  for (bool bias : {false, true}) {
    CAPTURE(bias);
    const GptRun c = train_gpt(Device::cpu(), 1, true, 128, ComputeMode(), bias),
                 g = train_gpt(Device::cuda(0), 1, true, 128, bf16, bias);
    CHECK(g.losses[0] == doctest::Approx(c.losses[0]).epsilon(1e-3));
    const Tensor gc = from_vector(c.grads, {int64_t(c.grads.size())});
    const Tensor gg = from_vector(g.grads, {int64_t(g.grads.size())});
    CHECK(rel_err(gg, gc) < 1e-2);
    const GptRun c10 = train_gpt(Device::cpu(), 10, true, 128, ComputeMode(), bias);
    const GptRun g10 = train_gpt(Device::cuda(0), 10, true, 128, bf16, bias);
    const GptRun g10b = train_gpt(Device::cuda(0), 10, true, 128, bf16, bias);
    for (size_t i = 0; i < 10; ++i)
      CHECK(g10.losses[i] == doctest::Approx(c10.losses[i]).epsilon(1e-2));
    CHECK(g10.losses == g10b.losses);
    CHECK(std::memcmp(g10.params.data(), g10b.params.data(), g10.params.size() * sizeof(float)) ==
          0);
  }
}

TEST_CASE("cuda: a bf16-precision gpt with fused attention tracks fp32 and repeats bit for bit") {
  BG_REQUIRE_CUDA();
  // bf16 precision stores layernorm/GELU outputs, qkv, the attention output and the logits in
  // bf16 (the operands their consumers round to anyway) and adds a biased projection's bias in
  // its GEMM's epilogue; the losses stay within bf16 rounding of an fp32 run's. Composed
  // attention for fp32 (the fused kernel refuses it) and no dropout, whose masks the two
  // attentions draw differently.
  const ComputeMode bf16 = precision_mode(MatmulPrecision::bf16);
  for (bool bias : {false, true}) {
    CAPTURE(bias);
    const GptRun f32 = train_gpt(Device::cuda(0), 10, false, 128, ComputeMode(), bias, 0.0);
    const GptRun a = train_gpt(Device::cuda(0), 10, true, 128, bf16, bias, 0.0);
    const GptRun b = train_gpt(Device::cuda(0), 10, true, 128, bf16, bias, 0.0);
    for (size_t i = 0; i < 10; ++i)
      CHECK(a.losses[i] == doctest::Approx(f32.losses[i]).epsilon(2e-2));
    CHECK(a.losses == b.losses);
    CHECK(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)) == 0);
  }
  // The mode reaches every matmul: a mode no matmul can honour is refused by the first one.
  ComputeMode refused;
  refused.deterministic = true;
  CHECK_THROWS_WITH(train_gpt(Device::cuda(0), 1, false, 128, refused),
                    doctest::Contains("deterministic mode needs a batch-invariant algorithm"));
}

namespace {

// Logits of the KV-cached decoder (a 4-token prefill, then one token at a time) against the
// full forward's, position by position.
void check_cached_decoding(Device device) {
  Generator init(11), unused;
  GPT model(tiny_config(13, true), init);
  FlatParameters params(model.named_parameters(), device);
  model.train(false);
  NoGradGuard no_grad;
  const std::vector<int64_t> ids = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};  // block_size tokens
  const int64_t t = int64_t(ids.size());
  const std::vector<float> full =
      model.forward(from_vector(ids, {1, t}, device), unused).to_vector<float>();
  KVCache cache = model.new_cache(1, device);
  auto expect_row = [&](const Tensor& logits, int64_t pos) {
    const std::vector<float> got = logits.to_vector<float>();
    REQUIRE(got.size() == 13);
    double err = 0, scale = 0;
    for (size_t v = 0; v < 13; ++v) {
      err = std::max(err, double(std::fabs(got[v] - full[size_t(pos) * 13 + v])));
      scale = std::max(scale, double(std::fabs(full[size_t(pos) * 13 + v])));
    }
    CAPTURE(pos);
    CHECK(err <= 1e-5 * std::max(1.0, scale));
  };
  const std::vector<int64_t> prefix(ids.begin(), ids.begin() + 4);
  expect_row(model.forward_cached(from_vector(prefix, {1, 4}, device), cache), 3);
  for (int64_t p = 4; p < t; ++p)
    expect_row(model.forward_cached(
                   from_vector(std::vector<int64_t>{ids[size_t(p)]}, {1, 1}, device), cache),
               p);
  CHECK(cache.length == t);
  CHECK_THROWS_AS(model.forward_cached(from_vector(std::vector<int64_t>{1}, {1, 1}, device), cache),
                  std::runtime_error);  // past block_size
}

}  // namespace

TEST_CASE("cpu: kv-cached gpt decoding matches the full forward") {
  check_cached_decoding(Device::cpu());
}

TEST_CASE("cuda: kv-cached gpt decoding matches the full forward") {
  BG_REQUIRE_CUDA();
  check_cached_decoding(Device::cuda(0));
}

TEST_CASE("cpu: a gpt saved and loaded gives identical logits") {
  Generator init(21), other(22), unused;
  GPT model(tiny_config(17, true, true), init);  // load_gpt_config's default: fused attention
  model.train(false);
  const std::string path =
      scratch_path("gpt_roundtrip.h5");
  {
    CheckpointWriter ck(path);
    for (const auto& [name, t] : model.named_parameters()) ck.tensor(name, t);
    save_gpt_config(ck, model.config());
    ck.attr("model_type", std::string("gpt"));
    ck.commit();
  }
  CheckpointReader ck(path);
  const GPTConfig cfg = load_gpt_config(ck, path);
  CHECK(gpt_architecture_difference(cfg, model.config()).empty());
  GPT loaded(cfg, other);
  loaded.train(false);
  for (const auto& [name, t] : loaded.named_parameters())
    t.copy_(ck.tensor(name, DType::f32, t.shape()));
  const Tensor idx = from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 16}, {1, 6});
  CHECK(model.forward(idx, unused).to_vector<float>() ==
        loaded.forward(idx, unused).to_vector<float>());
  GPTConfig wider = cfg;
  wider.n_layer = 3;
  CHECK(gpt_architecture_difference(cfg, wider) == "model.n_layer: 2 vs 3");
  std::filesystem::remove(path);
}

}  // namespace bg::test

namespace bg::test {
namespace {

// train.deterministic's mode (the batch-invariant matmul algorithm; fused attention where the
// mode's precision runs it, composed otherwise): the logits of a sequence alone equal, bit for
// bit, its logits inside a batch of 7 at the first, middle and last place.
// bf16_stream: train.activations: bf16 (the residual stream in bf16).
ComputeMode deterministic(MatmulPrecision precision, bool bf16_stream, Device device) {
  ComputeMode m = ComputeMode::deterministic_mode(precision);
  if (bf16_stream) m.activations = ActivationDtype::bf16;
  return m.on(device);
}

void check_gpt_batch_invariance(Device device, MatmulPrecision precision, bool fused,
                                bool bf16_stream = false) {
  Generator init(21), data(22);
  GPTConfig cfg = tiny_config(17, true, fused, fused ? 128 : 16);  // the CUDA kernel: head dim 64
  cfg.dropout = 0.0;
  GPT model(cfg, init);
  model.set_compute_mode(deterministic(precision, bf16_stream, device));
  FlatParameters params(model.named_parameters(), device);
  model.train(false);
  NoGradGuard no_grad;
  std::vector<int64_t> ids(7 * 12);
  const std::vector<double> u = rand({7 * 12}, data, 0, 17, DType::f64).to_vector<double>();
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t(u[i]) % 17;
  Generator unused;
  const std::vector<float> batch =
      model.forward(from_vector(ids, {7, 12}, device), unused).to_vector<float>();
  const size_t per = 12 * 17;
  for (int64_t r : {0, 3, 6}) {
    CAPTURE(r);
    const std::vector<int64_t> one(ids.begin() + r * 12, ids.begin() + (r + 1) * 12);
    const std::vector<float> alone =
        model.forward(from_vector(one, {1, 12}, device), unused).to_vector<float>();
    CHECK(std::equal(alone.begin(), alone.end(), batch.begin() + long(size_t(r) * per)));
  }
}

}  // namespace

TEST_CASE(
    "cpu: a gpt in train.deterministic's mode gives a sequence the same logits in any batch") {
  check_gpt_batch_invariance(Device::cpu(), MatmulPrecision::fp32, false);
  check_gpt_batch_invariance(Device::cpu(), MatmulPrecision::fp32, true);
}

TEST_CASE(
    "cuda: a gpt in train.deterministic's mode gives a sequence the same logits in any batch") {
  BG_REQUIRE_CUDA();
  check_gpt_batch_invariance(Device::cuda(0), MatmulPrecision::fp32, false);
  check_gpt_batch_invariance(Device::cuda(0), MatmulPrecision::tf32, false);
  check_gpt_batch_invariance(Device::cuda(0), MatmulPrecision::bf16, false);
  check_gpt_batch_invariance(Device::cuda(0), MatmulPrecision::bf16, true);
  check_gpt_batch_invariance(Device::cuda(0), MatmulPrecision::bf16, false, true);
  check_gpt_batch_invariance(Device::cuda(0), MatmulPrecision::bf16, true, true);
}

}  // namespace bg::test

namespace bg::test {
namespace {

// Sampler = trainer (issue 15): under train.deterministic's mode, the KV-cached decoder's
// logits for a sequence (a 4-token prefill, then one token at a time) equal, bit for bit, the
// training forward's logits at the same positions with the sequence inside a batch of 64.
void check_sampler_equals_trainer(Device device, MatmulPrecision precision, bool fused,
                                  int64_t n_embd = 0, bool bf16_stream = false) {
  const std::string what = std::string(enum_name(precision)) + (fused ? " fused" : " composed") +
                           " width " + std::to_string(n_embd) + (bf16_stream ? " bf16 stream" : "");
  CAPTURE(what);
  Generator init(31), data(32);
  GPTConfig cfg = tiny_config(17, true, fused, n_embd ? n_embd : fused ? 128 : 16);
  cfg.dropout = 0.0;
  GPT model(cfg, init);
  model.set_compute_mode(deterministic(precision, bf16_stream, device));
  FlatParameters params(model.named_parameters(), device);
  NoGradGuard no_grad;
  const int64_t t = cfg.block_size, v = cfg.vocab_size, batch = 64, at = 37;
  std::vector<int64_t> ids(size_t(batch * t));
  const std::vector<double> u = rand({batch * t}, data, 0, 17, DType::f64).to_vector<double>();
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t(u[i]) % 17;
  Generator unused;
  model.train(true);  // the training forward (dropout 0)
  const std::vector<float> trained =
      model.forward(from_vector(ids, {batch, t}, device), unused).to(DType::f32).to_vector<float>();
  model.train(false);
  const std::vector<int64_t> seq(ids.begin() + at * t, ids.begin() + (at + 1) * t);
  KVCache cache = model.new_cache(1, device);
  const int64_t prefill = 4;
  for (int64_t pos = prefill - 1; pos < t; ++pos) {
    CAPTURE(pos);
    const std::vector<int64_t> step = pos == prefill - 1
                                          ? std::vector<int64_t>(seq.begin(), seq.begin() + prefill)
                                          : std::vector<int64_t>{seq[size_t(pos)]};
    const Tensor idx = from_vector(step, {1, int64_t(step.size())}, device);
    const std::vector<float> got =
        model.forward_cached(idx, cache).to(DType::f32).to_vector<float>();
    const auto want = trained.begin() + long((at * t + pos) * v);
    CHECK(std::equal(got.begin(), got.end(), want));
  }
}

}  // namespace

TEST_CASE("cpu: under train.deterministic the KV-cached sampler gives the training logits") {
  check_sampler_equals_trainer(Device::cpu(), MatmulPrecision::fp32, false);
  check_sampler_equals_trainer(Device::cpu(), MatmulPrecision::fp32, true);
}

TEST_CASE("cuda: under train.deterministic the KV-cached sampler gives the training logits") {
  BG_REQUIRE_CUDA();
  check_sampler_equals_trainer(Device::cuda(0), MatmulPrecision::fp32, false);
  check_sampler_equals_trainer(Device::cuda(0), MatmulPrecision::tf32, false);
  check_sampler_equals_trainer(Device::cuda(0), MatmulPrecision::bf16, false);
  check_sampler_equals_trainer(Device::cuda(0), MatmulPrecision::bf16, true);
  // GPT-2's width: the projections get GPT-2's pinned algorithms, whose epilogues add the bias
  // and the residual in an order of their own (a separate residual add gives other bits).
  check_sampler_equals_trainer(Device::cuda(0), MatmulPrecision::bf16, false, 768);
  // train.activations: bf16: the cache and the stream in bf16, the same bits as training's.
  check_sampler_equals_trainer(Device::cuda(0), MatmulPrecision::bf16, true, 0, true);
  check_sampler_equals_trainer(Device::cuda(0), MatmulPrecision::bf16, false, 768, true);
}

}  // namespace bg::test
