#include "lm_eval.h"

#include "core/error.h"

namespace bg {
namespace {

// Target id of tokens[at + 1 .. at + P] (P = tokens_per_target), as windows and training make it.
int64_t target_at(const LanguageModel& model, const std::vector<int32_t>& tokens, int64_t at) {
  int64_t id = 0;
  for (int64_t j = 0; j < model.tokens_per_target(); ++j)
    id = id * model.vocab_size() + tokens[size_t(at + 1 + j)];
  return id;
}

}  // namespace

StreamScore score_stream(const LanguageModel& model, const Tokenizer& tok,
                         const std::vector<int32_t>& tokens, int64_t batch, Device device,
                         const std::function<void(int64_t, int64_t, double)>& on_target) {
  const int64_t ahead = model.tokens_per_target(), block = model.context();
  const bool every = model.predicts_every_position();
  // Positions with a whole target: tokens[w] predicts tokens[w + 1 .. w + ahead].
  const int64_t n = int64_t(tokens.size()) - (ahead - 1);
  BG_CHECK(n >= (every ? 2 : block + 1), "eval", "needs at least ",
           (every ? 1 : block) + ahead, " tokens, has ", tokens.size());
  // Bits per byte: the loss over the bytes the predicted tokens decode to, so runs of any
  // tokenizer compare (char and byte tokens are one byte each; GPT-2's are several).
  std::vector<int64_t> token_bytes(size_t(tok.vocab_size()));
  for (int32_t id = 0; id < int32_t(token_bytes.size()); ++id)
    token_bytes[size_t(id)] = int64_t(tok.decode({id}).size());
  NoGradGuard no_grad;
  StreamScore out;
  // Every-position windows [w, w + len] predict w+1..w+len: full ones in batches, the tail
  // alone. Fixed windows [w, w + block) predict w + block: `batch` of them at a time.
  for (int64_t w = 0; every ? w < n - 1 : w + block < n;) {
    const int64_t len = every ? std::min(block, n - 1 - w) : block;
    const int64_t rows = every ? (len == block ? std::min(batch, (n - 1 - w) / block) : 1)
                               : std::min(batch, n - block - w);
    const int64_t stride = every ? len : 1;  // window r starts at w + r * stride
    std::vector<int64_t> x(size_t(rows * len)), y(size_t(rows * len));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t t = 0; t < len; ++t) {
        const int64_t at = w + r * stride + t;
        x[size_t(r * len + t)] = tokens[size_t(at)];
        y[size_t(r * len + t)] = target_at(model, tokens, at);
        if (every || t == len - 1)
          for (int64_t j = 0; j < ahead; ++j)
            out.bytes += token_bytes[size_t(tokens[size_t(at + 1 + j)])];
      }
    const TargetScores s =
        model.score(from_vector(x, {rows, len}, device), from_vector(y, {rows, len}, device));
    out.nats += sum(s.nll).item();
    if (on_target) {
      const std::vector<double> v = s.nll.to(Device::cpu(), DType::f64).to_vector<double>();
      for (size_t i = 0; i < v.size(); ++i) {
        const int64_t pos = every ? w + int64_t(i) : w + int64_t(i) + block - 1;
        on_target(pos, every ? y[i] : y[i * size_t(len) + size_t(len - 1)], v[i]);
      }
    }
    if (s.outside_mass.defined()) {
      out.outside_mass += sum(s.outside_mass).item();
      out.has_outside_mass = true;
    }
    const int64_t scored = every ? rows * len : rows;
    out.targets += scored;
    w += every ? rows * len : rows;
  }
  return out;
}

}  // namespace bg
