// test_safetensors.cpp: the strict JSON reader (core/json.h) and the safetensors format
// (data/safetensors.h): a file whose bytes are made by hand here reads exactly; bitgrad's
// writer round-trips f32, f16 and bf16 (scalar and empty tensors included) bit for bit; every
// kind of bad file is refused in one line naming what is wrong.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/json.h"
#include "data/safetensors.h"
#include "harness.h"

namespace bg::test {
namespace {

std::string temp_path(const std::string& name) {
  return scratch_path("st_" + name);
}

// A safetensors file from a header and data bytes, the length field written by hand
// (`length_override` replaces it when set).
std::string file_bytes(const std::string& header, const std::string& data,
                       int64_t length_override = -1) {
  const uint64_t n = length_override >= 0 ? uint64_t(length_override) : header.size();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xFF);
  return out + header + data;
}

std::string write_bytes(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string f32_bytes(const std::vector<float>& v) {
  std::string out(v.size() * 4, '\0');
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// The error opening a file made of `header` and `data` (empty when it opens).
std::string open_error(const std::string& header, const std::string& data,
                       int64_t length_override = -1) {
  const std::string path = write_bytes("bad.safetensors", file_bytes(header, data, length_override));
  try {
    SafetensorsReader r(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cpu: the JSON reader parses RFC 8259 and refuses what it does not allow") {
  const JsonValue v = parse_json(
      R"( {"a": [1, -2.5e3, 0, true, false, null], "s": "q\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "o": {}} )",
      "t", "doc");
  REQUIRE(v.kind == JsonValue::Kind::object);
  const JsonValue* a = v.find("a");
  REQUIRE(a);
  CHECK(a->items.size() == 6);
  CHECK(a->items[0].as_uint64("t", "x") == 1);
  CHECK(a->items[1].text == "-2.5e3");
  CHECK(a->items[3].boolean);
  CHECK(a->items[5].kind == JsonValue::Kind::null);
  CHECK(v.find("s")->text == "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(v.find("o")->members.empty());
  CHECK(v.find("missing") == nullptr);
  CHECK(parse_json("18446744073709551615", "t", "x").as_uint64("t", "n") == UINT64_MAX);
  CHECK_THROWS_WITH(parse_json("18446744073709551616", "t", "x").as_uint64("t", "n"),
                    doctest::Contains("n must be a non-negative integer"));
  CHECK_THROWS_WITH(parse_json("1.0", "t", "x").as_uint64("t", "n"),
                    doctest::Contains("must be a non-negative integer, got 1.0"));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"NaN", "not a JSON value at byte 0"},
      {"[1, NaN]", "not a JSON value at byte 4"},
      {"-Infinity", "a number needs digits"},
      {"[1,]", "not a JSON value"},
      {"{\"a\":1,\"a\":2}", "the key \"a\" appears twice"},
      {"{\"a\" 1}", "expected ':'"},
      {"[1 2]", "expected ']'"},
      {"01", "unexpected text after the value"},
      {"1.", "a number needs digits"},
      {"\"a\tb\"", "a control character inside a string"},
      {"\"\\x\"", "an unknown escape \\x"},
      {"\"\\ud800\"", "a lone surrogate"},
      {"\"abc", "the text ends inside a string"},
      {"{\"a\": [", "the text ends inside a value"},
      {"", "the text ends inside a value"},
      {"{} {}", "unexpected text after the value"},
      {std::string(100, '[') + std::string(100, ']'), "nested deeper than 64"},
  };
  for (const auto& [text, why] : bad) {
    CAPTURE(text);
    CHECK_THROWS_WITH(parse_json(text, "t", "doc"), doctest::Contains(why.c_str()));
  }
  CHECK(json_quote("a\"b\\c\n\x01") == "\"a\\\"b\\\\c\\n\\u0001\"");
}

TEST_CASE("cpu: a safetensors file made byte by byte reads exactly") {
  // Two tensors and metadata, the data in the file's own order (b first), header padded.
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[4,20]},)"
      R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"c":{"dtype":"F16","shape":[0],"data_offsets":[20,20]}}   )";
  const std::string data = std::string("\x80\x3f\x00\xc0", 4) + f32_bytes({1.5f, -2.f, 0.25f, 1e30f});
  const std::string path = write_bytes("hand.safetensors", file_bytes(header, data));
  const SafetensorsReader r(path);
  CHECK(r.entries().size() == 3);
  CHECK(r.metadata().at("format") == "pt");
  const Tensor a = r.read("a");
  CHECK(a.dtype() == DType::f32);
  CHECK(a.shape() == Shape{2, 2});
  CHECK(a.to_vector<float>() == std::vector<float>{1.5f, -2.f, 0.25f, 1e30f});
  const Tensor b = r.read("b");  // bf16 0x3f80 = 1, 0xc000 = -2
  CHECK(b.dtype() == DType::bf16);
  CHECK(b.to(DType::f32).to_vector<float>() == std::vector<float>{1.f, -2.f});
  CHECK(r.read("c").numel() == 0);
  CHECK_THROWS_WITH(r.read("d"), doctest::Contains("no tensor \"d\""));
}

TEST_CASE("cpu: safetensors written by bitgrad read back bit for bit") {
  Generator gen(test_seed() + 31);
  const Tensor f32 = randn({3, 5}, gen), f16 = randn({7}, gen).to(DType::f16),
               bf16 = randn({2, 3, 4}, gen).to(DType::bf16), scalar = full({}, 3.25),
               none = zeros({0, 4});
  const std::string path = temp_path("roundtrip.safetensors");
  write_safetensors(path,
                    {{"w.f32", f32.transpose(0, 1)}, {"h.f16", f16}, {"x \"quoted\"", bf16},
                     {"s", scalar}, {"empty", none}},
                    {{"format", "pt"}, {"by", "bitgrad"}});
  const SafetensorsReader r(path);
  CHECK(r.metadata().at("by") == "bitgrad");
  CHECK(bit_mismatches(r.read("w.f32"), f32.transpose(0, 1).contiguous()) == 0);
  CHECK(bit_mismatches(r.read("h.f16"), f16) == 0);
  CHECK(bit_mismatches(r.read("x \"quoted\""), bf16) == 0);
  CHECK(r.read("s").shape() == Shape{});
  CHECK(r.read("s").item() == 3.25);
  CHECK(r.read("empty").shape() == Shape{0, 4});
  // The data starts 8-byte aligned, as transformers writes it.
  std::ifstream f(path, std::ios::binary);
  unsigned char len[8];
  f.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | len[i];
  CHECK((8 + n) % 8 == 0);
  CHECK_THROWS_WITH(write_safetensors(path, {{"a", f32}, {"a", f32}}),
                    doctest::Contains("given twice"));
  CHECK_THROWS_WITH(write_safetensors(path, {{"__metadata__", f32}}),
                    doctest::Contains("may not be named"));
  CHECK_THROWS_WITH(write_safetensors(path, {{"i", zeros({2}, DType::i64)}}),
                    doctest::Contains("is not written"));
}

TEST_CASE("cpu: hostile safetensors files are refused in one line") {
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string data8(8, '\0');
  CHECK(open_error("{" + ok_entry + "}", data8).empty());
  struct Bad {
    std::string header, data, why;
    int64_t length = -1;
  };
  const std::vector<Bad> bad = {
      {"{" + ok_entry + "}", data8.substr(0, 5), "truncated"},
      {"{" + ok_entry + "}", data8, "runs past the file's end", 1000},
      {"{" + ok_entry + "}", data8, "the format allows", int64_t(kMaxSafetensorsHeader) + 1},
      {"{" + ok_entry + "}", data8 + "xx", "2 bytes after the last tensor's data"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       data8, "overlaps"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data8, "leaving a hole"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", data8, "end before they begin"},
      {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data8, "truncated"},
      {R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data8, "is 12 bytes but"},
      {R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", data8, "F64 is not one bitgrad reads"},
      {R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", data8, "Q4 is not a safetensors dtype"},
      {R"({"a":{"dtype":"F32","shape":[NaN],"data_offsets":[0,8]}})", data8, "not a JSON value"},
      {R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", data8, "must be a non-negative integer"},
      {R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data8, "must be a non-negative integer"},
      {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", data8, "overflows"},
      {R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}})", data8, "9 dimensions"},
      {R"({"a":{"dtype":"F32","shape":[2]}})", data8, "lacks data_offsets"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", data8, "unknown field \"x\""},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data8, "must be [begin, end]"},
      {R"({"a":[1]})", data8, "must be an object"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{}})", data8, "appears twice"},
      {R"({"__metadata__":{"k":1},)" + ok_entry + "}", data8, "must be a string"},
      {R"([1])", data8, "must be a JSON object"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", data8, "the text ends inside"},
      {R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data8, "an empty name"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.header);
    const std::string e = open_error(b.header, b.data, b.length);
    CAPTURE(e);
    CHECK(e.find(b.why) != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
    CHECK(e.rfind("[safetensors]", 0) == 0);
  }
  // Shorter than the length field, a folder, a missing file.
  CHECK_THROWS_WITH(SafetensorsReader(write_bytes("short.safetensors", "abc")),
                    doctest::Contains("shorter than the 8-byte header length"));
  CHECK_THROWS_WITH(SafetensorsReader(std::filesystem::temp_directory_path().string()),
                    doctest::Contains("safetensors"));
  CHECK_THROWS_WITH(SafetensorsReader(temp_path("missing.safetensors")),
                    doctest::Contains("missing.safetensors"));
}

// Random damage to a valid file: byte flips anywhere (the length field, the header, the data),
// truncation and extension. Each result either opens, and then every tensor it lists reads
// whole, or is refused with bitgrad's one-line error: never a crash, a hang or another
// exception.
TEST_CASE("cpu: damaged safetensors files open or are refused, never crash") {
  Generator gen(test_seed() + 32);
  const std::string clean_path = temp_path("fuzz_clean.safetensors");
  write_safetensors(clean_path, {{"wte", randn({5, 3}, gen)}, {"b", randn({4}, gen).to(DType::bf16)},
                                 {"h", randn({2, 2}, gen).to(DType::f16)}},
                    {{"format", "pt"}});
  std::ifstream in(clean_path, std::ios::binary);
  const std::string clean((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<double> u = rand({4000}, gen, 0, 1, DType::f64).to_vector<double>();
  int opened = 0, refused = 0;
  for (size_t trial = 0; trial < 1000; ++trial) {
    std::string bytes = clean;
    const double kind = u[trial * 4], where = u[trial * 4 + 1], what = u[trial * 4 + 2];
    const size_t at = std::min(bytes.size() - 1, size_t(where * double(bytes.size())));
    if (kind < 0.6) {
      bytes[at] = char(int(what * 256));  // one byte anywhere
    } else if (kind < 0.75) {
      bytes[size_t(what * 8)] = char(int(where * 256));  // the length field
    } else if (kind < 0.9) {
      bytes.resize(at);  // truncated
    } else {
      bytes += std::string(size_t(what * 40) + 1, char(int(where * 256)));  // extended
    }
    const std::string path = write_bytes("fuzz.safetensors", bytes);
    try {
      const SafetensorsReader r(path);
      for (const SafetensorsEntry& e : r.entries()) (void)r.read(e.name);
      ++opened;
    } catch (const Error& e) {
      const std::string msg = e.what();
      CHECK(msg.find('\n') == std::string::npos);
      CHECK(msg.rfind("[safetensors]", 0) == 0);
      ++refused;
    }
  }
  MESSAGE(opened, " damaged files opened (a flipped data byte is still a valid file), ", refused,
          " refused");
  CHECK(refused > 100);
}

}  // namespace bg::test
