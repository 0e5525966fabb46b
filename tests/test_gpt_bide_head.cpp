// test_gpt_bide_head.cpp: the GPT's BIDE output head (models/gpt/gpt_head.h). Its gradients against
// float64 finite differences; its restricted normaliser against an explicit log-softmax over the
// logits of the ids [0, V); sampling through it against its probabilities (chi-square); a
// BIDE-head GPT that learns, repeats bit for bit and gives the same numbers on CUDA as on the
// CPU; and the refusals of a head that cannot hold the vocabulary.
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

// V = 13 ids as 4-bit patterns (13 of 16), H = 5, n_embd 6.
constexpr int64_t kVocab = 13, kHidden = 5, kEmbd = 6;
constexpr int kBits = 4;

BideHeadSpec spec() {
  BideHeadSpec s;
  s.bits = kBits;
  s.hidden = kHidden;
  s.support = kVocab;
  return s;
}

// The head's loss as its ops compose it, on f64 tensors: h (N, C), the two projections' weights.
Tensor head_loss_f64(const Tensor& h, const Tensor& ww, const Tensor& wr, const Tensor& y) {
  BideOptions opt;
  opt.code.type = BideValueType::uint;
  opt.code.bits = kBits;
  opt.support_hi = kVocab;
  const int64_t n = h.size(0);
  return bide_nll(linear(h, ww).reshape({n, kHidden, kBits}), linear(h, wr), y, opt);
}

// l_k = r . relu(W b_k) for every id k < V, b_k in {-1, +1}^B (bit j of k, least significant
// first), computed by loops: the paper's definition, with no SICK pass.
std::vector<double> explicit_logits(const std::vector<double>& w, const std::vector<double>& r,
                                    int64_t row) {
  std::vector<double> l(static_cast<size_t>(kVocab));
  for (int64_t k = 0; k < kVocab; ++k) {
    double acc = 0;
    for (int64_t i = 0; i < kHidden; ++i) {
      double z = 0;
      for (int j = 0; j < kBits; ++j)
        z += w[size_t((row * kHidden + i) * kBits + j)] * (((k >> j) & 1) ? 1.0 : -1.0);
      acc += r[size_t(row * kHidden + i)] * std::max(z, 0.0);
    }
    l[size_t(k)] = acc;
  }
  return l;
}

GptRun train_bide_gpt(Device device, int steps, const ComputeMode& mode = ComputeMode()) {
  const std::string text = cat_dog_text();
  const CharTokenizer vocab(text);
  Generator init(5);
  GPT model(small_bide_gpt(vocab.vocab_size(), 0.1), init);
  return train_gpt_steps(model, vocab.encode(text), device, steps, mode);
}

}  // namespace

TEST_CASE("cpu: the BIDE head's gradients match float64 finite differences") {
  Generator gen(11);
  const Tensor h = randn({5, kEmbd}, gen, 0, 1, DType::f64).requires_grad_(true);
  const Tensor ww = randn({kHidden * kBits, kEmbd}, gen, 0, 0.5, DType::f64).requires_grad_(true);
  const Tensor wr = randn({kHidden, kEmbd}, gen, 0, 0.5, DType::f64).requires_grad_(true);
  const Tensor y = from_vector(std::vector<int64_t>{0, 12, 5, 7, 3}, {5});
  head_loss_f64(h, ww, wr, y).backward();
  for (const Tensor* p : {&h, &ww, &wr}) {
    const std::vector<double> grad = p->grad().to_vector<double>();
    std::vector<double> v = p->detach().to_vector<double>();
    for (size_t i = 0; i < v.size(); i += 3) {
      const double eps = 1e-6, keep = v[i];
      auto at = [&](double x) {
        v[i] = x;
        const Tensor q = from_vector(v, p->shape());
        const Tensor hh = p == &h ? q : h.detach(), wwq = p == &ww ? q : ww.detach(),
                     wrq = p == &wr ? q : wr.detach();
        return head_loss_f64(hh, wwq, wrq, y).item();
      };
      const double fd = (at(keep + eps) - at(keep - eps)) / (2 * eps);
      v[i] = keep;
      CAPTURE(i);
      CHECK(grad[i] == doctest::Approx(fd).epsilon(1e-5).scale(1e-3));
    }
  }
}

TEST_CASE("cpu: the BIDE head's restricted normaliser is a log-softmax over the ids 0 to V - 1") {
  Generator init(3), data(4);
  BideTokenHead head(kEmbd, spec(), init);
  const Tensor h = randn({3, kEmbd}, data);
  const auto named = head.named_parameters();
  REQUIRE(named.size() == 2);
  CHECK(named[0].first == "bide.w_proj.weight");
  const std::vector<double> w =
      linear(h, named[0].second).reshape({3, kHidden, kBits}).to(DType::f64).to_vector<double>();
  const std::vector<double> r = linear(h, named[1].second).to(DType::f64).to_vector<double>();
  const Tensor logp = head.logits(h);
  REQUIRE(logp.shape() == Shape{3, kVocab});
  const std::vector<double> got = logp.to(DType::f64).to_vector<double>();
  std::vector<int64_t> targets;
  double nll = 0;
  for (int64_t row = 0; row < 3; ++row) {
    const std::vector<double> l = explicit_logits(w, r, row);
    double m = -INFINITY, s = 0;
    for (double x : l) m = std::max(m, x);
    for (double x : l) s += std::exp(x - m);
    for (int64_t k = 0; k < kVocab; ++k) {
      CAPTURE(row);
      CAPTURE(k);
      CHECK(got[size_t(row * kVocab + k)] ==
            doctest::Approx(l[size_t(k)] - m - std::log(s)).epsilon(1e-5));
    }
    const int64_t y = (row * 5 + 2) % kVocab;
    targets.push_back(y);
    nll -= l[size_t(y)] - m - std::log(s);
  }
  // The training loss is the same distribution's NLL (the fused SICK pass).
  CHECK(head.loss(h, from_vector(targets, {3})).item() == doctest::Approx(nll / 3).epsilon(1e-5));
  // Unrestricted, the same head would normalise over all 16 patterns: more mass, never less.
  const auto [z_vocab, z_all] = head.log_normalizers(h);
  for (double d : (z_all - z_vocab).to(DType::f64).to_vector<double>()) CHECK(d > 0);
}

TEST_CASE("cpu: sampling through the BIDE head follows its probabilities (chi-square)") {
  Generator init(8), data(9), gen(10);
  BideTokenHead head(kEmbd, spec(), init);
  const Tensor h = randn({1, kEmbd}, data, 0, 2);
  const std::vector<float> logits = head.logits(h).to_vector<float>();
  SampleSettings s;
  s.temperature = 1.0;
  s.top_k = 0;
  const int draws = 20000;
  std::vector<int> count(static_cast<size_t>(kVocab), 0);
  for (int i = 0; i < draws; ++i) ++count[size_t(sample_token(logits, s, gen))];
  double chi2 = 0;
  int dof = -1;
  for (int64_t k = 0; k < kVocab; ++k) {
    const double expected = draws * std::exp(double(logits[size_t(k)]));
    if (expected < 5) continue;  // the chi-square approximation needs >= 5 expected
    chi2 += (count[size_t(k)] - expected) * (count[size_t(k)] - expected) / expected;
    ++dof;
  }
  REQUIRE(dof >= 3);
  // The 99.9% point of chi-square: below 3.3 dof + 12 for dof <= 12.
  CHECK(chi2 < 3.3 * dof + 12);
}

TEST_CASE("cpu: a BIDE-head gpt learns and two runs are bitwise identical") {
  const GptRun a = train_bide_gpt(Device::cpu(), 120), b = train_bide_gpt(Device::cpu(), 120);
  double first = 0, last = 0;
  for (int i = 0; i < 10; ++i) first += a.losses[size_t(i)] / 10;
  for (int i = 110; i < 120; ++i) last += a.losses[size_t(i)] / 10;
  CHECK(last < first - 0.5);
  CHECK(a.params == b.params);
  GPTConfig c = small_bide_gpt(40, 0.1);
  c.bide.bits = 5;  // 32 patterns for 40 ids
  Generator init(1);
  CHECK_THROWS_WITH(GPT(c, init), doctest::Contains("a BIDE head of 5 bits cannot hold 40"));
}

TEST_CASE("cuda: a BIDE-head gpt agrees with the CPU on the loss and every gradient") {
  BG_REQUIRE_CUDA();
  const GptRun c = train_bide_gpt(Device::cpu(), 1), g = train_bide_gpt(Device::cuda(0), 1);
  CHECK(g.losses[0] == doctest::Approx(c.losses[0]).epsilon(1e-5));
  const Tensor gc = from_vector(c.grads, {int64_t(c.grads.size())});
  const Tensor gg = from_vector(g.grads, {int64_t(g.grads.size())});
  CHECK(rel_err(gg, gc) < 1e-4);
  const GptRun g20 = train_bide_gpt(Device::cuda(0), 20),
               g20b = train_bide_gpt(Device::cuda(0), 20);
  CHECK(g20.params == g20b.params);
  // Under train.deterministic the CPU and CUDA runs are each repeatable too.
  const ComputeMode det = ComputeMode::deterministic_mode();
  CHECK(train_bide_gpt(Device::cuda(0), 5, det).params ==
        train_bide_gpt(Device::cuda(0), 5, det).params);
}

}  // namespace bg::test
