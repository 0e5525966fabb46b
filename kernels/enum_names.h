// enum_names.h: one list per enum gives both its values and their names (MLX's enum <-> string
// pairs, as an X-macro), so a name can never be missing, misspelt in a second place or out of
// order. Every config key, checkpoint attribute and message that names an enum value goes
// through enum_name / parse_enum:
//   #define BG_MATMUL_PRECISIONS(X) X(fp32, "fp32") X(tf32, "tf32") X(bf16, "bf16")
//   BG_NAMED_ENUM(MatmulPrecision, BG_MATMUL_PRECISIONS)
// Parsing is exact (case and spelling): a name that is not in the list is refused.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bg {

// Specialised by BG_NAMED_ENUM: the names in value order.
template <typename E>
struct EnumNames;

#define BG_ENUM_VALUE_(id, name) id,
#define BG_ENUM_NAME_(id, name) name,
// Defines `enum class Enum : uint8_t` from LIST's X(identifier, "name") entries and its names.
#define BG_NAMED_ENUM(Enum, LIST)                                     \
  enum class Enum : uint8_t { LIST(BG_ENUM_VALUE_) };                 \
  template <>                                                         \
  struct EnumNames<Enum> {                                            \
    static constexpr const char* names[] = {LIST(BG_ENUM_NAME_)};     \
    static constexpr size_t count = sizeof(names) / sizeof(names[0]); \
  };

template <typename E>
constexpr size_t enum_count() {
  return EnumNames<E>::count;
}

template <typename E>
const char* enum_name(E value) {
  const size_t i = size_t(value);
  return i < EnumNames<E>::count ? EnumNames<E>::names[i] : "?";
}

// The value named `name` exactly; false (and *out untouched) for any other string.
template <typename E>
bool parse_enum(const std::string& name, E* out) {
  for (size_t i = 0; i < EnumNames<E>::count; ++i)
    if (name == EnumNames<E>::names[i]) {
      *out = E(i);
      return true;
    }
  return false;
}

// Every name, in value order (a config key's choices).
template <typename E>
std::vector<std::string> enum_names() {
  return std::vector<std::string>(EnumNames<E>::names, EnumNames<E>::names + EnumNames<E>::count);
}

// "a, b or c": the names as a message lists them.
template <typename E>
std::string enum_names_text() {
  std::string s;
  for (size_t i = 0; i < EnumNames<E>::count; ++i) {
    if (i > 0) s += i + 1 == EnumNames<E>::count ? " or " : ", ";
    s += EnumNames<E>::names[i];
  }
  return s;
}

// Every value, in order (tests run each through the ops that take it).
template <typename E>
std::vector<E> enum_values() {
  std::vector<E> v;
  for (size_t i = 0; i < EnumNames<E>::count; ++i) v.push_back(E(i));
  return v;
}

}  // namespace bg
