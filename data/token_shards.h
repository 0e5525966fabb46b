// token_shards.h: token files in llm.c's .bin format (dev/data/data_common.py): a header of
// 256 little-endian int32 ([0] = 20240520 magic, [1] = 1 version, [2] = token count), then the
// tokens as uint16. `bitgrad prepare` writes them; `bitgrad train` reads them (data.train_bin).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace bg {

class Tokenizer;

constexpr int32_t kShardMagic = 20240520;
constexpr int32_t kShardVersion = 1;

// Throws when an id does not fit uint16. Written atomically (PATH.tmp, then renamed).
void write_token_shard(const std::string& path, const std::vector<int32_t>& tokens);
// Throws, naming the file, on a missing file, a bad header or a size that disagrees with it.
std::vector<int32_t> read_token_shard(const std::string& path);

bool is_shard_path(const std::string& path);  // ends in ".bin"
// The tokens of a file: an llm.c shard as stored (ids checked against the vocabulary), or a
// text file encoded by `tok`.
std::vector<int32_t> read_tokens(const std::string& path, const Tokenizer& tok);

}  // namespace bg
