// tokenizer.h: text <-> token ids for the language models. Four kinds:
//   char  the sorted set of bytes of the training text (nanoGPT's shakespeare_char);
//   byte  the 256 byte values (id = byte);
//   byte_pair  the same bytes in, but the model predicts the next two bytes jointly (one of
//         65,536 pair ids, first byte high: a BIDE head over 16 bits);
//   gpt2  GPT-2's byte-level BPE (encoder.json + vocab.bpe), ids identical to OpenAI's
//         encoder.py including its regex pre-tokenisation (gpt2_bpe.cpp).
// A tokenizer travels in every checkpoint (save/load below), so sampling and evaluation decode
// with exactly the vocabulary the model was trained on.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/enum_names.h"

namespace bg {

// data.tokenizer, prepare --tokenizer and the checkpoint's `tokenizer` attribute: the kinds above.
#define BG_TOKENIZER_KINDS(X) \
  X(characters, "char") X(byte, "byte") X(byte_pair, "byte_pair") X(gpt2, "gpt2")
BG_NAMED_ENUM(TokenizerKind, BG_TOKENIZER_KINDS)

class CheckpointWriter;
class CheckpointReader;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string kind() const = 0;
  virtual int64_t vocab_size() const = 0;
  // Throws (naming the position) on text the vocabulary cannot express.
  virtual std::vector<int32_t> encode(const std::string& text) const = 0;
  // Throws on an id outside [0, vocab_size()).
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  // Tokens each training target spans (byte_pair: 2; the GPT's predict_tokens).
  virtual int64_t tokens_per_target() const { return 1; }
  // Writes the vocabulary as checkpoint attributes/datasets under "tokenizer.*".
  virtual void save(CheckpointWriter& ck) const = 0;
};

// char: `text` is the training text; byte, byte_pair: no argument; gpt2: `gpt2_dir` is the
// folder holding encoder.json and vocab.bpe.
std::unique_ptr<Tokenizer> make_tokenizer(TokenizerKind kind, const std::string& text,
                                          const std::string& gpt2_dir);
std::unique_ptr<Tokenizer> load_tokenizer(const CheckpointReader& ck);

class CharTokenizer : public Tokenizer {
 public:
  explicit CharTokenizer(const std::string& text);  // the sorted set of bytes in text
  std::string kind() const override { return "char"; }
  int64_t vocab_size() const override { return int64_t(chars_.size()); }
  std::vector<int32_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  void save(CheckpointWriter& ck) const override;
  const std::string& chars() const { return chars_; }

 private:
  std::string chars_;
  int16_t index_[256];
};

class ByteTokenizer : public Tokenizer {
 public:
  explicit ByteTokenizer(bool pairs = false) : pairs_(pairs) {}
  std::string kind() const override { return pairs_ ? "byte_pair" : "byte"; }
  int64_t vocab_size() const override { return 256; }
  int64_t tokens_per_target() const override { return pairs_ ? 2 : 1; }
  std::vector<int32_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  void save(CheckpointWriter& ck) const override;

 private:
  bool pairs_;
};

// Splits text at `val_fraction` of its code points from the end (nanoGPT's prepare scripts
// split the string, then encode each part): returns the byte offset of the split.
size_t split_point(const std::string& text, double val_fraction);

}  // namespace bg
