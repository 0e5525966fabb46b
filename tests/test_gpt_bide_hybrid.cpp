// test_gpt_bide_hybrid.cpp: the hybrid BIDE head (head.bide.softmax_ids K > 0): patterns [0, K)
// take softmax logits from their own rows, the BIDE the rest, one exact normaliser. Its logits
// and loss against every logit materialised by loops in float64; its gradients against float64
// finite differences; its mass outside the vocabulary; the refusals; a hybrid GPT that learns,
// repeats bit for bit, and gives the same numbers on CUDA as on the CPU; each with its softmax
// rows its own or tied to the token embedding (head.bide.tie_softmax).
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

// V = 13 ids as 4-bit patterns, H = 5, n_embd 6, the first K = 4 patterns in the softmax.
constexpr int64_t kVocab = 13, kHidden = 5, kEmbd = 6, kSoftmax = 4;
constexpr int kBits = 4;
const std::vector<int64_t> kCode = {7, 2, 10, 0, 5, 1, 9, 3, 8, 4, 6, 12, 11};

BideHeadSpec hybrid_spec() {
  BideHeadSpec s;
  s.bits = kBits;
  s.hidden = kHidden;
  s.support = kVocab;
  s.softmax_ids = kSoftmax;
  s.code = BideTokenCode::frequency;
  return s;
}

Tensor parameter(const Module& m, const std::string& name) {
  for (const auto& [n, t] : m.named_parameters())
    if (n == name) return t;
  FAIL("no parameter ", name);
  return Tensor();
}

// Every pattern's logit for row `row` of h by loops: u_k . h for k < K (u: the K softmax rows),
// r . relu(W b_k) above.
std::vector<double> explicit_pattern_logits(const Module& head, const Tensor& u_rows,
                                            const Tensor& h, int64_t row) {
  const std::vector<double>
      hv = h.to(DType::f64).to_vector<double>(),
      ww = parameter(head, "bide.w_proj.weight").to(DType::f64).to_vector<double>(),
      wr = parameter(head, "bide.r_proj.weight").to(DType::f64).to_vector<double>(),
      u = u_rows.to(DType::f64).to_vector<double>();
  auto dot = [&](const std::vector<double>& m, int64_t out) {
    double s = 0;
    for (int64_t c = 0; c < kEmbd; ++c)
      s += m[size_t(out * kEmbd + c)] * hv[size_t(row * kEmbd + c)];
    return s;
  };
  std::vector<double> l(static_cast<size_t>(kVocab));
  for (int64_t k = 0; k < kVocab; ++k) {
    if (k < kSoftmax) {
      l[size_t(k)] = dot(u, k);
      continue;
    }
    double acc = 0;
    for (int64_t i = 0; i < kHidden; ++i) {
      double z = 0;
      for (int j = 0; j < kBits; ++j) z += dot(ww, i * kBits + j) * (((k >> j) & 1) ? 1.0 : -1.0);
      acc += dot(wr, i) * std::max(z, 0.0);
    }
    l[size_t(k)] = acc;
  }
  return l;
}

double log_sum_exp(const std::vector<double>& l, int64_t from, int64_t to) {
  double m = -INFINITY, s = 0;
  for (int64_t k = from; k < to; ++k) m = std::max(m, l[size_t(k)]);
  for (int64_t k = from; k < to; ++k) s += std::exp(l[size_t(k)] - m);
  return m + std::log(s);
}

// The module's parameters as float64 tensors in place (what finite differences need).
void to_f64(Module& m) {
  for (auto& [name, t] : m.named_parameters()) {
    const Tensor d = t.detach().to(DType::f64).contiguous();
    TensorImpl* impl = t.impl();
    impl->storage = d.impl()->storage;
    impl->offset = 0;
    impl->strides = contiguous_strides(impl->shape);
    impl->dtype = DType::f64;
    impl->requires_grad = true;
  }
}

GPTConfig hybrid_gpt(int64_t vocab) {
  GPTConfig c = small_bide_gpt(vocab, 0.1);
  c.bide.code = BideTokenCode::frequency;
  c.bide.softmax_ids = 4;
  return c;
}

GptRun train(const GPTConfig& cfg, Device device, int steps) {
  const std::string text = cat_dog_text();
  const CharTokenizer chars(text);
  const std::vector<int32_t> tokens = chars.encode(text);
  GPTConfig c = cfg;
  c.vocab_size = chars.vocab_size();
  Generator init(5);
  GPT model(c, init);
  model.bide_head()->set_code(token_code(model.config().bide, tokens));
  return train_gpt_steps(model, tokens, device, steps);
}

// The hybrid head of hybrid_spec() with kCode, its softmax rows its own or (tied) the rows of
// an embedding of its own (drawn first from `init`).
struct HybridHead {
  std::shared_ptr<Embedding> wte;
  std::shared_ptr<BideTokenHead> head;
};
HybridHead make_hybrid_head(bool tied, Generator& init) {
  BideHeadSpec spec = hybrid_spec();
  spec.tie_softmax = tied;
  HybridHead h;
  h.wte = std::make_shared<Embedding>(kVocab, kEmbd, init, 0.5);
  h.head = std::make_shared<BideTokenHead>(kEmbd, spec, init, tied ? h.wte : nullptr);
  h.head->set_code(kCode);
  return h;
}

}  // namespace

TEST_CASE("cpu: the hybrid head's logits and loss are one softmax over both kinds of logit") {
  for (const bool tied : {false, true}) {
    INFO("tied ", tied);
    Generator init(3), data(4);
    const HybridHead made = make_hybrid_head(tied, init);
    const std::shared_ptr<Embedding>& wte = made.wte;
    BideTokenHead& head = *made.head;
    // The softmax rows: its own matrix, or the embedding's rows of the ids coded 0..K-1.
    Tensor u;
    if (tied) {
      std::vector<int64_t> ids(static_cast<size_t>(kSoftmax));
      for (size_t id = 0; id < kCode.size(); ++id)
        if (kCode[id] < kSoftmax) ids[size_t(kCode[id])] = int64_t(id);
      u = embedding(wte->weight, from_vector(ids, {kSoftmax}));
      CHECK(head.named_parameters().size() == 2);  // no matrix of its own
    } else {
      u = parameter(head, "softmax.weight");
    }
    REQUIRE(u.shape() == Shape({kSoftmax, kEmbd}));
    const Tensor h = randn({3, kEmbd}, data, 0, 1.5);
    const std::vector<double> got = head.logits(h).to(DType::f64).to_vector<double>();
    const std::vector<int64_t> targets = {3, 0, 11};  // patterns 0 (softmax), 7 and 12 (BIDE)
    const std::vector<double> nll =
        head.loss(h, from_vector(targets, {3}), "none").to(DType::f64).to_vector<double>();
    const auto [z_vocab, z_all] = head.log_normalizers(h);
    const std::vector<double> zv = z_vocab.to(DType::f64).to_vector<double>(),
                              za = z_all.to(DType::f64).to_vector<double>();
    for (int64_t n = 0; n < 3; ++n) {
      CAPTURE(n);
      const std::vector<double> l = explicit_pattern_logits(head, u, h, n);
      const double log_z = log_sum_exp(l, 0, kVocab);
      for (int64_t id = 0; id < kVocab; ++id)
        CHECK(got[size_t(n * kVocab + id)] ==
              doctest::Approx(l[size_t(kCode[size_t(id)])] - log_z).epsilon(1e-5));
      CHECK(nll[size_t(n)] ==
            doctest::Approx(log_z - l[size_t(kCode[size_t(targets[size_t(n)])])]).epsilon(1e-5));
      CHECK(zv[size_t(n)] == doctest::Approx(log_z).epsilon(1e-5));
      CHECK(za[size_t(n)] > zv[size_t(n)]);  // patterns 13..15 would add mass, unrestricted
    }
    CHECK(head.loss(h, from_vector(targets, {3})).item() ==
          doctest::Approx((nll[0] + nll[1] + nll[2]) / 3).epsilon(1e-6));
  }
}

TEST_CASE("cpu: the hybrid head's gradients match float64 finite differences") {
  for (const bool tied : {false, true}) {
    INFO("tied ", tied);
    Generator init(11), data(12);
    const HybridHead made = make_hybrid_head(tied, init);
    const std::shared_ptr<Embedding>& wte = made.wte;
    BideTokenHead& head = *made.head;
    to_f64(head);
    to_f64(*wte);
    const Tensor h = randn({6, kEmbd}, data, 0, 1, DType::f64).requires_grad_(true);
    const Tensor y = from_vector(std::vector<int64_t>{3, 1, 0, 12, 5, 9}, {6});  // both parts
    head.loss(h, y).backward();
    std::vector<Tensor> checked = {h};
    for (const auto& [name, t] : head.named_parameters()) checked.push_back(t);
    if (tied) checked.push_back(wte->weight);  // the rows of the ids coded 0..3
    REQUIRE(checked.size() == 4);
    for (const Tensor& p : checked) {
      const std::vector<double> grad = p.grad().to_vector<double>();
      const std::vector<double> keep_all = p.detach().to_vector<double>();
      for (size_t i = 0; i < keep_all.size(); i += 2) {
        const double eps = 1e-6;
        auto at = [&](double x) {
          NoGradGuard ng;
          std::vector<double> v = keep_all;
          v[i] = x;
          p.detach().copy_(from_vector(v, p.shape()));
          const double out = head.loss(h.detach(), y).item();
          p.detach().copy_(from_vector(keep_all, p.shape()));
          return out;
        };
        const double fd = (at(keep_all[i] + eps) - at(keep_all[i] - eps)) / (2 * eps);
        CAPTURE(i);
        CHECK(grad[i] == doctest::Approx(fd).epsilon(1e-5).scale(1e-3));
      }
    }
  }
}

TEST_CASE("cpu: the hybrid head refuses a softmax that leaves the BIDE no ids") {
  Generator init(1);
  BideHeadSpec spec = hybrid_spec();
  spec.softmax_ids = kVocab;
  CHECK_THROWS_WITH(BideTokenHead(kEmbd, spec, init), doctest::Contains("leaves the BIDE no ids"));
  spec.softmax_ids = -1;
  CHECK_THROWS_WITH(BideTokenHead(kEmbd, spec, init), doctest::Contains("expected 0 to 12"));
  spec = hybrid_spec();
  spec.tie_softmax = true;  // and no embedding to tie to
  CHECK_THROWS_WITH(BideTokenHead(kEmbd, spec, init), doctest::Contains("a token embedding"));
}

TEST_CASE("cpu: a hybrid-head gpt learns, samples, and two runs are bitwise identical") {
  for (const bool tied : {false, true}) {
    INFO("tied ", tied);
    GPTConfig cfg = hybrid_gpt(0);
    cfg.bide.tie_softmax = tied;
    const GptRun a = train(cfg, Device::cpu(), 120), b = train(cfg, Device::cpu(), 120);
    CHECK(mean_of(a.losses, 110, 120) < mean_of(a.losses, 0, 10) - 0.5);
    CHECK(a.params == b.params);
  }
  const CharTokenizer chars("the cat sat. a dog ran. ");
  GPTConfig cfg = hybrid_gpt(chars.vocab_size());
  Generator init(1), sg(2);
  GPT model(cfg, init);
  model.bide_head()->set_code(
      frequency_code(chars.encode("the cat sat"), model.config().bide.support));
  model.train(false);
  SampleSettings s;
  s.new_tokens = 6;
  CHECK(model.generate(chars.encode("the"), s, chars.vocab_size(), sg, Device::cpu()).size() == 9);
}

TEST_CASE("cuda: a hybrid-head gpt agrees with the CPU on the loss and every gradient") {
  BG_REQUIRE_CUDA();
  for (const char* dtype : {"fp32", "fp16"}) {
    INFO(dtype);
    GPTConfig cfg = hybrid_gpt(0);
    cfg.bide.tie_softmax = std::string(dtype) == "fp16";  // both kinds of softmax rows
    REQUIRE(parse_enum(dtype, &cfg.bide.precision));
    const GptRun c = train(cfg, Device::cpu(), 1), g = train(cfg, Device::cuda(0), 1);
    const double tol = std::string(dtype) == "fp32" ? 1e-5 : 1e-3;
    CHECK(g.losses[0] == doctest::Approx(c.losses[0]).epsilon(tol));
    CHECK(rel_err(from_vector(g.grads, {int64_t(g.grads.size())}),
                  from_vector(c.grads, {int64_t(c.grads.size())})) < 10 * tol);
  }
}

}  // namespace bg::test
