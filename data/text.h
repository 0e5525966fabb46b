// text.h: text files, a character vocabulary, train/val token splits and random training
// windows drawn from the shared counter-based RNG (so a run's batches depend only on the seed).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"

namespace bg {

// Whole file as bytes; a missing or empty file is an error naming the path.
std::string read_text_file(const std::string& path);

class CharVocab {
 public:
  CharVocab() = default;
  explicit CharVocab(const std::string& text);  // the sorted set of bytes in text
  int64_t size() const { return int64_t(chars_.size()); }
  std::vector<int32_t> encode(const std::string& s) const;  // throws on a byte not in the vocab
  std::string decode(const std::vector<int32_t>& ids) const;
  const std::string& chars() const { return chars_; }

 private:
  std::string chars_;
  int16_t index_[256];
};

struct TokenSplit {
  std::vector<int32_t> train, val;
};
// The first (1 - val_fraction) of the tokens train, the rest validate (nanoGPT's split).
TokenSplit split_tokens(const std::vector<int32_t>& tokens, double val_fraction);

// `batch` windows of `context` tokens at positions drawn from `gen`: x (B, T) and the next
// tokens y (B, T), both i64 on `device`.
void sample_windows(const std::vector<int32_t>& tokens, int64_t batch, int64_t context,
                    Generator& gen, Device device, Tensor* x, Tensor* y);

}  // namespace bg
