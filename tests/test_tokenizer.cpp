// test_tokenizer.cpp: char/byte/GPT-2 tokenizers, the text split, llm.c token shards.
// The GPT-2 ids below come from OpenAI's encoder.py (gpt-2/src/encoder.py with the `regex`
// module) run on ../shared/data/gpt2; those cases are skipped when that folder is absent.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/checkpoint.h"
#include "data/gpt2_bpe.h"
#include "data/text.h"
#include "data/token_shards.h"
#include "data/tokenizer.h"
#include "harness.h"

using namespace bg;

namespace {

std::string temp_path(const std::string& name) {
  return bg::test::scratch_path("tok_" + name);
}

std::unique_ptr<Gpt2Tokenizer> shared_gpt2() {
  const std::string encoder = bg::test::shared_data_file("gpt2/encoder.json");
  if (encoder.empty()) return nullptr;
  return Gpt2Tokenizer::from_dir(std::filesystem::path(encoder).parent_path());
}

struct KnownIds {
  std::string text;
  std::vector<int32_t> ids;
};

const std::vector<KnownIds>& known_gpt2_ids() {
  static const std::vector<KnownIds> cases = {
      {"Hello world", {15496, 995}},
      {"Hello, world! How are you?", {15496, 11, 995, 0, 1374, 389, 345, 30}},
      {"I'm sure it's what they'd've said, we'll see; they're here.",
       {40, 1101, 1654, 340, 338, 644, 484, 1549, 1053, 531, 11, 356, 1183, 766, 26, 484, 821, 994,
        13}},
      {"  leading spaces\n\n\ttabs and\r\nnewlines   \n",
       {220, 3756, 9029, 628, 197, 8658, 82, 290, 201, 198, 3605, 6615, 220, 220, 220, 198}},
      {"numbers: 3.14159 and 2026-11-21, 1000000",
       {77, 17024, 25, 513, 13, 1415, 19707, 290, 1160, 2075, 12, 1157, 12, 2481, 11, 1802, 2388}},
      {"na\xC3\xAFve caf\xC3\xA9, Stra\xC3\x9F"
       "e, \xCE\xA9mega, \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD"
       "\xE3\x82\xB9\xE3\x83\x88, emoji \xF0\x9F\x8E\x89\xF0\x9F\x9A\x80!",
       {2616,  38776, 40304, 11,    15195, 39683, 68,    11,  7377, 102,   13731,
        11,    10545, 245,   98,    17312, 105,   45739, 252, 5641, 24336, 25084,
        43302, 11,    44805, 12520, 236,   231,   8582,  248, 222,  0}},
      {"HELLO'S DON'T", {13909, 3069, 46, 6, 50, 23917, 6, 51}},
      {"    ", {220, 220, 220, 220}},
      {"a  b   c    d", {64, 220, 275, 220, 220, 269, 220, 220, 220, 288}},
      {"x\xC2\xA0y\xE2\x80\x83z", {87, 1849, 88, 447, 225, 89}},
      {"<|endoftext|>", {27, 91, 437, 1659, 5239, 91, 29}},
      {"ok'''s", {482, 7061, 6, 82}},
      {"\xE2\x85\xAB \xD9\xA3 \xC2\xB2", {158, 227, 104, 18923, 96, 1587, 110}},
      {" !!! ??", {220, 10185, 19153}},
  };
  return cases;
}

}  // namespace

TEST_CASE("gpt2 pre-tokenisation splits like encoder.py's regex") {
  using V = std::vector<std::string>;
  CHECK(Gpt2Tokenizer::pretokenize("I'm sure it's") == V{"I", "'m", " sure", " it", "'s"});
  CHECK(
      Gpt2Tokenizer::pretokenize("  leading spaces\n\n\ttabs and\r\nnewlines   \n") ==
      V{" ", " leading", " spaces", "\n\n", "\t", "tabs", " and", "\r", "\n", "newlines", "   \n"});
  CHECK(Gpt2Tokenizer::pretokenize("a  b   c") == V{"a", " ", " b", "  ", " c"});
  CHECK(Gpt2Tokenizer::pretokenize("HELLO'S") == V{"HELLO", "'", "S"});
  CHECK(Gpt2Tokenizer::pretokenize(" 3.14 ok!?") == V{" 3", ".", "14", " ok", "!?"});
  CHECK(Gpt2Tokenizer::pretokenize("x\xC2\xA0y") == V{"x", "\xC2\xA0", "y"});  // NBSP is \s
  CHECK(Gpt2Tokenizer::pretokenize("\xE2\x85\xAB \xD9\xA3") == V{"\xE2\x85\xAB", " \xD9\xA3"});
  CHECK(Gpt2Tokenizer::pretokenize("").empty());
  // Invalid UTF-8 bytes stand alone as `other` characters and survive the round trip.
  const std::string bad = "a\xFF\xC3 b";
  std::string joined;
  for (const auto& p : Gpt2Tokenizer::pretokenize(bad)) joined += p;
  CHECK(joined == bad);
}

TEST_CASE("gpt2 bpe on a hand-made vocabulary merges lowest rank first") {
  // Bytes get ids 0..255 in encoder.py's alphabet; merges: "a b" (rank 0), "b c" (rank 1),
  // "ab c" (rank 2). "abc" -> ab + c -> abc; "bcb" -> bc + b; "abab" -> ab ab.
  // encoder.py's alphabet: printable Latin-1 bytes are themselves, the rest U+0100 on.
  std::string json = "{";
  std::vector<std::string> symbol(256);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const int cp = printable ? b : next++;
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    symbol[size_t(b)] = buf;
  }
  for (int b = 0; b < 256; ++b)
    json += "\"" + symbol[size_t(b)] + "\": " + std::to_string(b) + ", ";
  json += "\"ab\": 256, \"bc\": 257, \"abc\": 258}";
  const Gpt2Tokenizer tok(json, "#version: 0.2\na b\nb c\nab c\n");
  CHECK(tok.vocab_size() == 259);
  CHECK(tok.encode("abc") == std::vector<int32_t>{258});
  CHECK(tok.encode("bcb") == std::vector<int32_t>{257, 'b'});
  CHECK(tok.encode("abab") == std::vector<int32_t>{256, 256});
  CHECK(tok.encode("cab") == std::vector<int32_t>{'c', 256});
  CHECK(tok.encode(" abc") == std::vector<int32_t>{' ', 258});
  CHECK(tok.decode(tok.encode("abc bcb\n")) == "abc bcb\n");
  CHECK_THROWS_WITH_AS(tok.decode({259}), doctest::Contains("out of range"), std::runtime_error);
  CHECK_THROWS_WITH_AS(Gpt2Tokenizer(json, "#version: 0.2\na z\n"),
                       doctest::Contains("vocab.bpe line 2"), std::runtime_error);
  CHECK_THROWS_WITH_AS(Gpt2Tokenizer("{\"a\": 0,", ""), doctest::Contains("encoder.json"),
                       std::runtime_error);
}

TEST_CASE("gpt2 tokenizer gives encoder.py's ids and round-trips") {
  const auto tok = shared_gpt2();
  if (!tok) return;
  CHECK(tok->vocab_size() == 50257);
  for (const KnownIds& k : known_gpt2_ids()) {
    CAPTURE(k.text);
    CHECK(tok->encode(k.text) == k.ids);
    CHECK(tok->decode(k.ids) == k.text);
  }
  CHECK(tok->decode({50256}) == "<|endoftext|>");
}

TEST_CASE("gpt2 tokenizer on tiny shakespeare matches nanoGPT's split counts") {
  const std::string path = bg::test::shared_data_file("tinyshakespeare.txt");
  const auto tok = path.empty() ? nullptr : shared_gpt2();
  if (!tok) return;
  const std::string text = read_text_file(path);
  const size_t cut = split_point(text, 0.1);
  const std::vector<int32_t> train = tok->encode(text.substr(0, cut));
  const std::vector<int32_t> val = tok->encode(text.substr(cut));
  // nanoGPT's data/shakespeare/prepare.py: 301,966 train and 36,059 val tokens.
  CHECK(train.size() == 301966);
  CHECK(val.size() == 36059);
  // FNV-1a over the ids, as encoder.py's ids hash.
  auto fnv = [](const std::vector<int32_t>& ids) {
    uint64_t h = 14695981039346656037ull;
    for (int32_t x : ids) h = (h ^ uint64_t(x)) * 1099511628211ull;
    return h;
  };
  CHECK(fnv(train) == 9788391560614351243ull);
  CHECK(fnv(val) == 12258392217422807076ull);
  CHECK(tok->decode(train) + tok->decode(val) == text);
}

TEST_CASE("char and byte tokenizers round-trip and name bad input") {
  const CharTokenizer chars("hello world");
  CHECK(chars.vocab_size() == 8);  // " dehlorw"
  CHECK(chars.decode(chars.encode("low hello")) == "low hello");
  CHECK_THROWS_WITH_AS(chars.encode("hex"), doctest::Contains("'x' (byte 120) at position 2"),
                       std::runtime_error);
  const ByteTokenizer bytes;
  const std::string s = "caf\xC3\xA9\n";
  CHECK(bytes.encode(s) == std::vector<int32_t>{'c', 'a', 'f', 0xC3, 0xA9, '\n'});
  CHECK(bytes.decode(bytes.encode(s)) == s);
  CHECK_THROWS_AS(bytes.decode({256}), std::runtime_error);
}

TEST_CASE("tokenizers survive a checkpoint") {
  const std::string path = temp_path("ck.h5");
  {
    CheckpointWriter ck(path);
    CharTokenizer("abcab").save(ck);
    ck.commit();
  }
  {
    CheckpointReader ck(path);
    const auto t = load_tokenizer(ck);
    CHECK(t->kind() == "char");
    CHECK(t->vocab_size() == 3);
  }
  const auto gpt2 = shared_gpt2();
  if (gpt2) {
    CheckpointWriter ck(path);
    gpt2->save(ck);
    ck.commit();
    CheckpointReader rd(path);
    const auto t = load_tokenizer(rd);
    CHECK(t->kind() == "gpt2");
    CHECK(t->encode("Hello world") == std::vector<int32_t>{15496, 995});
  }
  std::filesystem::remove(path);
}

TEST_CASE("split_point cuts at a fraction of code points") {
  CHECK(split_point("0123456789", 0.1) == 9);
  CHECK(split_point("0123456789", 0.0) == 10);
  // Four code points (one two-byte): 75% of them is 3, the cut lands after the two-byte one.
  CHECK(split_point("a\xC3\xA9"
                    "bc",
                    0.25) == 4);
}

TEST_CASE("llm.c token shards round-trip and reject broken files") {
  const std::string path = temp_path("shard.bin");
  const std::vector<int32_t> tokens = {0, 1, 50256, 65535, 7};
  write_token_shard(path, tokens);
  CHECK(std::filesystem::file_size(path) == 1024 + 2 * tokens.size());
  CHECK(read_token_shard(path) == tokens);
  CHECK_THROWS_WITH_AS(write_token_shard(path, {65536}), doctest::Contains("does not fit uint16"),
                       std::runtime_error);
  CHECK(read_token_shard(path) == tokens);  // the failed write left the file alone
  std::filesystem::resize_file(path, 1024 + 2 * tokens.size() - 2);
  CHECK_THROWS_WITH_AS(read_token_shard(path), doctest::Contains("truncated"), std::runtime_error);
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << std::string(2000, 'x');
  }
  CHECK_THROWS_WITH_AS(read_token_shard(path), doctest::Contains("magic"), std::runtime_error);
  CHECK_THROWS_WITH_AS(read_token_shard(path + ".missing"), doctest::Contains("cannot open"),
                       std::runtime_error);
  std::filesystem::remove(path);
}
