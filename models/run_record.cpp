#include "run_record.h"

#include <cstdio>
#include <set>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/settings.h"
#include "models/trainer.h"

namespace bg {

bool is_train_checkpoint(const CheckpointReader& ck) {
  if (!ck.has_attr("format")) return false;
  const std::string f = ck.str_attr("format");
  return f == kTrainFormat || f == "bitgrad-train-1";
}

void save_run_record(CheckpointWriter& ck, const RunRecord& record,
                     const std::function<void(CheckpointWriter&)>& describe) {
  ck.attr("format", std::string(kTrainFormat));
  ck.attr("model_type", record.model_type);
  ck.attr("config", record.config_yaml);
  // How the forward ran: resume compares it, and sample, eval and export reproduce it.
  save_compute_mode(ck, record.mode);
  describe(ck);
  ck.attr("val_data", record.val_source);
  data_settings().save(ck, record.data, kRecorded);
  ck.attr("data_rng_offset", int64_t(record.data_offset));
  ck.attr("dropout_rng_offset", int64_t(record.dropout_offset));
}

void check_resume_run(const CheckpointReader& ck, const std::string& path, const RunRecord& config,
                      bool allow_mode_change, MicroBatchStreams& streams) {
  BG_CHECK(is_train_checkpoint(ck), "train", path, " is not a bitgrad train checkpoint");
  BG_CHECK(ck.str_attr("model_type") == config.model_type, "train", path, " holds a ",
           ck.str_attr("model_type"), " model, the config asks for a ", config.model_type);
  const DataSpec recorded = data_settings().load(ck, path, kRecorded, config.data);
  const std::string split = data_settings().difference(recorded, config.data, kKeptOnResume);
  BG_CHECK(split.empty(), "train", path,
           " split its data otherwise (checkpoint vs config: ", split, ")");
  bool has_mode = false;
  const ComputeMode saved = load_compute_mode(ck, path, &has_mode);
  const std::string diff = has_mode ? compute_mode_difference(saved, config.mode) : std::string();
  BG_CHECK(diff.empty() || allow_mode_change, "train", path,
           " was trained in another compute mode than the config's (checkpoint vs config: ", diff,
           "); set run.resume_mode_change: true to continue it in the new mode");
  if (!diff.empty())
    std::printf("note: resuming in another compute mode (checkpoint vs config: %s)\n",
                diff.c_str());
  streams.data.offset = uint64_t(ck.int_attr("data_rng_offset"));
  streams.dropout.offset = uint64_t(ck.int_attr("dropout_rng_offset"));
}

LoadedRecord read_run_record(const CheckpointReader& ck, const std::string& path, DataSpec data) {
  LoadedRecord r;
  r.step = ck.int_attr("step");
  r.val_source = ck.has_attr("val_data") ? ck.str_attr("val_data") : "";
  r.data = data_settings().load(ck, path, kRecorded, std::move(data));
  return r;
}

void check_root_datasets(const CheckpointReader& ck, const std::string& path,
                         const std::vector<std::pair<std::string, Tensor>>& named,
                         const char* alias) {
  std::set<std::string> params;
  for (const auto& [name, t] : named) params.insert(name);
  if (alias) params.insert(alias);
  for (const std::string& name : ck.datasets())  // bitgrad-train-1 kept optimizer.* at the root
    BG_CHECK(name.find('/') != std::string::npos || params.count(name) ||
                 name.rfind("optimizer.", 0) == 0,
             "checkpoint", path,
             ": dataset '", name, "' is not a parameter of the model its attributes describe; "
             "the attributes do not match the file");
}

}  // namespace bg
