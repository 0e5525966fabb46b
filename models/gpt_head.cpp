#include "gpt_head.h"

namespace bg {

Tensor GPTHead::loss(const Tensor& h, const Tensor& targets) const {
  return cross_entropy(logits(h), targets);
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

}  // namespace bg
