#include "tokenizer.h"

#include "core/checkpoint.h"
#include "core/error.h"
#include "gpt2_bpe.h"

namespace bg {

CharTokenizer::CharTokenizer(const std::string& text) {
  bool seen[256] = {};
  for (unsigned char c : text) seen[c] = true;
  for (int c = 0; c < 256; ++c) index_[c] = -1;
  for (int c = 0; c < 256; ++c)
    if (seen[c]) {
      index_[c] = int16_t(chars_.size());
      chars_.push_back(char(c));
    }
}

std::vector<int32_t> CharTokenizer::encode(const std::string& text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const int16_t id = index_[c];
    BG_CHECK(id >= 0, "tokenizer", "character ",
             (c >= 32 && c < 127 ? "'" + std::string(1, char(c)) + "' " : std::string()), "(byte ",
             int(c), ") at position ", i, " is not in the ", chars_.size(),
             "-character vocabulary");
    ids.push_back(id);
  }
  return ids;
}

std::string CharTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string s;
  s.reserve(ids.size());
  for (int32_t id : ids) {
    BG_CHECK(id >= 0 && id < vocab_size(), "tokenizer", "token id ", id, " out of range [0, ",
             vocab_size(), ")");
    s.push_back(chars_[size_t(id)]);
  }
  return s;
}

void CharTokenizer::save(CheckpointWriter& ck) const {
  ck.attr("tokenizer", kind());
  // Also the bitgrad-train-1 attribute older checkpoints carry.
  ck.attr("vocab_chars", chars_);
}

std::vector<int32_t> ByteTokenizer::encode(const std::string& text) const {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string s;
  s.reserve(ids.size());
  for (int32_t id : ids) {
    BG_CHECK(id >= 0 && id < 256, "tokenizer", "byte token id ", id, " out of range [0, 256)");
    s.push_back(char(id));
  }
  return s;
}

void ByteTokenizer::save(CheckpointWriter& ck) const { ck.attr("tokenizer", kind()); }

std::unique_ptr<Tokenizer> make_tokenizer(TokenizerKind kind, const std::string& text,
                                          const std::string& gpt2_dir) {
  switch (kind) {
    case TokenizerKind::characters:
      return std::make_unique<CharTokenizer>(text);
    case TokenizerKind::byte:
    case TokenizerKind::byte_pair:
      return std::make_unique<ByteTokenizer>(kind == TokenizerKind::byte_pair);
    case TokenizerKind::gpt2:
      return Gpt2Tokenizer::from_dir(gpt2_dir);
  }
  fail("tokenizer", "unknown tokenizer kind");
}

std::unique_ptr<Tokenizer> load_tokenizer(const CheckpointReader& ck) {
  // Checkpoints written before tokenizers had kinds hold a char vocabulary.
  const std::string name = ck.has_attr("tokenizer") ? ck.str_attr("tokenizer") : "char";
  TokenizerKind kind = TokenizerKind::characters;
  BG_CHECK(parse_enum(name, &kind), "checkpoint", ck.path(), ": attribute tokenizer is '", name,
           "', expected ", enum_names_text<TokenizerKind>());
  if (kind == TokenizerKind::characters) {
    // The vocabulary in id order, as saved: each byte once, in increasing order. Anything else
    // (a duplicated or moved character) would shift ids and change the model's text silently.
    const std::string chars = ck.str_attr("vocab_chars");
    auto tok = std::make_unique<CharTokenizer>(chars);
    BG_CHECK(tok->chars() == chars, "checkpoint", ck.path(),
             ": attribute vocab_chars is not a vocabulary in id order (each character once, in "
             "increasing byte order)");
    return tok;
  }
  if (kind == TokenizerKind::gpt2) return Gpt2Tokenizer::load(ck);
  return std::make_unique<ByteTokenizer>(kind == TokenizerKind::byte_pair);
}

size_t split_point(const std::string& text, double val_fraction) {
  BG_CHECK(val_fraction >= 0 && val_fraction < 1, "data", "val_fraction must be in [0, 1), got ",
           val_fraction);
  // Code points are the bytes that do not continue a UTF-8 sequence (10xxxxxx).
  size_t code_points = 0;
  for (unsigned char c : text) code_points += (c & 0xC0) != 0x80;
  const size_t keep = size_t(double(code_points) * (1.0 - val_fraction));
  size_t seen = 0;
  for (size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 && seen++ == keep) return i;
  return text.size();
}

}  // namespace bg
