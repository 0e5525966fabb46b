// lm_run.h: a language model's training run (model.type char_mlp or gpt): the token streams read
// and split, the model built (models/lm_builder.h), the Trainer run over a LanguageModelTask
// (models/run.h's run_trainer), and a sample of the trained model printed at the end.
#pragma once
#include "models/run.h"

namespace bg {

// Trains a token model (model.type char_mlp or gpt) at `place`, which models/run.h's train_run
// has set up; as train_run returns.
int train_token_model(const TrainRun& run, const RunContext& context,
                      const RunPlace& place);

}  // namespace bg
