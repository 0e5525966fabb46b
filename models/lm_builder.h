// lm_builder.h: the one place a language model is made, from a run's settings or from a
// checkpoint, and so the one place that asks which kind of model it is. Everything else (the
// trainer's task, sampling, eval) sees a LanguageModel (models/language_model.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/optim.h"
#include "data/tokenizer.h"
#include "models/lm_checkpoint.h"
#include "models/model_spec.h"

namespace bg {

// The model a run trains, initialised from `init` and set to compute in `mode` on `device`. What
// depends on the data is resolved here, once: the vocabulary (the tokenizer's, or model.vocab_size
// padded at most to the next multiple of kMaxVocabPadding), a BIDE head's support (the tokenizer's
// targets), bits (the fewest that hold them, at most kMaxBideSpareBits more), its hybrid's
// softmax ids (fewer than the support) and its token code (ranked by `train_tokens`), and the
// attention (model.attention against the mode). Refusals name the config key.
std::unique_ptr<LanguageModel> build_language_model(const ModelSpec& spec, const Tokenizer& tok,
                                                    const std::vector<int32_t>& train_tokens,
                                                    const ComputeMode& mode, Device device,
                                                    Generator& init);
// model.vocab_size pads the tokenizer's ids to at most the next multiple of this.
inline constexpr int64_t kMaxVocabPadding = 1024;

// A trained model rebuilt from a `bitgrad train` checkpoint (or a GPT's packed export), ready
// for inference in the mode its training implies on `device` (core/compute_mode.h's
// inference_mode): sample and eval read any model through this.
struct LoadedModel : LoadedRun {
  std::unique_ptr<LanguageModel> model;
};
std::unique_ptr<LoadedModel> load_language_model(const std::string& path, Device device);

}  // namespace bg
