// generate.h: sampling from a language model: one token from a next-token distribution, and
// KV-cached continuation of a GPT (what `bitgrad sample` and the end of `bitgrad train` run).
#pragma once
#include <functional>
#include <vector>

#include "models/gpt/gpt.h"

namespace bg {

// One draw from softmax(logits / temperature) over the top_k largest logits (greedy at
// temperature 0), using one uniform number of `gen`.
int32_t sample_token(std::vector<float> logits, const SampleSettings& s, Generator& gen);
// Continues `ids` by s.new_tokens tokens drawn from the model's head (KV-cached; once the context
// passes block_size the window slides, as nanoGPT's crop does). Only ids below `vocab_limit`
// are drawn (a padded vocabulary's extra rows never are); a model predicting several tokens
// jointly (byte pairs) draws them together. on_token (optional) sees each token
// as it is drawn; returning false stops early.
// (GPT::generate is this.)
std::vector<int32_t> generate_cached(const GPT& model, std::vector<int32_t> ids,
                                     const SampleSettings& s, int64_t vocab_limit, Generator& gen,
                                     Device device,
                                     const std::function<bool(int32_t)>& on_token = {});
// The same for a fixed-context model (the char MLP's generate): next_logits maps the last
// `context` ids (1, context) to (1, V) logits.
std::vector<int32_t> generate_windowed(const std::function<Tensor(const Tensor&)>& next_logits,
                                       int64_t context, std::vector<int32_t> ids,
                                       const SampleSettings& s, Generator& gen, Device device,
                                       const std::function<bool(int32_t)>& on_token = {});

}  // namespace bg
