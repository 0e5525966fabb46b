#include "gpt_head.h"

namespace bg {

Tensor GPTHead::loss(const Tensor& h, const Tensor& targets, const std::string& reduction) const {
  return cross_entropy(logits(h), targets, -100, reduction);
}

int bits_for_vocabulary(int64_t vocab) {
  int bits = 1;
  while ((int64_t(1) << bits) < vocab) ++bits;
  return bits;
}

TiedSoftmaxHead::TiedSoftmaxHead(std::shared_ptr<Embedding> wte, HeadKind kind,
                                 const BitLinearOptions& bitlinear)
    : wte_(std::move(wte)), kind_(kind), bitlinear_(bitlinear) {}

Tensor TiedSoftmaxHead::logits(const Tensor& h) const {
  const ComputeMode mode = compute_mode().at(MatmulSite::lm_head);
  if (packed_.w2.defined()) return bitlinear_packed(h, packed_, Tensor(), bitlinear_, mode);
  if (kind_ == HeadKind::bitlinear) return bitlinear(h, wte_->weight, Tensor(), bitlinear_, mode);
  return linear(h, wte_->weight, Tensor(), mode);
}

void TiedSoftmaxHead::use_packed(PackedTernary packed) {
  BG_CHECK(kind_ == HeadKind::bitlinear, "gpt", "a packed LM head needs bitlinear.lm_head: true");
  const int64_t vocab = wte_->weight.size(0), n_embd = wte_->weight.size(1);
  BG_CHECK(packed.k == n_embd && packed.out_features() == vocab, "gpt", "a packed LM head of ",
           packed.out_features(), " x ", packed.k, " for ", vocab, " x ", n_embd);
  packed_ = std::move(packed);
}

namespace {
BideOptions bide_options(const BideHeadSpec& spec) {
  BideOptions opt;
  opt.code.type = BideValueType::uint;
  opt.code.bits = spec.bits;
  opt.support_lo = 0;
  opt.support_hi = spec.support;
  opt.precision = spec.precision;
  opt.variant = spec.variant;
  return opt;
}
}  // namespace

BideTokenHead::BideTokenHead(int64_t n_embd, const BideHeadSpec& spec, Generator& init) {
  BG_CHECK(spec.bits >= 1 && spec.bits <= 24 && spec.support >= 2 &&
               spec.support <= (int64_t(1) << spec.bits),
           "gpt", "a BIDE head of ", spec.bits, " bits cannot hold ", spec.support, " token ids");
  bide_ = register_module(
      "bide", std::make_shared<BideHead>(n_embd, spec.hidden, bide_options(spec), init));
}

BideOptions BideTokenHead::options() const {
  BideOptions opt = bide_->options();
  opt.batch_invariant = compute_mode().deterministic;
  return opt;
}

Tensor BideTokenHead::loss(const Tensor& h, const Tensor& targets,
                           const std::string& reduction) const {
  const BideHead::Distribution d = bide_->distribution(h);
  return bide_nll(d.w, d.r, targets, options(), reduction);
}

Tensor BideTokenHead::logits(const Tensor& h) const {
  const BideHead::Distribution d = bide_->distribution(h);
  const BideOptions opt = options();
  // log p over every pattern (-inf outside the support), then the ids [0, support).
  return bide_pattern_log_probs(d.w.detach(), d.r.detach(), opt).slice(1, 0, opt.support_hi);
}

Tensor BideTokenHead::outputs(const Tensor& h) const {
  const BideHead::Distribution d = bide_->distribution(h);
  return concat({d.w.reshape({d.w.size(0), -1}), d.r}, 1);
}

std::pair<Tensor, Tensor> BideTokenHead::log_normalizers(const Tensor& h) const {
  const BideHead::Distribution d = bide_->distribution(h);
  BideOptions all = options();
  all.support_lo = 0;
  all.support_hi = -1;
  return {bide_log_normalizer(d.w, d.r, options()), bide_log_normalizer(d.w, d.r, all)};
}

}  // namespace bg
