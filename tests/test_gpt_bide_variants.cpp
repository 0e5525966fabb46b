// test_gpt_bide_variants.cpp: the BIDE head's variants on the GPT (models/gpt/gpt.h, gpt_head.h).
// A token code other than the id (ids ranked by frequency): the ranks, the refusal of a code
// that is not a permutation, and logits that are the id head's permuted; the vocabulary-free
// input (model.input: bits): each token's features are its +-1 bits times the layer's weight,
// gradients included, and no matrix has a vocabulary-sized dimension; byte pairs (two tokens
// predicted jointly): the windows' targets, joint ids and their tokens both ways, the tokenizer's
// round trip, generation two bytes at a time; every variant learns, and CUDA = CPU.
#include <cmath>

#include "core/optim.h"
#include "data/text.h"
#include "data/tokenizer.h"
#include "gpt_train_loop.h"
#include "harness.h"
#include "models/gpt/generate.h"
#include "models/gpt/gpt.h"

namespace bg::test {
namespace {

GPTConfig small_bide_gpt(int64_t vocab) { return test::small_bide_gpt(vocab, 0.0); }

// `steps` training steps of a small BIDE GPT on a repetitive text, its tokens from `tok`.
GptRun train(GPTConfig cfg, const Tokenizer& tok, Device device, int steps) {
  const std::vector<int32_t> tokens = tok.encode(cat_dog_text());
  cfg.predict_tokens = tok.tokens_per_target();
  Generator init(5);
  GPT model(cfg, init);
  if (cfg.bide.code == BideTokenCode::frequency)
    model.bide_head()->set_code(frequency_code(tokens, model.config().bide.support));
  return train_gpt_steps(model, tokens, device, steps);
}

}  // namespace

TEST_CASE("cpu: the frequency codes rank ids by count (ties by id), refuse a non-permutation") {
  // counts: id 0 x1, 1 x3, 2 x0, 3 x3, 4 x2 -> order 1, 3, 4, 0, 2.
  const std::vector<int32_t> tokens = {1, 3, 4, 1, 0, 3, 4, 1, 3};
  CHECK(frequency_code(tokens, 5) == std::vector<int64_t>{3, 0, 4, 1, 2});
  // frequent_first with K = 2: ids 1 and 3 take patterns 0 and 1, then 0, 2, 4 in id order.
  BideHeadSpec ranked;
  ranked.support = 5;
  ranked.softmax_ids = 2;
  ranked.code = BideTokenCode::frequent_first;
  CHECK(token_code(ranked, tokens) == std::vector<int64_t>{2, 0, 3, 1, 4});
  ranked.code = BideTokenCode::frequency;
  CHECK(token_code(ranked, tokens) == std::vector<int64_t>{3, 0, 4, 1, 2});
  Generator init(1);
  BideHeadSpec spec;
  spec.bits = 3;
  spec.hidden = 4;
  spec.support = 5;
  spec.code = BideTokenCode::frequency;
  BideTokenHead head(6, spec, init);
  CHECK_THROWS_WITH(head.set_code({0, 1, 1, 2, 3}), doctest::Contains("not a permutation"));
  CHECK_THROWS_WITH(head.set_code({0, 1, 2}), doctest::Contains("a token code of 3 ids"));
  CHECK_THROWS_WITH(head.logits(zeros({1, 6})), doctest::Contains("has no code table"));
}

TEST_CASE("cpu: with a token code, logits are the id head's permuted and -loss at each target") {
  BideHeadSpec spec;
  spec.bits = 4;
  spec.hidden = 5;
  spec.support = 11;
  Generator init_a(3), init_b(3), data(4);
  BideTokenHead by_id(6, spec, init_a);
  spec.code = BideTokenCode::frequency;
  BideTokenHead coded(6, spec, init_b);  // the same weights
  const std::vector<int64_t> code = {7, 2, 10, 0, 5, 1, 9, 3, 8, 4, 6};
  coded.set_code(code);
  const Tensor h = randn({3, 6}, data, 0, 1.5);
  const std::vector<float> a = by_id.logits(h).to_vector<float>(),
                           b = coded.logits(h).to_vector<float>();
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t id = 0; id < 11; ++id)
      CHECK(b[size_t(n * 11 + id)] == a[size_t(n * 11 + code[size_t(id)])]);
  const std::vector<int64_t> targets = {4, 0, 10};
  const std::vector<float> nll =
      coded.loss(h, from_vector(targets, {3}), "none").to_vector<float>();
  for (int64_t n = 0; n < 3; ++n)
    CHECK(-nll[size_t(n)] == doctest::Approx(b[size_t(n * 11 + targets[size_t(n)])]).epsilon(1e-5));
}

TEST_CASE("cpu: a bit-input gpt's features are its tokens' +-1 bits times wbe, gradients too") {
  GPTConfig cfg = small_bide_gpt(13);  // 4 input bits
  cfg.input = InputKind::bits;
  cfg.dropout = 0;
  Generator init(2), unused;
  GPT model(cfg, init);
  for (const auto& [name, t] : model.named_parameters())
    for (int64_t d : t.shape()) CHECK_MESSAGE(d != 13, name, " has a vocabulary-sized dimension");
  Tensor w;
  for (const auto& [name, t] : model.named_parameters())
    if (name == "transformer.wbe.weight") w = t;
  REQUIRE(w.defined());
  REQUIRE(w.shape() == Shape({16, 4}));
  const std::vector<int64_t> ids = {0, 5, 12, 7};
  const Tensor wpe = model.named_parameters()[1].second;  // transformer.wpe.weight
  REQUIRE(model.named_parameters()[1].first == "transformer.wpe.weight");
  const Tensor x = model.embed(from_vector(ids, {1, 4}), unused);
  const std::vector<float> got = x.to_vector<float>(), wv = w.to_vector<float>(),
                           pv = wpe.to_vector<float>();
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t c = 0; c < 16; ++c) {
      double want = pv[size_t(t * 16 + c)];
      for (int j = 0; j < 4; ++j)
        want += ((ids[size_t(t)] >> j) & 1 ? 1.0 : -1.0) * wv[size_t(c * 4 + j)];
      CHECK(got[size_t(t * 16 + c)] == doctest::Approx(want).epsilon(1e-6));
    }
  // d(sum x * g)/dW[c][j] = sum_t g[t][c] bit_j(id_t).
  const Tensor g = randn({1, 4, 16}, unused);
  sum(x * g).backward();
  const std::vector<float> dw = w.grad().to_vector<float>(), gv = g.to_vector<float>();
  for (int64_t c = 0; c < 16; ++c)
    for (int j = 0; j < 4; ++j) {
      double want = 0;
      for (int64_t t = 0; t < 4; ++t)
        want += gv[size_t(t * 16 + c)] * ((ids[size_t(t)] >> j) & 1 ? 1.0 : -1.0);
      CHECK(dw[size_t(c * 4 + j)] == doctest::Approx(want).epsilon(1e-5));
    }
  GPTConfig softmax = cfg;
  softmax.head = HeadKind::softmax;
  CHECK_THROWS_WITH(GPT(softmax, init), doctest::Contains("use model.head: bide"));
}

TEST_CASE("cpu: byte pairs: targets, joint ids and tokens both ways, round trip, generation") {
  const ByteTokenizer pairs(true);
  CHECK(pairs.kind() == "byte_pair");
  CHECK(pairs.tokens_per_target() == 2);
  const std::string text = "Hello,\n\xce\xbb world";
  CHECK(pairs.decode(pairs.encode(text)) == text);
  GPTConfig cfg = small_bide_gpt(256);
  cfg.predict_tokens = 2;
  CHECK(target_vocabulary(cfg) == 65536);
  const int32_t next[2] = {0x41, 0xfe};
  CHECK(joint_target(cfg, next) == 0x41fe);
  std::vector<int32_t> back;
  append_target_tokens(cfg, 0x41fe, back);
  CHECK(back == std::vector<int32_t>{0x41, 0xfe});
  // Windows: y[b][t] = 256 tokens[s + t + 1] + tokens[s + t + 2] for the window's start s.
  const std::vector<int32_t> tokens = pairs.encode("abcdefghijklmnopqrstuvwxyz");
  Generator gen(3);
  Tensor x, y;
  sample_windows(tokens, 5, 6, gen, Device::cpu(), &x, &y, 2, 256);
  const std::vector<int64_t> xs = x.to_vector<int64_t>(), ys = y.to_vector<int64_t>();
  for (size_t i = 0; i < xs.size(); ++i) {
    const int64_t s = xs[i] - 'a';
    REQUIRE(s + 2 < 26);
    CHECK(ys[i] == 256 * ('a' + s + 1) + ('a' + s + 2));
  }
  // Generation draws two bytes at a time and stops at exactly the tokens asked for.
  Generator init(4), sg(5);
  GPT model(cfg, init);
  model.train(false);
  SampleSettings s;
  s.new_tokens = 7;
  const std::vector<int32_t> out = model.generate({'a', 'b'}, s, 256, sg, Device::cpu());
  CHECK(out.size() == 9);
  GPTConfig softmax = cfg;
  softmax.head = HeadKind::softmax;
  CHECK_THROWS_WITH(GPT(softmax, init), doctest::Contains("needs model.head: bide"));
}

TEST_CASE("cpu: frequency-coded, bit-input and byte-pair gpts learn and repeat bit for bit") {
  const std::string sample = "the cat sat. a dog ran. ";
  const CharTokenizer chars(sample);
  const ByteTokenizer pairs(true);
  GPTConfig coded = small_bide_gpt(chars.vocab_size());
  coded.bide.code = BideTokenCode::frequency;
  GPTConfig bits = coded;
  bits.input = InputKind::bits;
  const GPTConfig pair = small_bide_gpt(256);
  for (const auto& [name, cfg, tok] :
       {std::tuple<const char*, GPTConfig, const Tokenizer*>{"frequency code", coded, &chars},
        {"bit input", bits, &chars},
        {"byte pairs", pair, &pairs}}) {
    INFO(name);
    const GptRun a = train(cfg, *tok, Device::cpu(), 120), b = train(cfg, *tok, Device::cpu(), 120);
    CHECK(mean_of(a.losses, 110, 120) < mean_of(a.losses, 0, 10) - 0.5);
    CHECK(a.params == b.params);
  }
}

TEST_CASE("cuda: frequency-coded, bit-input and byte-pair gpts agree with the CPU") {
  BG_REQUIRE_CUDA();
  const CharTokenizer chars("the cat sat. a dog ran. ");
  const ByteTokenizer pairs(true);
  GPTConfig coded = small_bide_gpt(chars.vocab_size());
  coded.bide.code = BideTokenCode::frequency;
  coded.input = InputKind::bits;
  GPTConfig pair = small_bide_gpt(256);
  pair.bide.hidden = 100;  // a wide head: the bruteforce kernel's 16-tile shape
  for (const auto& [cfg, tok] :
       {std::pair<GPTConfig, const Tokenizer*>{coded, &chars}, {pair, &pairs}}) {
    const GptRun c = train(cfg, *tok, Device::cpu(), 1), g = train(cfg, *tok, Device::cuda(0), 1);
    CHECK(g.losses[0] == doctest::Approx(c.losses[0]).epsilon(1e-5));
    CHECK(rel_err(from_vector(g.grads, {int64_t(g.grads.size())}),
                  from_vector(c.grads, {int64_t(c.grads.size())})) < 1e-4);
    // Sampling on the GPU: the head's logits (permuted by the code) and two-byte draws.
    GPTConfig sampled = cfg;
    sampled.predict_tokens = tok->tokens_per_target();
    Generator init(1), sg(2);
    GPT model(sampled, init);
    if (sampled.bide.code == BideTokenCode::frequency)
      model.bide_head()->set_code(
          frequency_code(tok->encode("the cat"), model.config().bide.support));
    FlatParameters params(model.named_parameters(), Device::cuda(0));
    model.train(false);
    SampleSettings s;
    s.new_tokens = 5;
    const std::vector<int32_t> out =
        model.generate(tok->encode("the"), s, tok->vocab_size(), sg, Device::cuda(0));
    CHECK(out.size() == 8);
  }
}

}  // namespace bg::test
