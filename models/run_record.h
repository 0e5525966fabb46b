// run_record.h: what a `bitgrad train` checkpoint says beside the weights, for every model (a
// GPT, a char MLP, a forecaster), written and checked in one place: the format and model type,
// the effective config, the compute mode, the model's own description, the validation source,
// the data's recorded settings (data.val_fraction; data.horizon and data.season) and the data
// and dropout streams' positions. The Trainer's tasks write it; resume checks it against the
// config; the loaders read it back.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/compute_mode.h"
#include "data/data_spec.h"

namespace bg {

class CheckpointReader;
class CheckpointWriter;
class MicroBatchStreams;

// `bitgrad train` checkpoints: bitgrad-train-2 keeps optimizer and tokenizer datasets in
// groups of their own (optimizer/, tokenizer/), so the root holds exactly the state_dict;
// bitgrad-train-1 (read too) kept them at the root as optimizer.* and tokenizer.*.
inline constexpr const char* kTrainFormat = "bitgrad-train-2";
bool is_train_checkpoint(const CheckpointReader& ck);

struct RunRecord {
  std::string model_type;   // "gpt", "char_mlp", "forecaster"
  std::string config_yaml;  // the effective config (the config attribute)
  DataSpec data;            // its kRecorded fields are written (data/data_spec.h)
  std::string val_source;   // the validation data's file ("" when none)
  ComputeMode mode;         // the mode the forward ran in (resolved on its device)
  uint64_t data_offset = 0, dropout_offset = 0;
};
// `describe` writes the model's own attributes (its architecture, a tokenizer, a BIDE code).
void save_run_record(CheckpointWriter& ck, const RunRecord& record,
                     const std::function<void(CheckpointWriter&)>& describe);

// A resume of `config` (its model type, data and mode) from `ck`: refused when the file is not
// a train checkpoint of that model type, when the data would split otherwise (the
// kKeptOnResume fields: data.horizon, data.val_fraction), or when it ran another compute mode,
// unless `allow_mode_change` (run.resume_mode_change) says to continue in the new one, which is
// then said in a note. Sets `streams` to the recorded positions.
void check_resume_run(const CheckpointReader& ck, const std::string& path, const RunRecord& config,
                      bool allow_mode_change, MicroBatchStreams& streams);

// What the loaders read back: the step, the validation source and the data's recorded fields
// (into `data`, which says the format: a forecaster's series).
struct LoadedRecord {
  int64_t step = 0;
  std::string val_source;
  DataSpec data;
};
LoadedRecord read_run_record(const CheckpointReader& ck, const std::string& path, DataSpec data);

// A train checkpoint's root datasets are exactly the model's parameters (`named`, and
// `alias`, a second name one of them is stored under: a tied GPT head's lm_head.weight): a dataset the model its attributes describe has
// no place for (a hybrid's softmax rows under tie_softmax: true, say) means an attribute was
// changed, and the file would load as another model. bitgrad-train-1 kept optimizer.* at the
// root. Every model's loader applies it.
void check_root_datasets(const CheckpointReader& ck, const std::string& path,
                         const std::vector<std::pair<std::string, Tensor>>& named,
                         const char* alias = nullptr);

}  // namespace bg
