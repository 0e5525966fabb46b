// train_run.h: the one entry of a training run, for every model: the process's place (its rank and
// device in a data-parallel run, the resolved compute mode), the outputs checked before any
// work, the process group joined, a resume checked against the run its last.h5 records; then
// the model's own training, a language model's (models/lm_run.h) or a forecaster's
// (models/forecast/forecast_run.h), each through run_trainer.
#pragma once
#include "models/run.h"

namespace bg {

// Runs `run`; 0 when it finished (or stopped at run.stop_after_steps), 130 when a signal stopped
// it (last.h5 saved). Errors throw, naming the file, key or step.
int train_run(const TrainRun& run, const RunContext& context);

}  // namespace bg
