// test_llmc_format.cpp: llm.c's GPT-2 checkpoint files (data/llmc_format.h): a file made int by
// int here reads into llm.c's 16 tensors in its order and shapes; written files round-trip bit
// for bit in fp32 and bf16; every kind of bad header or size is refused in one line.
#include <cstring>
#include <filesystem>
#include <fstream>

#include "data/llmc_format.h"
#include "harness.h"

namespace bg::test {
namespace {

std::string temp_path(const std::string& name) {
  return scratch_path("llmc_" + name);
}

// A header of 256 int32 with the given first fields, then `floats` fp32 values 0, 1, 2, ...
std::string file_bytes(const std::vector<int32_t>& fields, int64_t floats) {
  std::vector<int32_t> header(kLlmcHeaderInts, 0);
  std::copy(fields.begin(), fields.end(), header.begin());
  std::string out(header.size() * 4, '\0');
  std::memcpy(out.data(), header.data(), out.size());
  for (int64_t i = 0; i < floats; ++i) {
    const float v = float(i);
    out.append(reinterpret_cast<const char*>(&v), 4);
  }
  return out;
}

std::string write_bytes(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// The tiny model's parameter count: maxT 3, V 5, L 2, NH 2, C 4, Vp 8.
constexpr int64_t kC = 4, kL = 2, kVp = 8, kT = 3;
constexpr int64_t kTinyCount = kVp * kC + kT * kC + kL * (2 * kC + 3 * kC * kC + 3 * kC + kC * kC +
                                                         kC + 2 * kC + 4 * kC * kC + 4 * kC +
                                                         4 * kC * kC + kC) +
                               2 * kC;

}  // namespace

TEST_CASE("cpu: an llm.c checkpoint made int by int reads in llm.c's order and shapes") {
  const std::string path =
      write_bytes("hand.bin", file_bytes({kLlmcMagic, 3, 3, 5, 2, 2, 4, 8}, kTinyCount));
  const LlmcCheckpoint ck = read_llmc(path);
  CHECK(ck.header.dtype == DType::f32);
  CHECK(ck.header.vocab_size == 5);
  CHECK(ck.header.padded_vocab_size == 8);
  REQUIRE(ck.tensors.size() == 16);
  const auto shapes = llmc_parameter_shapes(ck.header);
  int64_t next = 0;  // the file's values count up, so each tensor starts where the last ended
  for (size_t i = 0; i < 16; ++i) {
    CAPTURE(ck.tensors[i].first);
    CHECK(ck.tensors[i].first == shapes[i].first);
    CHECK(ck.tensors[i].second.shape() == shapes[i].second);
    const std::vector<float> v = ck.tensors[i].second.to_vector<float>();
    CHECK(v.front() == float(next));
    CHECK(v.back() == float(next + int64_t(v.size()) - 1));
    next += int64_t(v.size());
  }
  CHECK(next == kTinyCount);
  CHECK(ck.tensors[4].first == "qkvw");
  CHECK(ck.tensors[4].second.shape() == Shape{2, 12, 4});
  CHECK(ck.tensors[12].second.shape() == Shape{2, 4, 16});  // fcprojw (L, C, 4C)
}

TEST_CASE("cpu: llm.c checkpoints written by bitgrad read back bit for bit (fp32 and bf16)") {
  Generator gen(test_seed() + 41);
  for (const DType dt : {DType::f32, DType::bf16}) {
    CAPTURE(dtype_name(dt));
    LlmcCheckpoint ck;
    ck.header = {3, 5, 2, 2, 4, 8, dt};
    for (const auto& [name, shape] : llmc_parameter_shapes(ck.header))
      ck.tensors.emplace_back(name, randn(shape, gen).to(dt));
    const std::string path = temp_path("roundtrip.bin");
    write_llmc(path, ck);
    CHECK(std::filesystem::file_size(path) ==
          uintmax_t(kLlmcHeaderInts * 4 + kTinyCount * int64_t(dtype_size(dt))));
    const LlmcCheckpoint back = read_llmc(path);
    CHECK(back.header.dtype == dt);
    for (size_t i = 0; i < 16; ++i) CHECK(bit_mismatches(back.tensors[i].second, ck.tensors[i].second) == 0);
  }
  LlmcCheckpoint wrong;
  wrong.header = {3, 5, 2, 2, 4, 8, DType::f32};
  for (const auto& [name, shape] : llmc_parameter_shapes(wrong.header))
    wrong.tensors.emplace_back(name, zeros(shape));
  wrong.tensors[2].second = zeros({3, 4});
  CHECK_THROWS_WITH(write_llmc(temp_path("wrong.bin"), wrong), doctest::Contains("llm.c's is \"ln1w\""));
}

TEST_CASE("cpu: bad llm.c checkpoints are refused in one line") {
  struct Bad {
    std::vector<int32_t> fields;
    int64_t floats;
    std::string why;
  };
  const std::vector<Bad> bad = {
      {{20240327, 3, 3, 5, 2, 2, 4, 8}, kTinyCount, "magic 20240327"},
      {{kLlmcMagic, 4, 3, 5, 2, 2, 4, 8}, kTinyCount, "version 4"},
      {{kLlmcMagic, 3, 3, 5, 0, 2, 4, 8}, kTinyCount, "num_layers 0"},
      {{kLlmcMagic, 3, 3, 5, 2, 3, 4, 8}, kTinyCount, "not a multiple of num_heads"},
      {{kLlmcMagic, 3, 3, 9, 2, 2, 4, 8}, kTinyCount, "below vocab_size"},
      {{kLlmcMagic, 3, 3, 5, 2, 2, -4, 8}, kTinyCount, "channels -4"},
      {{kLlmcMagic, 3, 3, 5, 2, 2, 1 << 30, 8}, kTinyCount, "channels 1073741824"},
      {{kLlmcMagic, 3, 3, 5, 2, 2, 4, 8}, kTinyCount - 1, "(truncated?)"},
      {{kLlmcMagic, 3, 3, 5, 2, 2, 4, 8}, kTinyCount + 1, "declares"},
      {{kLlmcMagic, 5, 3, 5, 2, 2, 4, 8}, kTinyCount, "declares"},  // bf16 header, fp32 data
  };
  for (const Bad& b : bad) {
    CAPTURE(b.why);
    const std::string path = write_bytes("bad.bin", file_bytes(b.fields, b.floats));
    try {
      (void)read_llmc(path);
      FAIL("opened");
    } catch (const Error& e) {
      const std::string msg = e.what();
      CAPTURE(msg);
      CHECK(msg.find(b.why) != std::string::npos);
      CHECK(msg.rfind("[llm.c]", 0) == 0);
      CHECK(msg.find('\n') == std::string::npos);
    }
  }
  CHECK_THROWS_WITH(read_llmc(write_bytes("short.bin", "abc")),
                    doctest::Contains("shorter than llm.c's 1024-byte header"));
  CHECK_THROWS_WITH(read_llmc(temp_path("missing.bin")), doctest::Contains("missing.bin"));
}

}  // namespace bg::test
