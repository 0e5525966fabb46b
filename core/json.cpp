#include "json.h"

#include <unordered_set>

#include <cstdio>

#include "error.h"

namespace bg {

const char* json_kind_name(JsonValue::Kind kind) {
  switch (kind) {
#define BG_JSON_KIND_NAME(name, text) \
  case JsonValue::Kind::name:         \
    return text;
    BG_JSON_KINDS(BG_JSON_KIND_NAME)
#undef BG_JSON_KIND_NAME
  }
  return "a value";
}

const JsonValue* JsonValue::find(const std::string& key) const {
  for (const auto& [name, value] : members)
    if (name == key) return &value;
  return nullptr;
}

uint64_t JsonValue::as_uint64(const char* op, const std::string& what) const {
  const bool digits = kind == Kind::number && !text.empty() &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  uint64_t v = 0;
  bool fits = digits;
  for (size_t i = 0; fits && i < text.size(); ++i) {
    const uint64_t d = uint64_t(text[i] - '0');
    fits = v <= (UINT64_MAX - d) / 10;
    v = v * 10 + d;
  }
  BG_CHECK(fits, op, what, " must be a non-negative integer, got ",
           kind == Kind::number ? text : std::string(json_kind_name(kind)));
  return v;
}

namespace {

class Parser {
 public:
  Parser(std::string_view text, const char* op, const std::string& what, int max_depth)
      : s_(text), op_(op), what_(what), max_depth_(max_depth) {}

  JsonValue parse() {
    JsonValue v = value(0);
    skip_space();
    if (i_ != s_.size()) fail_here("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail_here(const std::string& why) const {
    fail(op_, what_, ": ", why, " at byte ", i_);
  }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  char peek() const {
    if (i_ >= s_.size()) fail_here("the text ends inside a value");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail_here(std::string("expected '") + c + "'");
    ++i_;
  }
  void literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) fail_here("not a JSON value");
    i_ += word.size();
  }

  JsonValue value(int depth) {
    skip_space();
    JsonValue v;
    const char c = peek();
    if (c == '{' || c == '[') {
      if (depth >= max_depth_) fail_here("nested deeper than " + std::to_string(max_depth_));
      return c == '{' ? object(depth + 1) : array(depth + 1);
    }
    if (c == '"') {
      v.kind = JsonValue::Kind::string;
      v.text = string();
    } else if (c == 't' || c == 'f') {
      v.kind = JsonValue::Kind::boolean;
      v.boolean = c == 't';
      literal(v.boolean ? "true" : "false");
    } else if (c == 'n') {
      literal("null");
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = JsonValue::Kind::number;
      v.text = number();
    } else {
      fail_here("not a JSON value");  // NaN, Infinity, a bare word, a stray comma
    }
    return v;
  }

  JsonValue object(int depth) {
    JsonValue v;
    v.kind = JsonValue::Kind::object;
    expect('{');
    skip_space();
    if (peek() == '}') {
      ++i_;
      return v;
    }
    std::unordered_set<std::string> seen;  // the duplicate check in O(1) a key, not O(keys)
    while (true) {
      skip_space();
      if (peek() != '"') fail_here("expected a string key");
      const size_t at = i_;
      std::string key = string();
      if (!seen.insert(key).second) {
        i_ = at;
        fail_here("the key \"" + key + "\" appears twice");
      }
      skip_space();
      expect(':');
      v.members.emplace_back(std::move(key), value(depth));
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      return v;
    }
  }

  JsonValue array(int depth) {
    JsonValue v;
    v.kind = JsonValue::Kind::array;
    expect('[');
    skip_space();
    if (peek() == ']') {
      ++i_;
      return v;
    }
    while (true) {
      v.items.push_back(value(depth));
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect(']');
      return v;
    }
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  std::string number() {
    const size_t start = i_;
    auto digits = [&] {
      const size_t from = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == from) fail_here("a number needs digits");
    };
    if (s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else {
      digits();
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      digits();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    return std::string(s_.substr(start, i_ - start));
  }

  unsigned hex4() {
    if (i_ + 4 > s_.size()) fail_here("a \\u escape needs four hex digits");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else fail_here("a \\u escape needs four hex digits");
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail_here("the text ends inside a string");
      const char c = s_[i_];
      if (c == '"') {
        ++i_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail_here("a control character inside a string");
      if (c != '\\') {
        out += c;
        ++i_;
        continue;
      }
      ++i_;
      if (i_ >= s_.size()) fail_here("the text ends inside a string");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {  // a surrogate pair's high half
            if (s_.substr(i_, 2) != "\\u") fail_here("a lone surrogate in a \\u escape");
            i_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail_here("a lone surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail_here("a lone surrogate in a \\u escape");
          }
          append_utf8(out, cp);
          break;
        }
        default:
          --i_;
          fail_here(std::string("an unknown escape \\") + e);
      }
    }
  }

  std::string_view s_;
  const char* op_;
  const std::string& what_;
  int max_depth_;
  size_t i_ = 0;
};

}  // namespace

JsonValue parse_json(std::string_view text, const char* op, const std::string& what,
                     int max_depth) {
  return Parser(text, op, what, max_depth).parse();
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace bg
