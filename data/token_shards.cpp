#include "token_shards.h"

#include <cstring>
#include <fstream>

#include "core/error.h"
#include "core/files.h"
#include "core/strings.h"
#include "text.h"
#include "tokenizer.h"

namespace bg {

void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens) {
  BG_CHECK(tokens.size() <= size_t(INT32_MAX), "shards", path, ": ", tokens.size(),
           " tokens do not fit one shard's int32 count");
  int32_t header[256] = {};
  header[0] = kShardMagic;
  header[1] = kShardVersion;
  header[2] = int32_t(tokens.size());
  std::vector<uint16_t> body(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    BG_CHECK(tokens[i] >= 0 && tokens[i] <= 65535, "shards", path, ": token ", tokens[i],
             " at position ", i, " does not fit uint16");
    body[i] = uint16_t(tokens[i]);
  }
  std::string bytes(reinterpret_cast<const char*>(header), sizeof header);
  bytes.append(reinterpret_cast<const char*>(body.data()), body.size() * 2);
  write_file_atomic(path, bytes, "shards");
}

std::vector<int32_t> read_token_shard(const std::string& path) {
  check_input_file(path, "shards", "token file");
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  BG_CHECK(f.good(), "shards", path, ": cannot open file");
  const int64_t bytes = int64_t(f.tellg());
  f.seekg(0);
  int32_t header[256];
  BG_CHECK(bytes >= int64_t(sizeof header), "shards", path, ": ", bytes,
           " bytes, shorter than the 1024-byte header of an llm.c token file");
  f.read(reinterpret_cast<char*>(header), sizeof header);
  BG_CHECK(header[0] == kShardMagic, "shards", path, ": magic ", header[0], " is not llm.c's ",
           kShardMagic, " (not a token file?)");
  BG_CHECK(header[1] == kShardVersion, "shards", path, ": version ", header[1],
           " (only version 1, uint16 tokens, is read)");
  const int64_t count = header[2];
  BG_CHECK(count > 0, "shards", path, ": header says ", count, " tokens");
  BG_CHECK(bytes == int64_t(sizeof header) + 2 * count, "shards", path, ": header says ", count,
           " tokens but the file holds ", (bytes - int64_t(sizeof header)) / 2, " (truncated?)");
  std::vector<uint16_t> body(static_cast<size_t>(count));
  f.read(reinterpret_cast<char*>(body.data()), std::streamsize(count * 2));
  BG_CHECK(f.good(), "shards", path, ": read failed");
  return std::vector<int32_t>(body.begin(), body.end());
}

bool is_shard_path(const std::string& path) {
  return ends_with(path, ".bin");
}

std::vector<int32_t> read_tokens(const std::string& path, const Tokenizer& tok) {
  if (!is_shard_path(path)) return tok.encode(read_text_file(path));
  std::vector<int32_t> tokens = read_token_shard(path);
  for (size_t i = 0; i < tokens.size(); ++i)
    BG_CHECK(tokens[i] < tok.vocab_size(), "data", path, ": token ", tokens[i], " at position ", i,
             " is outside the ", tok.kind(), " vocabulary of ", tok.vocab_size());
  return tokens;
}

}  // namespace bg
