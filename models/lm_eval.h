// lm_eval.h: a language model scored on every target of a token stream (what `bitgrad eval`
// prints): the mean NLL, the bytes the targets decode to (for bits per byte across tokenizers)
// and, where the head can say, the mass it would put outside the vocabulary unrestricted.
#pragma once
#include <functional>
#include <vector>

#include "data/tokenizer.h"
#include "models/language_model.h"

namespace bg {

struct StreamScore {
  double nats = 0;          // summed over the targets
  int64_t targets = 0;      // targets scored
  int64_t bytes = 0;        // bytes the targets' tokens decode to
  double outside_mass = 0;  // summed over the targets (has_outside_mass)
  bool has_outside_mass = false;
};

// Windows: a model that predicts every position reads non-overlapping windows of context()
// tokens (each token but the first predicted once, from up to context() tokens), `batch` full
// windows at a time and the tail alone; a fixed-context model reads every window of exactly
// context() tokens, `batch` at a time. A model predicting P tokens jointly is scored on each
// position's next P tokens. on_target (optional) sees each target's position, id and nats, in
// order. The model must be in eval mode (train(false)).
StreamScore score_stream(const LanguageModel& model, const Tokenizer& tok,
                         const std::vector<int32_t>& tokens, int64_t batch, Device device,
                         const std::function<void(int64_t, int64_t, double)>& on_target = {});

}  // namespace bg
