// lm_task.h: what `bitgrad train` trains: next-token prediction on windows of a token stream,
// for the GPT or the char MLP, as a TrainTask of the library's Trainer (models/trainer.h): a
// micro-batch's loss, the validation loss, and what a checkpoint says about the model, the
// tokenizer and the data streams' positions.
#pragma once
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "models/trainer.h"
#include "train.h"

namespace bg::cli {

class LanguageModelTask : public TrainTask {
 public:
  LanguageModelTask(const TrainConfig& cfg, const ConfigReader& reader, Tokenizer& tok,
                    Module& model, GPT* gpt, CharMLP* mlp, Device device);
  std::vector<int32_t> train_tokens, val_tokens;
  std::string val_source;

  Tensor train_loss() override;
  double validation_loss() override;
  void save(CheckpointWriter& ck) const override;
  void load(const CheckpointReader& ck, const std::string& path) override;

 private:
  Tensor batch_loss(const std::vector<int32_t>& tokens, Generator& gen);
  const TrainConfig& cfg_;
  const ConfigReader& reader_;
  Tokenizer& tok_;
  Module& model_;
  GPT* gpt_;
  CharMLP* mlp_;
  Device device_;
  Generator data_gen_, dropout_gen_;
};

}  // namespace bg::cli
