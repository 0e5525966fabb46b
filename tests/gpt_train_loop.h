// gpt_train_loop.h: the small GPT training loop the GPT tests share: AdamW steps on windows of
// a token list, the data and dropout generators fixed (seeds 6 and 7), so two calls with the same
// model give the same bits and a CPU call and a CUDA call the same numbers.
#pragma once
#include <string>
#include <vector>

#include "core/optim.h"
#include "data/text.h"
#include "models/gpt/gpt.h"

namespace bg::test {

struct GptRun {
  std::vector<double> losses;        // every step's
  std::vector<float> params, grads;  // after the last step (grads: the last step's)
};

// `steps` AdamW steps (lr 3e-3, betas 0.9/0.99, weight decay 0.1, gradients clipped at 1) of
// `model` in `mode` on `device`, each on 8 windows of 12 tokens of `tokens` (targets: the next
// model.config().predict_tokens tokens).
inline GptRun train_gpt_steps(GPT& model, const std::vector<int32_t>& tokens, Device device,
                              int steps, const ComputeMode& mode = ComputeMode()) {
  Generator data(6), drop(7);
  model.set_compute_mode(mode.on(device));
  FlatParameters params(model.named_parameters(), device);
  AdamW opt(params, {0.9, 0.99, 1e-8, 0.1});
  GptRun r;
  for (int s = 0; s < steps; ++s) {
    params.zero_grad();
    Tensor x, y;
    sample_windows(tokens, 8, 12, data, device, &x, &y, model.config().predict_tokens,
                   model.config().vocab_size);
    Tensor loss = model.loss(x, y, drop);
    loss.backward();
    r.grads = params.grads().to_vector<float>();
    opt.step(3e-3, clip_grad_norm(params, 1.0).scale);
    r.losses.push_back(loss.item());
  }
  r.params = params.values().to_vector<float>();
  return r;
}

// A 2-layer, 16-wide GPT over `vocab` ids with block 12 and a BIDE head of 8 hidden units.
inline GPTConfig small_bide_gpt(int64_t vocab, double dropout) {
  GPTConfig c;
  c.vocab_size = vocab;
  c.block_size = 12;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.dropout = dropout;
  c.fused_attention = false;
  c.head = HeadKind::bide;
  c.bide.hidden = 8;
  return c;
}

// "the cat sat. " and "a dog ran. " 200 times: a text small GPTs learn in 100 steps.
inline std::string cat_dog_text() {
  std::string text;
  for (int i = 0; i < 200; ++i) text += i % 3 ? "the cat sat. " : "a dog ran. ";
  return text;
}

// The mean of v[from, to).
inline double mean_of(const std::vector<double>& v, size_t from, size_t to) {
  double s = 0;
  for (size_t i = from; i < to; ++i) s += v[i];
  return s / double(to - from);
}

}  // namespace bg::test
