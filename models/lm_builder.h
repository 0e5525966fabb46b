// lm_builder.h: the one place a language model is made, from a run's settings or from a
// checkpoint, and so the one place that asks which kind of model it is. Everything else (the
// trainer's task, sampling, eval) sees a LanguageModel (models/language_model.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/optim.h"
#include "data/tokenizer.h"
#include "models/char_mlp.h"
#include "models/forecast/forecaster.h"
#include "models/gpt/gpt.h"
#include "models/lm_checkpoint.h"

namespace bg {

// model.type: the kinds of model a run trains. A forecaster reads series (data.format: series;
// models/forecast/forecast_run.h), the others text.
#define BG_MODEL_TYPES(X) X(char_mlp, "char_mlp") X(gpt, "gpt") X(forecaster, "forecaster")
BG_NAMED_ENUM(ModelType, BG_MODEL_TYPES)

// What a run's config asks for, before the data is known.
struct ModelSpec {
  ModelType type = ModelType::char_mlp;
  GPTConfig gpt;      // type gpt
  CharMLPConfig mlp;  // type char_mlp
  ForecasterConfig forecaster;  // type forecaster
  AttentionChoice attention = AttentionChoice::automatic;  // model.attention (gpt)
  // model.init_from (gpt): pretrained GPT-2 weights the model starts from (gpt_weights.h's
  // load_pretrained_gpt2), "" for a fresh initialisation.
  std::string init_from;
  // model.freeze_trunk_steps (with init_from): the first N steps train the head's own
  // parameters only (a BIDE or hybrid head on the pretrained trunk).
  int64_t freeze_trunk_steps = 0;
};

// Its declared fields (core/settings.h): model.type, then the chosen model's list (the other's
// keys refused as not used).
const Settings<ModelSpec>& model_spec_settings();

// The tokens a window of the model holds (GPT: block_size; char MLP: its context).
int64_t model_context(const ModelSpec& spec);

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
