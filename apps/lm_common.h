// lm_common.h: what train, sample, eval and prepare share for language models: reading token
// data (text through a tokenizer, or llm.c shards) and rebuilding a GPT from a checkpoint.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/optim.h"
#include "data/tokenizer.h"
#include "models/gpt.h"

namespace bg::cli {

bool is_shard_path(const std::string& path);  // ends in ".bin"

// The tokens of a file: an llm.c shard as stored (ids checked against the vocabulary), or a
// text file encoded by `tok`.
std::vector<int32_t> read_tokens(const std::string& path, const Tokenizer& tok);

// A GPT checkpoint of `bitgrad train` made ready for inference on `device`.
struct LoadedGPT {
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<GPT> model;
  FlatParameters params;  // owns the parameters on the device
  ComputeMode mode;       // fp32, or a train.deterministic run's own mode
  int64_t step = 0;
  std::string val_data;  // the run's validation source (text file or shard)
  double val_fraction = 0;
};
std::unique_ptr<LoadedGPT> load_gpt_checkpoint(const std::string& path, Device device);

// `bitgrad train` checkpoints: bitgrad-train-2 keeps optimizer and tokenizer datasets in
// groups of their own (optimizer/, tokenizer/), so the root holds exactly the state_dict;
// bitgrad-train-1 (read too) kept them at the root as optimizer.* and tokenizer.*.
inline constexpr const char* kTrainFormat = "bitgrad-train-2";
bool is_train_checkpoint(const CheckpointReader& ck);

}  // namespace bg::cli

namespace bg::cli {

// Sampling settings: temperature 0 is greedy; top_k 0 keeps every token.
struct SampleSettings {
  int64_t new_tokens = 200;
  double temperature = 1.0;
  int64_t top_k = 0;
};
// One draw from softmax(logits / temperature) over the top_k largest logits (greedy at
// temperature 0), using one uniform number of `gen`.
int32_t sample_token(std::vector<float> logits, const SampleSettings& s, Generator& gen);
// Continues `ids` by s.new_tokens tokens drawn from the model (KV-cached; once the context
// passes block_size the window slides, as nanoGPT's crop does). Only ids below `vocab_limit`
// are drawn (a padded vocabulary's extra rows never are). on_token (optional) sees each token
// as it is drawn; returning false stops early.
std::vector<int32_t> generate(const GPT& model, std::vector<int32_t> ids, const SampleSettings& s,
                              int64_t vocab_limit, Generator& gen, Device device,
                              const std::function<bool(int32_t)>& on_token = {});

// The dense bf16 tensor-core peak (TFLOP/s) of a GPU by name; 0 when unknown.
double peak_bf16_tflops(const std::string& gpu_name);

}  // namespace bg::cli
