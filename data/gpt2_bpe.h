// gpt2_bpe.h: GPT-2's byte-level BPE tokenizer, reproducing OpenAI's encoder.py id for id:
// the regex pre-tokenisation ('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|
// \s+(?!\S)|\s+, with the `regex` module's Unicode classes), then per piece the lowest-rank
// merge first until none applies. Works on raw bytes: encoder.py's bytes_to_unicode alphabet is
// a bijection, so merging byte strings is merging its symbols.
#pragma once
#include <mutex>
#include <unordered_map>

#include "tokenizer.h"

namespace bg {

// The vocabulary (merges: false) or merges file of a GPT-2 tokenizer folder: OpenAI's name where
// that exists, else Hugging Face's (vocab.json, merges.txt).
std::string gpt2_vocab_file(const std::string& dir, bool merges);
// Whether `dir` holds both files under either naming.
bool has_gpt2_vocab(const std::string& dir);

class Gpt2Tokenizer : public Tokenizer {
 public:
  // encoder_json: encoder.json's text ({"token": id, ...}); vocab_bpe: vocab.bpe's text.
  Gpt2Tokenizer(const std::string& encoder_json, const std::string& vocab_bpe);
  // A folder's encoder.json and vocab.bpe, or the same files by Hugging Face's names
  // (vocab.json, merges.txt): a model folder's own tokenizer.
  static std::unique_ptr<Gpt2Tokenizer> from_dir(const std::string& dir);
  static std::unique_ptr<Gpt2Tokenizer> load(const CheckpointReader& ck);

  std::string kind() const override { return "gpt2"; }
  int64_t vocab_size() const override { return int64_t(id_bytes_.size()); }
  std::vector<int32_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  void save(CheckpointWriter& ck) const override;

  // The pre-tokenisation alone: the pieces BPE then encodes one by one.
  static std::vector<std::string> pretokenize(const std::string& text);

 private:
  void encode_piece(const std::string& piece, std::vector<int32_t>* out) const;

  std::string encoder_json_, vocab_bpe_;  // kept verbatim for checkpoints
  std::vector<std::string> id_bytes_;     // token id -> its raw bytes
  int32_t byte_id_[256];                  // the token of each single byte
  // (left id << 32 | right id) -> (merge rank << 32 | merged id)
  std::unordered_map<uint64_t, uint64_t> merges_;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;  // piece -> ids
};

}  // namespace bg
