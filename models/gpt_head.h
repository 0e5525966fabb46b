// gpt_head.h: the GPT's output head, the one seam between the trunk (embeddings, blocks, ln_f)
// and everything that reads a next-token distribution: the training loss, eval, sampling and
// check-determinism all go through a head, never around it. A new head (a BIDE head over the
// token's bits, say) is one new kind here and one class, with no change to its consumers.
#pragma once
#include <memory>

#include "core/bitlinear.h"
#include "layers/layers.h"

namespace bg {

// model.head's kinds. softmax: logits = h wte^T (tied to the token embedding), softmax over the
// vocabulary. bitlinear: the same tied head as a BitLinear product (bitlinear.lm_head: true).
#define BG_HEAD_KINDS(X) X(softmax, "softmax") X(bitlinear, "bitlinear")
BG_NAMED_ENUM(HeadKind, BG_HEAD_KINDS)

class GPTHead : public Module {
 public:
  virtual HeadKind kind() const = 0;
  // h (N, n_embd), ln_f's output rows -> (N, vocab_size) logits: scores whose softmax over the
  // vocabulary is the model's next-token distribution (what eval, sampling and
  // check-determinism read).
  virtual Tensor logits(const Tensor& h) const = 0;
  // The mean negative log-likelihood of targets (N) given h (N, n_embd): the training loss.
  virtual Tensor loss(const Tensor& h, const Tensor& targets) const;
};

// The tied head: the token embedding's rows are the output features, multiplied in the mode of
// the lm_head site (dense), or as a BitLinear product of them, or by their packed 2-bit form
// after `bitgrad export --packed`. It owns no parameters: wte's are the trunk's.
class TiedSoftmaxHead : public GPTHead {
 public:
  TiedSoftmaxHead(std::shared_ptr<Embedding> wte, HeadKind kind, const BitLinearOptions& bitlinear);
  HeadKind kind() const override { return kind_; }
  Tensor logits(const Tensor& h) const override;
  // The BitLinear head's packed form (models/gpt_packed.h); wte stays for the embedding.
  void use_packed(PackedTernary packed);

 private:
  std::shared_ptr<Embedding> wte_;
  HeadKind kind_;
  BitLinearOptions bitlinear_;
  PackedTernary packed_;
};

}  // namespace bg
