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

namespace bg {

class CheckpointReader;
class CheckpointWriter;

// `bitgrad train` checkpoints: bitgrad-train-2 keeps optimizer and tokenizer datasets in
// groups of their own (optimizer/, tokenizer/), so the root holds exactly the state_dict;
// bitgrad-train-1 (read too) kept them at the root as optimizer.* and tokenizer.*.
inline constexpr const char* kTrainFormat = "bitgrad-train-2";
bool is_train_checkpoint(const CheckpointReader& ck);


// A train checkpoint's root datasets are exactly the model's parameters (`named`, and with
// `tied_alias` the tied head's lm_head.weight): a dataset the model its attributes describe has
// no place for (a hybrid's softmax rows under tie_softmax: true, say) means an attribute was
// changed, and the file would load as another model. bitgrad-train-1 kept optimizer.* at the
// root. Every model's loader applies it.
void check_root_datasets(const CheckpointReader& ck, const std::string& path,
                         const std::vector<std::pair<std::string, Tensor>>& named,
                         bool tied_alias);
// A resume's compute mode against the checkpoint's: another one is refused naming the first key
// that differs, unless run.resume_mode_change (`allow_change`) says to continue in it, which is
// then said in a note. Every model's resume applies it.
void check_resume_mode(const CheckpointReader& ck, const std::string& path,
                       const ComputeMode& config_mode, bool allow_change);

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

// What a train checkpoint says beside the weights about the model and its run, for sample, eval,
// export and resume: the format, model type, effective config, tokenizer, compute mode, the
// model's description, the validation source and the data and dropout streams' positions.
// LanguageModelTask::save and `bitgrad import` write it; read_run_record and the loaders read it.
struct RunRecord {
  std::string config_yaml, val_source;
  double val_fraction = 0.1;
  uint64_t data_offset = 0, dropout_offset = 0;
};
void save_run_record(CheckpointWriter& ck, const LanguageModel& model, const Tokenizer& tok,
                     const RunRecord& record);

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
