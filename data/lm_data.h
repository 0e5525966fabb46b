// lm_data.h: the token streams a language-model run reads: a text file split by a fraction (as
// nanoGPT's prepare scripts split, then encode each part) or llm.c token shards, and a
// checkpoint's validation stream read back the way its run read it (what `eval` scores).
#pragma once
#include <memory>
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

struct TokenStreams {
  std::unique_ptr<Tokenizer> tokenizer;  // a char vocabulary is the text's own
  std::vector<int32_t> train, val;
  std::string train_source, val_source;  // the files they came from
};

// Reads and encodes a run's data. A missing path under datasets/ (where the shipped configs
// read) names scripts/get_data.sh; streams shorter than `context` + 1 tokens are refused.
TokenStreams load_token_streams(const DataSpec& spec, int64_t context);

// The validation tokens of `source` as its run read them: a shard whole, a text file's part
// after the split at `val_fraction` (described in *what, e.g. "x.txt (last 0.10)").
std::vector<int32_t> validation_tokens(const std::string& source, double val_fraction,
                                       const Tokenizer& tok, std::string* what);

// Refuses a missing path under datasets/ in one line naming `what` (a key or flag) and
// scripts/get_data.sh, which fetches the data the shipped configs read.
void check_data_path(const std::string& path, const std::string& what);

}  // namespace bg
