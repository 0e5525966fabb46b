#include "gpt_head.h"

#include <algorithm>

namespace bg {

Tensor GPTHead::loss(const Tensor& h, const Tensor& targets, const std::string& reduction) const {
  return cross_entropy(logits(h), targets, -100, reduction);
}

const Settings<BideHeadSpec>& bide_head_settings() {
  static const Settings<BideHeadSpec> s = [] {
    Settings<BideHeadSpec> s;
    s.integer("head.bide.bits", [](auto& b) -> auto& { return b.bits; }, 0, 24,
              "bits per token id (at least enough for the vocabulary)", kArchitecture)
        .default_is("the fewest that hold the vocabulary");
    s.integer("head.bide.hidden", [](auto& b) -> auto& { return b.hidden; }, 1, kMaxBideHidden,
              "H, the BIDE head's hidden units", kArchitecture);
    s.integer("head.bide.support", [](auto& b) -> auto& { return b.support; }, 0, 1 << 24,
              "the ids [0, support) the head normalises over (the targets' count)",
              kArchitecture | kDerived);
    s.choice("head.bide.sick.dtype", [](auto& b) -> auto& { return b.precision; },
             "W and r inside the CUDA SICK kernel: fp32 or fp16", kArchitecture);
    s.choice("head.bide.sick.variant", [](auto& b) -> auto& { return b.variant; },
             "how SICK walks the patterns: auto, bruteforce or precomputed (H <= 64)",
             kArchitecture);
    // Files before the code, the hybrid and its tie had the id code and no softmax ids.
    s.choice("head.bide.code", [](auto& b) -> auto& { return b.code; },
             "which pattern stands for which id: id, frequency (ids ranked by their count in "
             "the training data), or frequent_first (the hybrid's softmax_ids most frequent ids, "
             "then the rest in id order)",
             kArchitecture | kOptional);
    s.integer("head.bide.softmax_ids", [](auto& b) -> auto& { return b.softmax_ids; }, 0,
              1 << 24,
              "K > 0: a hybrid head, the K most frequent ids with softmax logits of their own "
              "(K x n_embd), the BIDE over the rest, one exact normaliser; needs code frequency "
              "or frequent_first",
              kArchitecture | kOptional);
    s.boolean("head.bide.tie_softmax", [](auto& b) -> auto& { return b.tie_softmax; },
              "the hybrid's softmax rows are the token embedding's rows of those ids (needs "
              "model.input embedding)",
              kArchitecture | kOptional);
    return s;
  }();
  return s;
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
  // Under bf16 precision the logits are stored in bf16 for the loss (stored_dtype).
  return linear(h, wte_->weight, Tensor(), mode, Consumer::loss);
}

int64_t softmax_loss_chunk_rows(int64_t rows, int64_t columns) {
  constexpr int64_t kChunkValues = int64_t(1) << 28;
  const int64_t values = rows * std::max<int64_t>(columns, 1);
  const int64_t chunks = std::max<int64_t>(1, (values + kChunkValues - 1) / kChunkValues);
  return std::max<int64_t>(1, (rows + chunks - 1) / chunks);
}

Tensor TiedSoftmaxHead::loss(const Tensor& h, const Tensor& targets,
                             const std::string& reduction) const {
  // Per-row losses (eval's "none") read the logits anyway; the BitLinear heads have no chunked
  // product.
  if (reduction == "none" || kind_ != HeadKind::softmax) return GPTHead::loss(h, targets, reduction);
  const int64_t rows = h.size(0), vocab = wte_->weight.size(0);
  return linear_cross_entropy(h, wte_->weight, targets, compute_mode().at(MatmulSite::lm_head),
                              softmax_loss_chunk_rows(rows, vocab), -100, reduction);
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
  opt.support_lo = spec.softmax_ids;  // the hybrid's softmax takes [0, softmax_ids)
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

std::vector<int64_t> token_code(const BideHeadSpec& spec, const std::vector<int32_t>& tokens) {
  BG_CHECK(spec.code != BideTokenCode::id, "gpt", "head.bide.code id takes no code table");
  std::vector<int64_t> code = frequency_code(tokens, spec.support);
  if (spec.code == BideTokenCode::frequent_first) {  // ranks >= K: renumbered in id order
    int64_t next = spec.softmax_ids;
    for (int64_t& c : code)
      if (c >= spec.softmax_ids) c = next++;
  }
  return code;
}

BideTokenHead::BideTokenHead(int64_t n_embd, const BideHeadSpec& spec, Generator& init,
                             std::shared_ptr<Embedding> wte)
    : code_kind_(spec.code) {
  BG_CHECK(spec.bits >= 1 && spec.bits <= 24 && spec.support >= 2 &&
               spec.support <= (int64_t(1) << spec.bits),
           "gpt", "a BIDE head of ", spec.bits, " bits cannot hold ", spec.support, " token ids");
  BG_CHECK(spec.bits <= bits_for_vocabulary(spec.support) + kMaxBideSpareBits, "gpt",
           "a BIDE head of ", spec.bits, " bits for ", spec.support, " token ids: its 2^",
           spec.bits, " patterns cost what no id needs (at most ",
           bits_for_vocabulary(spec.support) + kMaxBideSpareBits, " bits)");
  BG_CHECK(spec.softmax_ids >= 0 && spec.softmax_ids < spec.support, "gpt",
           "head.bide.softmax_ids ", spec.softmax_ids, " leaves the BIDE no ids of the ",
           spec.support, " (expected 0 to ", spec.support - 1, ")");
  bide_ = register_module(
      "bide", std::make_shared<BideHead>(n_embd, spec.hidden, bide_options(spec), init));
  softmax_ids_ = spec.softmax_ids;
  if (spec.tie_softmax) {
    BG_CHECK(softmax_ids_ > 0 && wte && wte->weight.size(1) == n_embd, "gpt",
             "head.bide.tie_softmax needs head.bide.softmax_ids > 0 and a token embedding of "
             "width n_embd");
    wte_ = std::move(wte);
  } else if (softmax_ids_ > 0) {  // the tied softmax head's scale: N(0, 0.02) rows
    softmax_ = register_module("softmax",
                               std::make_shared<Linear>(n_embd, softmax_ids_, false, init, 0.02));
    softmax_->set_site(MatmulSite::lm_head);
  }
}

bool BideTokenHead::hybrid() const { return softmax_ids_ > 0; }

Tensor BideTokenHead::softmax_logits(const Tensor& h) const {
  // Stored as the loss stores them (bf16 under bf16 precision, as the tied head's): training,
  // eval and sampling read the same logits.
  return linear(h, softmax_weight(h), Tensor(), compute_mode().at(MatmulSite::lm_head),
                Consumer::loss);
}

Tensor BideTokenHead::softmax_weight(const Tensor& h) const {
  if (softmax_) return softmax_->weight;
  // Tied: the embedding rows of the ids whose patterns are [0, K), gathered each call (their
  // gradient flows back into wte, as the tied softmax head's does).
  if (!softmax_rows_.defined() || softmax_rows_.device() != h.device()) {
    std::vector<int64_t> ids(size_t(softmax_ids_), -1);
    if (code_kind_ == BideTokenCode::id) {
      for (int64_t p = 0; p < softmax_ids_; ++p) ids[size_t(p)] = p;
    } else {
      BG_CHECK(!code_of_id_.empty(), "gpt", "head.bide.code ", enum_name(code_kind_),
               " has no code table (set_code was not called)");
      for (size_t id = 0; id < code_of_id_.size(); ++id)
        if (code_of_id_[id] < softmax_ids_) ids[size_t(code_of_id_[id])] = int64_t(id);
    }
    softmax_rows_ = from_vector(ids, {softmax_ids_}, h.device());
  }
  return embedding(wte_->weight, softmax_rows_);
}

BideOptions BideTokenHead::options() const {
  BideOptions opt = bide_->options();
  opt.batch_invariant = compute_mode().deterministic;
  return opt;
}

Tensor BideTokenHead::loss(const Tensor& h, const Tensor& targets,
                           const std::string& reduction) const {
  const BideHead::Distribution d = bide_->distribution(h);
  const BideOptions opt = options();
  if (!hybrid()) return bide_nll(d.w, d.r, patterns_of(targets), opt, reduction);
  // The hybrid: -log p(y) = log Z - l_y, log Z = logsumexp(softmax logits, log Z_bide). As one
  // cross-entropy over [softmax logits, log Z_bide] with the target min(y, K) (the BIDE's
  // column for y >= K), plus log Z_bide - l_y for y >= K. One SICK pass; a y < K still takes
  // the BIDE's logit of pattern K, zero-weighted, so every row runs the same ops. The mean and
  // sum take the cross-entropy in row chunks (linear_cross_entropy, log Z_bide its extra
  // column), as the tied softmax head does.
  BG_CHECK(reduction == "mean" || reduction == "sum" || reduction == "none", "gpt",
           "reduction must be mean, sum or none, got '", reduction, "'");
  const int64_t n = h.size(0);
  const Tensor logz = bide_log_normalizer(d.w, d.r, opt);
  const DType dt = logz.dtype();
  const Tensor y = patterns_of(targets).to(dt);  // exact: patterns < 2^24
  const Tensor k = full({}, double(softmax_ids_), dt, y.device());
  const Tensor in_bide = gt(y, add_scalar(k, -0.5)).to(dt);
  const Tensor l_y = bide_logit(d.w, d.r, maximum(y, k).to(DType::i64), opt).to(dt);
  const Tensor column = minimum(y, k).to(DType::i64), bide_part = in_bide * (logz - l_y);
  if (reduction == "none") {
    const Tensor joint = concat({softmax_logits(h).to(dt), logz.reshape({n, 1})}, 1);
    return cross_entropy(joint, column, -100, "none") + bide_part;
  }
  const Tensor total =
      linear_cross_entropy(h, softmax_weight(h), column, compute_mode().at(MatmulSite::lm_head),
                           softmax_loss_chunk_rows(n, softmax_ids_ + 1), -100, "sum", logz) +
      sum(bide_part);
  return reduction == "sum" ? total : total / double(n);
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
  if (code_kind_ == BideTokenCode::frequent_first) {  // after the K frequent ids: id order
    int64_t next = softmax_ids_;
    for (int64_t c : code_of_id)
      BG_CHECK(c < softmax_ids_ || c == next++, "gpt",
               "the token code is not frequent_first's (the ids past the ", softmax_ids_,
               " frequent ones take patterns in id order)");
  }
  code_of_id_ = code_of_id;
  code_column_ = Tensor();
  softmax_rows_ = Tensor();
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
  Tensor by_pattern = bide_pattern_log_probs(d.w.detach(), d.r.detach(), opt, 0, opt.support_hi);
  if (hybrid()) {  // the hybrid: [softmax logits, the BIDE's logits over [K, support)], normalised
    NoGradGuard no_grad;
    const Device host = by_pattern.device();
    const Tensor logz = bide_log_normalizer(d.w, d.r, opt).to(host, DType::f64);
    const Tensor bide_logits =
        by_pattern.slice(1, softmax_ids_, opt.support_hi) + logz.reshape({h.size(0), 1});
    by_pattern = log_softmax(concat({softmax_logits(h).to(host, DType::f64), bide_logits}, 1));
  }
  if (code_kind_ == BideTokenCode::id) return by_pattern;
  // Column id of the result is column code_of_id[id] of by_pattern: gather rows of its transpose
  // (on by_pattern's device: the materialised log-probabilities live on the host).
  const Tensor codes = patterns_of(arange(opt.support_hi, DType::i64, by_pattern.device()));
  return embedding(by_pattern.transpose(0, 1).contiguous(), codes).transpose(0, 1).contiguous();
}

Tensor BideTokenHead::outputs(const Tensor& h) const {
  const BideHead::Distribution d = bide_->distribution(h);
  std::vector<Tensor> parts = {d.w.reshape({d.w.size(0), -1}), d.r};
  if (hybrid()) parts.push_back(softmax_logits(h).to(d.r.dtype()));
  return concat(parts, 1);
}

std::pair<Tensor, Tensor> BideTokenHead::log_normalizers(const Tensor& h) const {
  const BideHead::Distribution d = bide_->distribution(h);
  NoGradGuard no_grad;
  BideOptions all = options();
  all.support_hi = -1;  // the BIDE's patterns up to 2^B (the hybrid's softmax keeps [0, K))
  Tensor vocab = bide_log_normalizer(d.w, d.r, options()),
         every = bide_log_normalizer(d.w, d.r, all);
  if (hybrid()) {  // logaddexp with the softmax part's log-sum-exp
    const Tensor s = softmax_logits(h).to(vocab.dtype());
    const Tensor lse_s = (s.slice(1, 0, 1) - log_softmax(s).slice(1, 0, 1)).reshape({h.size(0)});
    auto logaddexp = [&](const Tensor& a) {
      return lse_s -
             log_softmax(concat({lse_s.reshape({h.size(0), 1}), a.reshape({h.size(0), 1})}, 1))
                 .slice(1, 0, 1)
                 .reshape({h.size(0)});
    };
    vocab = logaddexp(vocab);
    every = logaddexp(every);
  }
  return {vocab, every};
}

}  // namespace bg
