#include "error.h"

#include <charconv>

namespace bg {

std::string shortest_text(double v) {
  // std::to_chars with no format: the fewest digits that read back to v, fixed or scientific
  // whichever is shorter (fixed on a tie: 70000, not 7e+04); one call, no trial loop, so
  // writers of millions of numbers (forecast --paths) pay nothing for exactness.
  char buf[32];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace bg
