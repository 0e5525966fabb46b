// lm_checkpoint.h: a language model rebuilt from a `bitgrad train` checkpoint (or, for a GPT, a
// packed export), ready for inference (sample, eval, export, check-determinism): its tokenizer,
// architecture, weights and the compute mode it runs in (core/compute_mode.h's inference_mode
// of the trained mode).
#pragma once
#include <memory>
#include <string>

#include "core/optim.h"
#include "data/tokenizer.h"
#include "models/char_mlp.h"
#include "models/gpt/gpt.h"
#include "models/run_record.h"

namespace bg {

// What any loaded model carries beside the model itself: its tokenizer, its parameters on the
// device, the mode inference runs in there, and the run's step and validation source.
struct LoadedRun {
  std::unique_ptr<Tokenizer> tokenizer;
  FlatParameters params;  // owns the parameters on the device
  ComputeMode mode;       // the mode inference runs in on this device
  int64_t step = 0;
  std::string val_data;  // the run's validation source (text file or shard); "" if unrecorded
  double val_fraction = 0.1;
};

struct LoadedGPT : LoadedRun {
  std::unique_ptr<GPT> model;
  ComputeMode trained;  // the mode the run trained in, as recorded
};
std::unique_ptr<LoadedGPT> load_gpt_checkpoint(const std::string& path, Device device);

// `bitgrad import`: a train-format checkpoint of `model` at step 0, with no optimizer state (the
// attribute imported_from names the source; resume refuses such a file), for sample, eval and
// export: the parameters, the run record and the trainer's step attributes.
void save_imported_checkpoint(const std::string& path, const GPT& model, const Tokenizer& tok,
                              const std::string& source, const std::string& config_yaml);

// The model_type attribute of a train checkpoint or packed export ("gpt", "char_mlp").
std::string checkpoint_model_type(const std::string& path);

struct LoadedCharMLP : LoadedRun {
  std::unique_ptr<CharMLP> model;
};
std::unique_ptr<LoadedCharMLP> load_char_mlp_checkpoint(const std::string& path, Device device);

}  // namespace bg
