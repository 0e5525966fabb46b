// bide_internal.h: what the BIDE op files share (bide.cpp runs the SICK passes; bide_cdf.cpp
// builds the value-order CDF and quantile on them). Not a public header.
#pragma once

#include <utility>
#include <vector>

#include "../bide.h"

namespace bg::bide_internal {

struct Prepared {
  Tensor w, r;  // contiguous, in the kernel's compute dtype
  int64_t n, hidden;
  bool precomputed;
  bool half = false;
};

Prepared prepare(const Tensor& w, const Tensor& r, const BideOptions& opt, const char* op);

struct SickResult {
  Tensor m, s, gr, gw, stats, sample, logz;
};

// Runs the fused pass over per-row ranges lo/hi ((rows) i64), or over all 2^B patterns when
// they are undefined. rows (0: N) may be a multiple of N: row i is example i % N's law.
SickResult run_sick(const Prepared& p, const BideOptions& opt, uint32_t outputs, const Tensor& lo,
                    const Tensor& hi, uint64_t seed = 0, int64_t rows = 0);

// Example n's support pieces as host [lo, hi) pairs (empty pieces included); table is
// opt.ranges_host or undefined.
std::vector<std::pair<int64_t, int64_t>> host_pieces(const BideOptions& opt, const Tensor& table,
                                                     int64_t n);

}  // namespace bg::bide_internal
