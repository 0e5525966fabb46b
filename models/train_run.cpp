#include "train_run.h"

#include <cstdio>
#include <filesystem>
#include <map>

#include "core/checkpoint.h"
#include "core/config.h"
#include "core/files.h"
#include "core/sha256.h"
#include "models/forecast/forecast_run.h"
#include "models/lm_run.h"

namespace bg {
namespace {

// This process's place in a data-parallel run (bitgrad launch, torchrun, mpirun): on CUDA, a
// rank trains on the GPU its LOCAL_RANK names; rank 0 alone prints and writes.
Device rank_device(const DistEnv& dist, Device device) {
  if (dist.world == 1 || !device.is_cuda()) return device;
  BG_CHECK(dist.local_rank < cuda_device_count(), "train", "LOCAL_RANK=", dist.local_rank,
           " but this host has ", cuda_device_count(), " CUDA device(s)");
  select_cuda_device(dist.local_rank);
  return Device::cuda(dist.local_rank);
}

// Before any work: an unwritable output folder, an output that is an input (a config or data
// file inside run.out_dir), or a resume with nothing to resume would otherwise surface late.
void check_outputs(const TrainRun& run, const RunContext& context) {
  const std::string& out = run.trainer.out_dir;
  check_output_dir(out, "train");
  std::vector<std::string> inputs = data_inputs(run.data);
  inputs.push_back(context.config_path);
  for (const char* name : kRunOutputs)
    check_output_file(out + "/" + name, "train", "run.out_dir's", inputs);
  BG_CHECK(!run.trainer.resume || std::filesystem::exists(out + "/last.h5"), "train",
           "run.resume is true but there is no checkpoint to resume: ", out,
           "/last.h5 does not exist (set run.resume: false to start from scratch)");
}

void print_group(const DistEnv& dist, const ProcessGroup& group, const TrainerConfig& tc) {
  if (dist.world == 1 && tc.shard_optimizer)
    std::printf(
        "train.shard_optimizer: one process keeps the whole optimizer state (it shards over the "
        "ranks of a data-parallel run)\n");
  if (dist.world > 1)
    std::printf(
        "data parallel: %d ranks over %s; train.grad_accum = %lld micro-batches per step, %lld on "
        "each rank%s\n",
        dist.world, group.transport().c_str(), (long long)tc.grad_accum,
        (long long)(tc.grad_accum / dist.world),
        tc.shard_optimizer ? "; AdamW's state sharded over the ranks" : "");
}

// A resume against the run its last.h5 records (the checkpoint's "config" attribute): a
// pretrained start is the run's origin, not an input of the resume (last.h5 holds every weight;
// the source file may have moved), so another model.init_from is refused rather than recorded
// as if the run had started from it; and a changed schedule (train.steps re-spreads a cosine
// schedule: the rate jumps back up mid-run) is said, as a compute-mode change is.
void check_resume_record(const TrainRun& run, const RunContext& context) {
  const std::string path = run.trainer.out_dir + "/last.h5";
  const CheckpointReader ck(path);
  // Import's checkpoints and unreadable records are refused by the trainer, by name.
  if (ck.has_attr(kImportedFromAttr) || !ck.has_attr("config")) return;
  std::map<std::string, std::string> was;
  for (auto& [key, value] : flat_settings(ck.str_attr("config"))) was[key] = value;
  std::vector<std::pair<std::string, std::string>> now = flat_settings(context.effective_yaml);
  const auto value_in = [](const auto& settings, const std::string& key) -> std::string {
    for (const auto& [k, v] : settings)
      if (k == key) return v;
    return "";
  };
  const auto path_in = [](std::string v) { return v == "\"\"" ? std::string() : v; };  // YAML's ""
  const std::string origin = path_in(was.count("model.init_from") ? was.at("model.init_from") : "");
  const std::string given = path_in(value_in(now, "model.init_from"));
  BG_CHECK(given.empty() || given == origin, "train", "model.init_from: ", given,
           ": the run in ", path, " started from ",
           origin.empty() ? std::string("its own drawn weights") : origin,
           "; a resume continues from last.h5 and reads no other start (keep the setting as "
           "the run had it, or start a new run)");
  std::string changed;
  for (const auto& [key, value] : now) {
    const bool schedule = key == "train.steps" || key == "train.batch_size" ||
                          key == "train.grad_accum" || key.rfind("optimizer.", 0) == 0 ||
                          key.rfind("schedule.", 0) == 0;
    const auto it = was.find(key);
    if (!schedule || (it != was.end() && it->second == value)) continue;
    changed += (changed.empty() ? "" : ", ") + key + " " +
               (it == was.end() ? std::string("(default)") : it->second) + " -> " + value;
  }
  if (!changed.empty())
    std::printf("note: resuming with other optimizer or schedule settings than %s's run (%s): "
                "the learning rate follows the config's schedule from step %lld on\n",
                path.c_str(), changed.c_str(), (long long)ck.int_attr("step"));
}

}  // namespace

int train_run(const TrainRun& run, const RunContext& context) {
  const DistEnv dist = read_dist_env();
  const Device device = rank_device(dist, parse_device(run.device));
  const bool lead = dist.rank == 0;
  if (!lead) (void)std::freopen("/dev/null", "w", stdout);
  const ComputeMode mode = run.mode.on(device);
  if (lead) check_outputs(run, context);
  std::printf("# effective config (%s)\n%s", context.config_path.c_str(),
              context.effective_yaml.c_str());
  // Every rank joins before the data and the model are built: a config that differs between
  // ranks is refused here, naming the rank.
  const std::unique_ptr<ProcessGroup> group = make_process_group(
      dist, device, sha256_hex(context.effective_yaml.data(), context.effective_yaml.size()));
  print_group(dist, *group, run.trainer);
  const RunPlace place{dist, *group, device, mode};
  // A replayed step reads its inputs from fixed buffers and shifts its dropout counters on the
  // device: what the GPT's task and its kernels do. A forecaster's step cannot be replayed: the
  // targets a batch holds vary (a window that starts before its series ignores the positions
  // before it and its scale window), and its loss gathers exactly those rows.
  BG_CHECK(!run.trainer.cuda_graph || run.model.type != ModelType::forecaster, "train",
           "train.cuda_graph replays a step of fixed shapes, but a forecaster's batches hold a "
           "varying number of targets; set train.cuda_graph: false");
  BG_CHECK(!run.trainer.cuda_graph || run.model.type == ModelType::gpt, "train",
           "train.cuda_graph captures a GPT's step only (model.type is ",
           enum_name(run.model.type), "); set train.cuda_graph: false");
  if (run.trainer.resume && lead) check_resume_record(run, context);
  if (run.model.type == ModelType::forecaster) return train_forecaster(run, context, place);
  return train_token_model(run, context, place);
}


}  // namespace bg
