// data_spec.h: what a run reads, data.*, for every model: a text file split by a fraction or
// llm.c token shards (language models: data/token_streams.h reads them), or a series file
// (forecasters: data/series.h); the files a run reads, and the one refusal of a missing
// shipped-data path.
#pragma once
#include <string>
#include <vector>

#include "core/settings.h"
#include "data/tokenizer.h"

namespace bg {

// data.format: text (a text file or token shards, for language models) or series (real-valued
// series in a CSV or a plain file, for a forecaster: data/series.h).
#define BG_DATA_FORMATS(X) X(text, "text") X(series, "series")
BG_NAMED_ENUM(DataFormat, BG_DATA_FORMATS)

// data.*: a text file (path, split at val_fraction of its characters) or train/val shards; or
// a series file (path) whose last `horizon` points test and the `horizon` before validate.
struct DataSpec {
  DataFormat format = DataFormat::text;
  int64_t horizon = 24;  // series: forecast steps (the test and validation windows)
  int64_t season = 1;    // series: seasonal-naive period (the baseline and MASE's scale)
  std::string path;  // text (empty with shards)
  double val_fraction = 0.1;
  TokenizerKind tokenizer = TokenizerKind::characters;
  std::string gpt2_dir = "datasets/gpt2";  // gpt2: encoder.json and vocab.bpe
  std::string train_bin, val_bin;  // shards (empty with text)
};

// Its declared fields, data.* (core/settings.h).
const Settings<DataSpec>& data_settings();
// The rules between them: token shards need a fixed vocabulary.
SettingProblem data_spec_problem(const DataSpec& spec);

// The files a run of `spec` reads: the text or shards, the tokenizer's files.
std::vector<std::string> data_inputs(const DataSpec& spec);

// Refuses a missing path under datasets/ in one line naming `what` (a key or flag) and
// scripts/get_data.sh, which fetches the data the shipped configs read.
void check_data_path(const std::string& path, const std::string& what);

}  // namespace bg
