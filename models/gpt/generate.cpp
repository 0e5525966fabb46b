#include "generate.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/rng.h"

namespace bg {

int32_t sample_token(std::vector<float> logits, const SampleSettings& s, Generator& gen) {
  const size_t v = logits.size();
  if (s.temperature == 0)
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  if (s.top_k > 0 && size_t(s.top_k) < v) {
    std::vector<float> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (s.top_k - 1), sorted.end(),
                     std::greater<float>());
    const float kth = sorted[size_t(s.top_k - 1)];  // keep logits >= the k-th largest
    for (float& l : logits)
      if (l < kth) l = -INFINITY;
  }
  const double top = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(v);
  for (size_t i = 0; i < v; ++i) p[i] = std::exp((double(logits[i]) - top) / s.temperature);
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  const double u = uniform53(gen) * total;
  double acc = 0;
  for (size_t i = 0; i < v; ++i)
    if (p[i] > 0 && (acc += p[i]) > u) return int32_t(i);
  for (size_t i = v; i-- > 0;)  // rounding left u past the sum: the last kept token
    if (p[i] > 0) return int32_t(i);
  return 0;
}

std::vector<int32_t> generate_cached(const GPT& model, std::vector<int32_t> ids,
                                     const SampleSettings& s, int64_t vocab_limit, Generator& gen,
                                     Device device,
                                     const std::function<bool(int32_t)>& on_token) {
  BG_CHECK(!ids.empty(), "sample", "the prompt encodes to no tokens");
  const int64_t block = model.config().block_size;
  NoGradGuard no_grad;
  KVCache cache = model.new_cache(1, device);
  auto run_window = [&]() {  // the last block_size tokens from position 0
    cache.length = 0;
    const int64_t n = std::min<int64_t>(block, int64_t(ids.size()));
    const std::vector<int64_t> window(ids.end() - n, ids.end());
    return model.forward_cached(from_vector(window, {1, n}, device), cache);
  };
  // A model predicting P tokens jointly draws one of vocab_limit^P targets, P tokens at a time.
  GPTConfig unpadded = model.config();
  unpadded.vocab_size = vocab_limit;
  const int64_t target_limit = target_vocabulary(unpadded);
  Tensor logits = run_window();
  for (int64_t made = 0; made < s.new_tokens;) {
    std::vector<float> row = logits.to_vector<float>();
    row.resize(size_t(target_limit));
    std::vector<int32_t> drawn;
    append_target_tokens(model.config(), sample_token(std::move(row), s, gen), drawn);
    drawn.resize(size_t(std::min<int64_t>(int64_t(drawn.size()), s.new_tokens - made)));
    for (int32_t next : drawn) {
      ids.push_back(next);
      if (on_token && !on_token(next)) return ids;
    }
    made += int64_t(drawn.size());
    if (made == s.new_tokens) break;
    const int64_t n = int64_t(drawn.size());
    if (cache.length + n <= block)
      logits = model.forward_cached(
          from_vector(std::vector<int64_t>(drawn.begin(), drawn.end()), {1, n}, device), cache);
    else
      logits = run_window();  // positions shift once the window slides: recompute
  }
  return ids;
}

std::vector<int32_t> generate_windowed(const std::function<Tensor(const Tensor&)>& next_logits,
                                       int64_t context, std::vector<int32_t> ids,
                                       const SampleSettings& s, Generator& gen, Device device,
                                       const std::function<bool(int32_t)>& on_token) {
  BG_CHECK(int64_t(ids.size()) >= context, "sample", "the prompt is ", ids.size(),
           " tokens; this model reads exactly ", context);
  NoGradGuard no_grad;
  for (int64_t i = 0; i < s.new_tokens; ++i) {
    const std::vector<int64_t> window(ids.end() - context, ids.end());
    const Tensor logits = next_logits(from_vector(window, {1, context}, device));
    const int32_t next = sample_token(logits.to_vector<float>(), s, gen);
    ids.push_back(next);
    if (on_token && !on_token(next)) break;
  }
  return ids;
}

// The GPT's sampler: the KV-cached decoder above (gpt.cpp would otherwise include this file,
// which includes gpt.h).
std::vector<int32_t> GPT::generate(std::vector<int32_t> ids, const SampleSettings& s,
                                   int64_t vocab_limit, Generator& gen, Device device,
                                   const std::function<bool(int32_t)>& on_token) const {
  return generate_cached(*this, std::move(ids), s, vocab_limit, gen, device, on_token);
}

}  // namespace bg
