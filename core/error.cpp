#include "error.h"

#include <cstdio>
#include <cstdlib>

namespace bg {

std::string shortest_text(double v) {
  char buf[40];
  // Whole numbers of up to 17 digits are written out (70000, not 7e+04): start at their width.
  const double mag = v < 0 ? -v : v;
  int first = 1;
  for (double p = 10; first < 17 && mag >= p; p *= 10) ++first;
  if (mag >= 1e17) first = 1;
  for (int digits = first; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v || v != v) break;  // NaN equals nothing: one digit will do
  }
  return buf;
}

}  // namespace bg
