// lm_task.h: next-token prediction on windows of a token stream, for any LanguageModel, as
// a TrainTask of the Trainer (models/trainer.h): a micro-batch's loss, the validation loss, and
// what a checkpoint says about the model, its compute mode, the tokenizer and the data streams'
// positions (and, on resume, the check that the checkpoint is this run's).
#pragma once
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "models/language_model.h"
#include "models/run_record.h"
#include "models/trainer.h"

namespace bg {

struct LanguageModelTaskConfig {
  int64_t batch = 0, eval_iters = 0;
  uint64_t seed = 0;  // run.seed: the data, dropout and evaluation streams derive from it
  DataSpec data;             // the run's data.*: its recorded fields go into checkpoints
  std::string config_yaml;  // the effective config, saved as the config attribute
  // run.resume_mode_change: resume even when the checkpoint's compute mode differs from the
  // config's (the run then holds two arithmetics; said once at resume).
  bool allow_mode_change = false;
  // train.cuda_graph: before_step draws the step's windows into fixed device buffers, which
  // train_loss reads (a replayed graph reads the same memory every step).
  bool step_buffers = false;
};

class LanguageModelTask : public TrainTask {
 public:
  LanguageModelTask(const LanguageModelTaskConfig& cfg, Tokenizer& tok, LanguageModel& model,
                    Device device);
  std::vector<int32_t> train_tokens, val_tokens;
  std::string val_source;

  Tensor train_loss() override;
  void before_step(int64_t step) override;
  void before_replay(bool captured) override;
  double validation_loss() override;
  void save(CheckpointWriter& ck) const override;
  void load(const CheckpointReader& ck, const std::string& path) override;
  void seek_micro_batch(int64_t index) override;
  std::vector<uint64_t> stream_positions() const override { return streams_.positions(); }
  void set_stream_positions(const std::vector<uint64_t>& p) override {
    streams_.set_positions(p);
  }

 private:
  Tensor batch_loss(const std::vector<int32_t>& tokens, Generator& gen);
  RunRecord record() const;  // what save writes and load checks
  LanguageModelTaskConfig cfg_;
  Tokenizer& tok_;
  LanguageModel& model_;
  Device device_;
  MicroBatchStreams streams_;
  Tensor step_x_, step_y_;  // the step's windows under step_buffers
  // Under step_buffers, the dropout stream's counters: the device shift its kernels add (the
  // dropout generator's device_shift), where the current step's and the captured step's draws
  // start, and how many counters a step takes.
  Tensor dropout_shift_;
  uint64_t step_start_ = 0, captured_start_ = 0, counters_per_step_ = 0;
};

}  // namespace bg
