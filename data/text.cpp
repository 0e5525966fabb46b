#include "text.h"

#include <fstream>
#include <sstream>

#include "kernels/philox.h"

namespace bg {

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  BG_CHECK(f.good(), "data", path, ": cannot open file");
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  BG_CHECK(!text.empty(), "data", path, ": file is empty");
  return text;
}

CharVocab::CharVocab(const std::string& text) {
  bool seen[256] = {};
  for (unsigned char c : text) seen[c] = true;
  for (int c = 0; c < 256; ++c) index_[c] = -1;
  for (int c = 0; c < 256; ++c)
    if (seen[c]) {
      index_[c] = int16_t(chars_.size());
      chars_.push_back(char(c));
    }
}

std::vector<int32_t> CharVocab::encode(const std::string& s) const {
  std::vector<int32_t> ids;
  ids.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const int16_t id = index_[static_cast<unsigned char>(s[i])];
    BG_CHECK(id >= 0, "vocab", "character ", int(static_cast<unsigned char>(s[i])), " at position ",
             i, " is not in the vocabulary");
    ids.push_back(id);
  }
  return ids;
}

std::string CharVocab::decode(const std::vector<int32_t>& ids) const {
  std::string s;
  for (int32_t id : ids) {
    BG_CHECK(id >= 0 && id < size(), "vocab", "token id ", id, " out of range [0, ", size(), ")");
    s.push_back(chars_[size_t(id)]);
  }
  return s;
}

TokenSplit split_tokens(const std::vector<int32_t>& tokens, double val_fraction) {
  BG_CHECK(val_fraction >= 0 && val_fraction < 1, "data", "val_fraction must be in [0, 1), got ",
           val_fraction);
  const size_t n_train = size_t(double(tokens.size()) * (1.0 - val_fraction));
  TokenSplit s;
  s.train.assign(tokens.begin(), tokens.begin() + ptrdiff_t(n_train));
  s.val.assign(tokens.begin() + ptrdiff_t(n_train), tokens.end());
  return s;
}

void sample_windows(const std::vector<int32_t>& tokens, int64_t batch, int64_t context,
                    Generator& gen, Device device, Tensor* x, Tensor* y) {
  const int64_t n = int64_t(tokens.size());
  BG_CHECK(n > context, "data", "need more than ", context, " tokens for a window, have ", n);
  const uint64_t first = gen.take(uint64_t(batch));
  std::vector<int64_t> xs(size_t(batch * context)), ys(size_t(batch * context));
  for (int64_t b = 0; b < batch; ++b) {
    const Philox4 r = philox4x32(first + uint64_t(b), gen.seed ^ 0xDA7AULL);
    const uint64_t u = (uint64_t(r.v[0]) << 32) | r.v[1];
    const int64_t start = int64_t(u % uint64_t(n - context));
    for (int64_t t = 0; t < context; ++t) {
      xs[size_t(b * context + t)] = tokens[size_t(start + t)];
      ys[size_t(b * context + t)] = tokens[size_t(start + t + 1)];
    }
  }
  *x = from_vector(xs, {batch, context}, device);
  *y = from_vector(ys, {batch, context}, device);
}

}  // namespace bg
