// language_model.h: what every language model is to the trainer, the sampler, `eval` and the
// checkpoint: windows of token ids in, the next target's distribution out. GPT and CharMLP
// implement it; nothing outside the builder (models/lm_builder.h) asks which model it is. The
// forecaster (models/forecast/forecaster.h) does not: its windows are real values and its targets laws
// over a value's patterns; it shares the trunk (models/transformer.h), the run entry
// (models/run.h), the Trainer and the run record's checks instead.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "layers/layers.h"

namespace bg {

class CheckpointWriter;
class CheckpointReader;

// Sampling settings: temperature 0 is greedy; top_k 0 keeps every token. The defaults are
// `bitgrad sample`'s (nanoGPT's sample.py).
struct SampleSettings {
  int64_t new_tokens = 500;
  double temperature = 0.8;
  int64_t top_k = 200;
};

// A batch of windows scored for evaluation: the NLL (nats) of each target, (rows * targets a
// window) in position order; and, where the head can say, the probability mass it would put
// outside the vocabulary were it not restricted (same shape; undefined otherwise).
struct TargetScores {
  Tensor nll, outside_mass;
};

// check-determinism's view of a batch (LanguageModel::probe): the head's raw outputs of each
// target, rows in window order (what fixes the distribution bit for bit: logits, or a BIDE
// head's W and r), and d(the targets' summed NLL)/d(the windows' input embeddings), first
// dimension the window.
struct DeterminismProbe {
  Tensor outputs, dx;
};

class LanguageModel : public Module {
 public:
  // The checkpoint's model_type ("gpt", "char_mlp").
  virtual const char* type() const = 0;
  // Tokens a window holds: the longest context (GPT: block_size) or the fixed one (char MLP).
  virtual int64_t context() const = 0;
  // true: a window (B, T) predicts a target at each of its T positions (a GPT); false: only at
  // its last position, from exactly context() tokens (the char MLP).
  virtual bool predicts_every_position() const = 0;
  // Tokens a target spans (byte pairs: 2): position t's target is tokens t+1 .. t+P as one id,
  // sum_j token[t + 1 + j] vocab_size^(P - 1 - j).
  virtual int64_t tokens_per_target() const { return 1; }
  // The ids of the input table (at least the tokenizer's; more when padded).
  virtual int64_t vocab_size() const = 0;
  // The training loss: the mean NLL of targets y (B, T) given windows x (B, T) of token ids.
  // A model that predicts only the last position reads y's last column.
  virtual Tensor loss(const Tensor& x, const Tensor& y, Generator& gen) const = 0;
  // The same targets scored one by one, without dropout (call train(false) first).
  virtual TargetScores score(const Tensor& x, const Tensor& y) const = 0;
  // Continues `ids` by s.new_tokens tokens (only ids below `vocab_limit`: a padded vocabulary's
  // extra rows are never drawn); on_token (optional) sees each as it is drawn, false stops.
  virtual std::vector<int32_t> generate(std::vector<int32_t> ids, const SampleSettings& s,
                                        int64_t vocab_limit, Generator& gen, Device device,
                                        const std::function<bool(int32_t)>& on_token = {}) const = 0;
  // The architecture as checkpoint attributes (and what else rebuilds the model: a BIDE head's
  // token code); and, for resume, what differs from a checkpoint's ("" when nothing).
  virtual void save_description(CheckpointWriter& ck) const = 0;
  virtual std::string architecture_difference(const CheckpointReader& ck,
                                              const std::string& path) const = 0;
  // The batch invariance probe: windows x (B, T) with targets y (B, T), without dropout (call
  // train(false) first). A window's rows must not change with the batch around it.
  virtual DeterminismProbe probe(const Tensor& x, const Tensor& y) const = 0;
  // The head outputs of window x (1, T) as the sampler computes them (a GPT: one token at a time
  // through the KV cache), rows as probe's; undefined where sampling runs the training forward
  // itself (nothing to compare).
  virtual Tensor sampler_outputs(const Tensor& /*x*/) const { return Tensor(); }
  // Training FLOPs per token (the progress line's MFU); 0 where not estimated.
  virtual double flops_per_token() const { return 0; }
  // What else the checkpoint holds that the model computes with (a BIDE head's token code):
  // resume and loading restore it after the parameters.
  virtual void load_extras(const CheckpointReader& /*ck*/, const std::string& /*path*/) {}
};

}  // namespace bg
