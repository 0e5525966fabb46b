// error.h: bitgrad's one error type. Messages read "[op] what went wrong"; apps print the
// message on one line and exit non-zero. The library itself never exits.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace bg {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A device allocation the GPU cannot hold: what a caller may answer with a smaller batch.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

// A double in the fewest significant digits that read back to it (so a message never rounds a
// bound into the value it refuses: "1 is outside [1e-09, 0.999999999]", not "[1e-09, 1]").
std::string shortest_text(double v);

namespace detail {
template <typename T>
void put(std::ostream& os, const T& v) {
  if constexpr (std::is_floating_point_v<T>)
    os << shortest_text(double(v));
  else
    os << v;
}
}  // namespace detail

template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (detail::put(os, args), ...);
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(const char* op, const Args&... args) {
  throw Error(str_cat("[", op, "] ", args...));
}

#define BG_CHECK(cond, op, ...)               \
  do {                                        \
    if (!(cond)) ::bg::fail(op, __VA_ARGS__); \
  } while (0)

}  // namespace bg
