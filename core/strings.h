// strings.h: the suffix test every file-kind and tensor-name check uses (a file's extension, a
// Conv1D weight's name), written once rather than as magic lengths at each place.
#pragma once
#include <string_view>

namespace bg {

// Whether `s` ends with `suffix`.
inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace bg
