// gpt_head.h: the GPT's output head, the one seam between the trunk (embeddings, blocks, ln_f)
// and everything that reads a next-token distribution: the training loss, eval, sampling and
// check-determinism all go through a head, never around it. A new head (a BIDE head over the
// token's bits, say) is one new kind here and one class, with no change to its consumers.
#pragma once
#include <memory>

#include "core/bitlinear.h"
#include "core/settings.h"
#include "layers/layers.h"

namespace bg {

// The head's kinds. softmax: logits = h wte^T (tied to the token embedding), softmax over the
// vocabulary. bitlinear: the same tied head as a BitLinear product (bitlinear.lm_head: true).
// bide: the next token's id as a B-bit pattern, its distribution a BIDE over the patterns of the
// valid ids, normalised exactly by SICK (model.head: bide).
#define BG_HEAD_KINDS(X) X(softmax, "softmax") X(bitlinear, "bitlinear") X(bide, "bide")
BG_NAMED_ENUM(HeadKind, BG_HEAD_KINDS)

// head.bide.code: which bit pattern stands for which token id. id: the id itself; frequency: the
// ids ranked by their count in the training data (the most frequent token is pattern 0, ties in
// id order), so frequent tokens share their high bits; frequent_first (for the hybrid head): the
// softmax_ids most frequent ids first, ranked so, then every other id in id order, so that ids
// the training data never shows are not one block of patterns the BIDE learns to rule out.
#define BG_BIDE_TOKEN_CODES(X) \
  X(id, "id") X(frequency, "frequency") X(frequent_first, "frequent_first")
BG_NAMED_ENUM(BideTokenCode, BG_BIDE_TOKEN_CODES)

// The BIDE head's settings (head.bide.*): B bits per token id (enough for the vocabulary), H
// hidden units, the SICK kernel's precision and variant. The support is the ids [0, support):
// the normaliser, gradients, sampling and evaluation sum over those patterns only.
struct BideHeadSpec {
  int bits = 0;         // 0: the fewest that hold the vocabulary
  int64_t hidden = 32;  // the SICK paper's H
  int64_t support = 0;  // valid ids [0, support); 0: the model's vocab_size
  SickPrecision precision = SickPrecision::fp32;
  SickVariant variant = SickVariant::automatic;
  BideTokenCode code = BideTokenCode::id;
  // head.bide.softmax_ids: K > 0 makes a hybrid head. Patterns [0, K) (with the frequency code,
  // the K most frequent ids) get a softmax logit each, from their own row of a K x n_embd
  // matrix; the BIDE covers the rest, [K, support). One normaliser sums both exactly.
  int64_t softmax_ids = 0;
  // head.bide.tie_softmax: the hybrid's softmax rows are the token embedding's rows of those
  // ids (as the tied softmax head's are), not a K x n_embd matrix of their own.
  bool tie_softmax = false;
};
// Its declared fields, head.bide.* (core/settings.h).
const Settings<BideHeadSpec>& bide_head_settings();
// The frequency code of `tokens` over ids [0, support): code_of_id[id] = the id's rank by count
// (descending, ties by id).
std::vector<int64_t> frequency_code(const std::vector<int32_t>& tokens, int64_t support);
// The code of `kind` (not id) for a head over ids [0, spec.support) trained on `tokens`.
std::vector<int64_t> token_code(const BideHeadSpec& spec, const std::vector<int32_t>& tokens);
// head.bide.hidden's bound: what the CUDA SICK kernels hold (the CPU's pass has no such bound,
// but a checkpoint must run on either).
inline constexpr int64_t kMaxBideHidden = kMaxSickHidden;
// The fewest bits whose patterns hold ids [0, vocab).
int bits_for_vocabulary(int64_t vocab);
// head.bide.bits may exceed the fewest by this many: the normaliser over every 2^B pattern (the
// unrestricted mass eval reports) and the CUDA pass's tiles grow with 2^B, not with the ids, so
// a head of many more bits than ids would cost what no id needs (2^24 patterns for 65 ids).
inline constexpr int kMaxBideSpareBits = 2;

// A softmax head's loss over `rows` positions and `columns` logits goes through
// linear_cross_entropy in chunks of this many rows: equal chunks whose logits hold at most 2^28
// values (512 MiB in bf16), all rows in one chunk (the plain composition) when they fit. GPT-2's
// 16,384 x 50,304 logits go in 4 chunks; the Baby GPT's in one.
int64_t softmax_loss_chunk_rows(int64_t rows, int64_t columns);

class GPTHead : public Module {
 public:
  virtual HeadKind kind() const = 0;
  // h (N, n_embd), ln_f's output rows -> (N, vocab_size) logits: scores whose softmax over the
  // vocabulary is the model's next-token distribution (what eval, sampling and
  // check-determinism read).
  virtual Tensor logits(const Tensor& h) const = 0;
  // The negative log-likelihood of targets (N) given h (N, n_embd), mean (the training loss),
  // "sum" or "none".
  virtual Tensor loss(const Tensor& h, const Tensor& targets,
                      const std::string& reduction = "mean") const;
  // The head's raw output for h (N, n_embd), differentiable: what fixes the distribution bit for
  // bit (the logits; a BIDE head's W and r side by side). check-determinism compares these.
  virtual Tensor outputs(const Tensor& h) const { return logits(h); }
};

// The tied head: the token embedding's rows are the output features, multiplied in the mode of
// the lm_head site (dense), or as a BitLinear product of them, or by their packed 2-bit form
// after `bitgrad export --packed`. It owns no parameters: wte's are the trunk's.
class TiedSoftmaxHead : public GPTHead {
 public:
  TiedSoftmaxHead(std::shared_ptr<Embedding> wte, HeadKind kind, const BitLinearOptions& bitlinear);
  HeadKind kind() const override { return kind_; }
  Tensor logits(const Tensor& h) const override;
  // The dense head's mean or sum goes through linear_cross_entropy: in row chunks, without the
  // (N, vocab) logits or their gradient, when they would pass softmax_loss_chunk_rows's budget.
  Tensor loss(const Tensor& h, const Tensor& targets,
              const std::string& reduction = "mean") const override;
  // The BitLinear head's packed form (models/gpt/gpt_packed.h); wte stays for the embedding.
  void use_packed(PackedTernary packed);

 private:
  std::shared_ptr<Embedding> wte_;
  HeadKind kind_;
  BitLinearOptions bitlinear_;
  PackedTernary packed_;
};

// The BIDE head (the SICK BIDE paper, sections 2.2 and 3.1.2): h -> W (H x B) and r (H) by two
// bias-free projections (layers/bide_head.h), l_k = r . relu(W b_k) for the pattern b_k in
// {-1, +1}^B of id k, p(k) = softmax over the ids [0, support) of l. The loss is SICK's fused
// NLL; logits materialises one position's normalised log-probabilities over the support (for
// sampling and top-k); outputs are W and r. Under train.deterministic the SICK pass runs one
// slice per example, so an example's numbers never depend on the batch.
// The hybrid (softmax_ids K > 0, after Oda et al. 2017's binary codes with a softmax for the
// frequent words): patterns [0, K) take l_k = h . u_k from a K x n_embd matrix
// (lm_head.softmax.weight; or, tied, the token embedding's rows of those ids), the others the
// BIDE's logit; log Z = logaddexp(logsumexp_k<K l_k, the SICK log-normaliser over
// [K, support)), still exact.
class BideTokenHead : public GPTHead {
 public:
  // `wte`: the token embedding a tied hybrid (spec.tie_softmax) takes its softmax rows from.
  BideTokenHead(int64_t n_embd, const BideHeadSpec& spec, Generator& init,
                std::shared_ptr<Embedding> wte = nullptr);
  HeadKind kind() const override { return HeadKind::bide; }
  Tensor logits(const Tensor& h) const override;
  Tensor loss(const Tensor& h, const Tensor& targets,
              const std::string& reduction = "mean") const override;
  Tensor outputs(const Tensor& h) const override;
  // log Z over the support, and over every 2^B pattern: how much mass the same head would put
  // on patterns outside the vocabulary were it not restricted (eval reports it).
  std::pair<Tensor, Tensor> log_normalizers(const Tensor& h) const;
  const BideHead& bide() const { return *bide_; }
  // head.bide.code other than id: the pattern of each id [0, support), a permutation. Saved with
  // the checkpoint as lm_head.bide.code_of_id (not a parameter: training never changes it).
  void set_code(const std::vector<int64_t>& code_of_id);
  const std::vector<int64_t>& code_of_id() const { return code_of_id_; }

 private:
  BideOptions options() const;  // with this run's batch invariance
  // Token ids -> patterns (identity without a code).
  Tensor patterns_of(const Tensor& ids) const;
  // The code as a (support, 1) f32 column on `device` (gathered by embedding).
  const Tensor& code_column(Device device) const;
  bool hybrid() const;  // softmax_ids > 0
  // The hybrid's softmax rows (K, n_embd) of patterns [0, K), on h's device, and its logits
  // (N, K): h times them in the lm_head site's mode.
  Tensor softmax_weight(const Tensor& h) const;
  Tensor softmax_logits(const Tensor& h) const;
  std::shared_ptr<BideHead> bide_;
  std::shared_ptr<Linear> softmax_;  // hybrid, untied
  std::shared_ptr<Embedding> wte_;        // hybrid, tied
  int64_t softmax_ids_ = 0;
  mutable Tensor softmax_rows_;  // tied: the ids of patterns [0, K), i64 on their device
  BideTokenCode code_kind_;
  std::vector<int64_t> code_of_id_;
  mutable Tensor code_column_;
};

}  // namespace bg
