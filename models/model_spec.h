// model_spec.h: what a run's config asks for as its model, for every model type (model.type and
// the chosen model's list: char_mlp, gpt or forecaster), before the data is known. Language
// models are built from it by models/lm_builder.h, a forecaster by models/forecast/forecast_run.h.
#pragma once
#include <string>

#include "core/settings.h"
#include "models/char_mlp.h"
#include "models/forecast/forecaster.h"
#include "models/gpt/gpt.h"

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

}  // namespace bg
