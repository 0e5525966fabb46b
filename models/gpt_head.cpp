#include "gpt_head.h"

#include <algorithm>

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

std::vector<int64_t> frequency_code(const std::vector<int32_t>& tokens, int64_t support) {
  std::vector<int64_t> count(static_cast<size_t>(support), 0);
  for (int32_t t : tokens)
    if (t >= 0 && t < support) ++count[size_t(t)];
  std::vector<int64_t> order(static_cast<size_t>(support));
  for (int64_t i = 0; i < support; ++i) order[size_t(i)] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return count[size_t(a)] > count[size_t(b)]; });
  std::vector<int64_t> code(static_cast<size_t>(support));
  for (int64_t rank = 0; rank < support; ++rank) code[size_t(order[size_t(rank)])] = rank;
  return code;
}

BideTokenHead::BideTokenHead(int64_t n_embd, const BideHeadSpec& spec, Generator& init)
    : code_kind_(spec.code) {
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
  return bide_nll(d.w, d.r, patterns_of(targets), options(), reduction);
}

void BideTokenHead::set_code(const std::vector<int64_t>& code_of_id) {
  const int64_t support = bide_->options().support_hi;
  BG_CHECK(code_kind_ != BideTokenCode::id, "gpt", "head.bide.code id takes no code table");
  BG_CHECK(int64_t(code_of_id.size()) == support, "gpt", "a token code of ", code_of_id.size(),
           " ids for a head over ", support);
  std::vector<char> seen(size_t(support), 0);
  for (int64_t c : code_of_id) {
    BG_CHECK(c >= 0 && c < support && !seen[size_t(c)], "gpt",
             "the token code is not a permutation of [0, ", support, ")");
    seen[size_t(c)] = 1;
  }
  code_of_id_ = code_of_id;
  code_column_ = Tensor();
}

const Tensor& BideTokenHead::code_column(Device device) const {
  BG_CHECK(!code_of_id_.empty(), "gpt", "head.bide.code ", enum_name(code_kind_),
           " has no code table (set_code was not called)");
  if (!code_column_.defined() || code_column_.device() != device) {
    std::vector<float> col(code_of_id_.begin(), code_of_id_.end());  // exact: ids < 2^24
    code_column_ = from_vector(col, {int64_t(col.size()), 1}, device);
  }
  return code_column_;
}

Tensor BideTokenHead::patterns_of(const Tensor& ids) const {
  if (code_kind_ == BideTokenCode::id) return ids;
  return embedding(code_column(ids.device()), ids).reshape(ids.shape()).to(DType::i64);
}

Tensor BideTokenHead::logits(const Tensor& h) const {
  const BideHead::Distribution d = bide_->distribution(h);
  const BideOptions opt = options();
  // log p over every pattern (-inf outside the support), then the ids [0, support).
  const Tensor by_pattern =
      bide_pattern_log_probs(d.w.detach(), d.r.detach(), opt).slice(1, 0, opt.support_hi);
  if (code_kind_ == BideTokenCode::id) return by_pattern;
  // Column id of the result is column code_of_id[id] of by_pattern: gather rows of its transpose
  // (on by_pattern's device: the materialised log-probabilities live on the host).
  const Tensor codes = patterns_of(arange(opt.support_hi, DType::i64, by_pattern.device()));
  return embedding(by_pattern.transpose(0, 1).contiguous(), codes).transpose(0, 1).contiguous();
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
