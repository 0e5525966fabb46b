// json.h: a strict JSON (RFC 8259) reader for headers bitgrad reads from other tools' files (a
// safetensors header). Hostile input gets a one-line error naming the byte where it went wrong:
// no NaN or Infinity, no trailing commas, no duplicate keys, no control characters in strings,
// nesting at most max_depth deep, nothing after the value but whitespace. Numbers keep their
// text; as_uint64 reads a non-negative integer literal exactly, or refuses it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bg {

// The kinds of JSON value, with their names for messages.
#define BG_JSON_KINDS(X)                                                                  \
  X(null, "null") X(boolean, "a boolean") X(number, "a number") X(string, "a string") \
  X(array, "an array") X(object, "an object")

struct JsonValue {
#define BG_JSON_KIND_ENUM(name, text) name,
  enum class Kind { BG_JSON_KINDS(BG_JSON_KIND_ENUM) };
#undef BG_JSON_KIND_ENUM
  Kind kind = Kind::null;
  bool boolean = false;
  std::string text;                                       // a string's value, a number's literal
  std::vector<JsonValue> items;                           // an array's
  std::vector<std::pair<std::string, JsonValue>> members;  // an object's, in file order

  // The member named `key`, or nullptr (an object; nullptr for any other kind).
  const JsonValue* find(const std::string& key) const;
  // The number as a uint64_t, when it is a non-negative integer literal (no fraction, no
  // exponent, no sign) that fits; else throws "[op] WHAT must be a non-negative integer, got
  // TEXT".
  uint64_t as_uint64(const char* op, const std::string& what) const;
};
const char* json_kind_name(JsonValue::Kind kind);

// Parses `text` as one JSON value. Errors read "[op] WHAT: <reason> at byte N".
JsonValue parse_json(std::string_view text, const char* op, const std::string& what,
                     int max_depth = 64);

// `s` as a JSON string literal, quotes included (", \ and control characters escaped).
std::string json_quote(std::string_view s);

}  // namespace bg
