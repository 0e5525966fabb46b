#include "gpt2_bpe.h"

#include <filesystem>

#include <algorithm>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/json.h"
#include "text.h"

namespace bg {
namespace {

struct CodeRange {
  uint32_t lo, hi;
};
#include "unicode_classes.inc"

template <size_t N>
bool in_ranges(const CodeRange (&ranges)[N], uint32_t cp) {
  const CodeRange* it = std::upper_bound(ranges, ranges + N, cp,
                                         [](uint32_t c, const CodeRange& r) { return c < r.lo; });
  return it != ranges && cp <= (it - 1)->hi;
}

enum class CharClass : uint8_t { letter, number, space, other };

CharClass classify(uint32_t cp) {
  if (cp < 128) {  // the common case, without a search
    if ((cp | 32) >= 'a' && (cp | 32) <= 'z') return CharClass::letter;
    if (cp >= '0' && cp <= '9') return CharClass::number;
    if (cp == ' ' || (cp >= 9 && cp <= 13)) return CharClass::space;
    return CharClass::other;
  }
  if (in_ranges(kLetterRanges, cp)) return CharClass::letter;
  if (in_ranges(kNumberRanges, cp)) return CharClass::number;
  if (in_ranges(kSpaceRanges, cp)) return CharClass::space;
  return CharClass::other;
}

// One code point of the text: its value, class and byte span. A byte that does not start a
// valid UTF-8 sequence is a code point of its own of class `other` (encoder.py would not have
// decoded such a file at all).
struct CodePoint {
  uint32_t cp;
  CharClass cls;
  size_t begin, end;
};

std::vector<CodePoint> decode_utf8(const std::string& s) {
  std::vector<CodePoint> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < len; ++k) {
      const size_t j = i + size_t(k);
      if (j >= s.size() || (static_cast<unsigned char>(s[j]) & 0xC0) != 0x80) {
        len = 0;
        break;
      }
      cp = (cp << 6) | (static_cast<unsigned char>(s[j]) & 0x3F);
    }
    if (len == 0) {
      out.push_back({c, CharClass::other, i, i + 1});
      ++i;
      continue;
    }
    out.push_back({cp, classify(cp), i, i + size_t(len)});
    i += size_t(len);
  }
  return out;
}

// encoder.py's bytes_to_unicode, inverted: the byte each symbol of the token alphabet stands
// for (-1 for code points outside the alphabet). Printable Latin-1 bytes stand for themselves;
// the other 68 bytes, in order, for U+0100...
struct SymbolBytes {
  int16_t byte_of[512];
  SymbolBytes() {
    std::fill(byte_of, byte_of + 512, int16_t(-1));
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      byte_of[printable ? b : next++] = int16_t(b);
    }
  }
};

// A token string of encoder.json / vocab.bpe (UTF-8 of alphabet symbols) as raw bytes.
std::string symbols_to_bytes(const std::string& symbols, const std::string& where) {
  static const SymbolBytes table;
  std::string bytes;
  for (const CodePoint& c : decode_utf8(symbols)) {
    BG_CHECK(c.cp < 512 && table.byte_of[c.cp] >= 0, "gpt2", where, ": symbol U+", c.cp,
             " is not in GPT-2's byte alphabet");
    bytes.push_back(char(table.byte_of[c.cp]));
  }
  return bytes;
}

// encoder.json: one flat JSON object of token strings and their ids, read by the strict reader
// every JSON file goes through (core/json.h).
std::vector<std::pair<std::string, int64_t>> encoder_entries(const std::string& text) {
  const JsonValue root = parse_json(text, "gpt2", "encoder.json", 1);
  BG_CHECK(root.kind == JsonValue::Kind::object, "gpt2",
           "encoder.json: expected an object of token ids, got ", json_kind_name(root.kind));
  std::vector<std::pair<std::string, int64_t>> entries;
  entries.reserve(root.members.size());
  for (const auto& [key, value] : root.members) {
    const uint64_t id = value.as_uint64("gpt2", "encoder.json: the id of '" + key + "'");
    BG_CHECK(id < (uint64_t(1) << 31), "gpt2", "encoder.json: token '", key, "' has id ", id,
             ", past the ids a vocabulary holds");
    entries.emplace_back(key, int64_t(id));
  }
  return entries;
}

}  // namespace

Gpt2Tokenizer::Gpt2Tokenizer(const std::string& encoder_json, const std::string& vocab_bpe)
    : encoder_json_(encoder_json), vocab_bpe_(vocab_bpe) {
  const auto entries = encoder_entries(encoder_json);
  BG_CHECK(!entries.empty(), "gpt2", "encoder.json holds no tokens");
  id_bytes_.assign(entries.size(), std::string());
  std::vector<bool> seen(entries.size(), false);
  std::unordered_map<std::string, int32_t> id_of;
  id_of.reserve(entries.size());
  for (const auto& [symbols, id] : entries) {
    BG_CHECK(id >= 0 && id < int64_t(entries.size()) && !seen[size_t(id)], "gpt2",
             "encoder.json: ids must be 0..", entries.size() - 1, " each once; '", symbols,
             "' has ", id);
    seen[size_t(id)] = true;
    id_bytes_[size_t(id)] = symbols_to_bytes(symbols, "encoder.json token '" + symbols + "'");
    id_of.emplace(id_bytes_[size_t(id)], int32_t(id));
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = id_of.find(std::string(1, char(b)));
    BG_CHECK(it != id_of.end(), "gpt2", "encoder.json has no token for byte ", b);
    byte_id_[b] = it->second;
  }
  // vocab.bpe: a "#version" line, then one merge "left right" per line in rank order.
  size_t pos = 0, line_no = 0;
  uint64_t rank = 0;
  while (pos < vocab_bpe.size()) {
    size_t end = vocab_bpe.find('\n', pos);
    if (end == std::string::npos) end = vocab_bpe.size();
    std::string line = vocab_bpe.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t space = line.find(' ');
    const std::string where = "vocab.bpe line " + std::to_string(line_no);
    BG_CHECK(space != std::string::npos && space > 0 && space + 1 < line.size() &&
                 line.find(' ', space + 1) == std::string::npos,
             "gpt2", where, ": expected 'left right', got '", line, "'");
    const std::string left = symbols_to_bytes(line.substr(0, space), where);
    const std::string right = symbols_to_bytes(line.substr(space + 1), where);
    const auto l = id_of.find(left), r = id_of.find(right), m = id_of.find(left + right);
    BG_CHECK(l != id_of.end() && r != id_of.end() && m != id_of.end(), "gpt2", where, ": merge '",
             line, "' uses or makes a token encoder.json lacks");
    const uint64_t key = (uint64_t(uint32_t(l->second)) << 32) | uint32_t(r->second);
    merges_.emplace(key, (rank++ << 32) | uint32_t(m->second));  // the first rank wins
  }
}

std::string gpt2_vocab_file(const std::string& dir, bool merges) {
  // OpenAI's names, or the same files under Hugging Face's (a model folder's own tokenizer).
  const std::string openai = dir + (merges ? "/vocab.bpe" : "/encoder.json");
  const std::string hf = dir + (merges ? "/merges.txt" : "/vocab.json");
  std::error_code ec;
  return !std::filesystem::exists(openai, ec) && std::filesystem::exists(hf, ec) ? hf : openai;
}

bool has_gpt2_vocab(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(gpt2_vocab_file(dir, false), ec) &&
         std::filesystem::is_regular_file(gpt2_vocab_file(dir, true), ec);
}

std::unique_ptr<Gpt2Tokenizer> Gpt2Tokenizer::from_dir(const std::string& dir) {
  return std::make_unique<Gpt2Tokenizer>(read_text_file(gpt2_vocab_file(dir, false)),
                                         read_text_file(gpt2_vocab_file(dir, true)));
}

namespace {
std::string bytes_dataset(const CheckpointReader& ck, const std::string& name) {
  const std::vector<uint8_t> v = ck.tensor(name, DType::u8).to_vector<uint8_t>();
  return std::string(v.begin(), v.end());
}
Tensor bytes_tensor(const std::string& s) {
  return from_vector(std::vector<uint8_t>(s.begin(), s.end()), {int64_t(s.size())});
}
}  // namespace

std::unique_ptr<Gpt2Tokenizer> Gpt2Tokenizer::load(const CheckpointReader& ck) {
  // bitgrad-train-1 checkpoints kept the two files beside the parameters.
  const std::string group = ck.has("tokenizer/encoder_json") ? "tokenizer/" : "tokenizer.";
  return std::make_unique<Gpt2Tokenizer>(bytes_dataset(ck, group + "encoder_json"),
                                         bytes_dataset(ck, group + "vocab_bpe"));
}

void Gpt2Tokenizer::save(CheckpointWriter& ck) const {
  ck.attr("tokenizer", kind());
  // The two files verbatim (1.5 MB): too large for HDF5 attributes, so u8 datasets, in a
  // group of their own so that the root holds only the model's state_dict.
  ck.tensor("tokenizer/encoder_json", bytes_tensor(encoder_json_));
  ck.tensor("tokenizer/vocab_bpe", bytes_tensor(vocab_bpe_));
}

std::vector<std::string> Gpt2Tokenizer::pretokenize(const std::string& text) {
  const std::vector<CodePoint> cps = decode_utf8(text);
  const size_t n = cps.size();
  std::vector<std::string> pieces;
  auto run_end = [&](size_t j, CharClass cls) {
    while (j < n && cps[j].cls == cls) ++j;
    return j;
  };
  auto emit = [&](size_t from, size_t to) {
    pieces.push_back(text.substr(cps[from].begin, cps[to - 1].end - cps[from].begin));
  };
  size_t i = 0;
  while (i < n) {
    // 's|'t|'re|'ve|'m|'ll|'d (ASCII apostrophe, lower case: as in GPT-2)
    if (cps[i].cp == '\'' && i + 1 < n) {
      const uint32_t a = cps[i + 1].cp, b = i + 2 < n ? cps[i + 2].cp : 0;
      size_t len = 0;
      if (a == 's' || a == 't' || a == 'm' || a == 'd')
        len = 2;
      else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        len = 3;
      if (len) {
        emit(i, i + len);
        i += len;
        continue;
      }
    }
    //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+ : an optional ASCII space, then one class's run.
    const size_t start = i + (cps[i].cp == ' ' && i + 1 < n ? 1 : 0);
    if (cps[start].cls != CharClass::space) {
      const size_t end = run_end(start, cps[start].cls);
      emit(i, end);
      i = end;
      continue;
    }
    // \s+(?!\S) | \s+ : a whitespace run gives up its last character to a following word.
    size_t end = run_end(i, CharClass::space);
    if (end < n && end - i >= 2) --end;
    emit(i, end);
    i = end;
  }
  return pieces;
}

void Gpt2Tokenizer::encode_piece(const std::string& piece, std::vector<int32_t>* out) const {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto it = cache_.find(piece);
    if (it != cache_.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> word(piece.size());
  for (size_t i = 0; i < piece.size(); ++i)
    word[i] = byte_id_[static_cast<unsigned char>(piece[i])];
  std::vector<int32_t> next;
  while (word.size() > 1) {
    // The adjacent pair of lowest merge rank, then every left-to-right occurrence of it.
    uint64_t best = UINT64_MAX;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const auto it = merges_.find((uint64_t(uint32_t(word[i])) << 32) | uint32_t(word[i + 1]));
      if (it != merges_.end()) best = std::min(best, it->second);
    }
    if (best == UINT64_MAX) break;
    const int32_t merged = int32_t(best & 0xFFFFFFFFu);
    next.clear();
    for (size_t i = 0; i < word.size(); ++i) {
      if (i + 1 < word.size()) {
        const auto it = merges_.find((uint64_t(uint32_t(word[i])) << 32) | uint32_t(word[i + 1]));
        if (it != merges_.end() && it->second == best) {
          next.push_back(merged);
          ++i;
          continue;
        }
      }
      next.push_back(word[i]);
    }
    word.swap(next);
  }
  out->insert(out->end(), word.begin(), word.end());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() < (1u << 20)) cache_.emplace(piece, std::move(word));
}

std::vector<int32_t> Gpt2Tokenizer::encode(const std::string& text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3);
  for (const std::string& piece : pretokenize(text)) encode_piece(piece, &ids);
  return ids;
}

std::string Gpt2Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string s;
  for (int32_t id : ids) {
    BG_CHECK(id >= 0 && id < vocab_size(), "tokenizer", "GPT-2 token id ", id, " out of range [0, ",
             vocab_size(), ")");
    s += id_bytes_[size_t(id)];
  }
  return s;
}

}  // namespace bg
