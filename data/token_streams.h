// token_streams.h: the token streams a language-model run reads (data/data_spec.h's text or
// shards): a text file split by a fraction (as nanoGPT's prepare scripts split, then encode
// each part) or llm.c token shards, and a checkpoint's validation stream read back the way its
// run read it (what `eval` scores).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/data_spec.h"
#include "data/tokenizer.h"

namespace bg {

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

}  // namespace bg
