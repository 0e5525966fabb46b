// bide_cdf.cpp: the BIDE law in value order, its CDF and its quantile.
//
// Order keys sort the finite patterns by value; any aligned key block inside one sign half is
// one contiguous pattern range. The keys [0, 2^B) are split into aligned chunks (the two sign
// halves), then each chunk by digits: the mass below key e is the chunks below e's chunk, in
// order, then digit by digit from the top, the sub-blocks below e's digit, in order. The
// quantile searches the same digits: at each stage it sums the bracket's sub-blocks in order
// until the CDF reaches q, so every comparison it makes is the CDF's own sum at that point
// (quantile(cdf(x)) == x to the bit).
//
// Cost: one SICK pass per stage. The normaliser's pass writes each chunk's mass as its own row;
// each later stage covers only its bracket, halving: the search adds half a normaliser's work
// in 15 more passes. Rows of one pass share their example's W (no copies): row g * N + i is
// example i's block g. More chunks (16 rows of 4,096 patterns) or a last stage of single keys
// (32 rows of one pattern) save passes but cost more than they save: the SICK kernels pay a
// fixed set-up per row (measured on an H100: the quantile of 6,400 laws 15.6 ms as here, 16.4
// and 18.0 ms with 4 and 8 chunks, 28.9 ms with a 32-key last stage).
#include <algorithm>
#include <cmath>

#include "../bide.h"
#include "../dispatch.h"
#include "bide_internal.h"

namespace bg {
using namespace bide_internal;
namespace {

// The first pass's chunks: 2^kChunkBits, the sign halves. The last stage's sub-blocks are
// single keys, 2^kLeafBits of them: a bisection to the end.
constexpr int kChunkBits = 1;
constexpr int kLeafBits = 1;
// Passes over blocks smaller than this (patterns a row) take the bruteforce kernel: the
// precomputed kernel's per-row table set-up pays for itself only over longer ranges.
constexpr int64_t kPrecomputedMinBlock = int64_t(1) << 12;

double log_add(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  return std::max(a, b) + std::log1p(std::exp(-std::fabs(a - b)));
}

// Per (group, example) [lo, hi) pattern ranges of one pass, group-major: row g * n + i.
struct Ranges {
  std::vector<int64_t> lo, hi;
};

// The masses of value-order blocks and the normaliser, on the host in f64 (summed there in one
// fixed order), each read from the passes in the dtype they produce (f32 unless W is f64).
class ValueOrderMass {
 public:
  ValueOrderMass(const Tensor& w, const Tensor& r, const BideOptions& opt, const char* op)
      : p_(prepare(w, r, opt, op)),
        opt_(opt),
        n_(static_cast<size_t>(p_.n)),
        f32_(stats_dtype(p_.w.dtype() == DType::f64 ? DType::f64 : DType::f32) == DType::f32) {
    const BideCode& code = opt.code;
    const int bits = code.bits;
    half_ = int64_t(1) << (bits - 1);
    inf_ = code.is_float() ? ((int64_t(1) << code.exponent_bits()) - 1) << code.mantissa_bits()
                           : half_;
    const Tensor table = opt.ranges.defined() ? opt.ranges_host : Tensor();
    pieces_.resize(table.defined() ? 2 : 1, std::vector<std::pair<int64_t, int64_t>>(n_));
    for (size_t i = 0; i < n_; ++i) {
      const auto row = host_pieces(opt, table, int64_t(i));
      for (size_t j = 0; j < pieces_.size(); ++j) pieces_[j][i] = row[j];
    }
    // The passes see explicit ranges only: the support is applied here.
    pass_opt_ = opt;
    pass_opt_.ranges = Tensor();
    pass_opt_.ranges_host = Tensor();
    // Chunks lie inside one sign half (at least 2 of them); the digits below them: one bit at a
    // time, then the leaf's single keys.
    chunk_shift_ = bits - std::min(kChunkBits, bits);
    const int leaf = std::min(kLeafBits, chunk_shift_);
    for (int left = chunk_shift_; left > leaf; --left) stage_bits_.push_back(1);
    if (leaf > 0) stage_bits_.push_back(leaf);
    // The normaliser: each chunk's finite patterns, then the non-finite patterns (Inf, NaN) of
    // each half, one pass; non-finite groups empty for every example are left out.
    const int64_t chunks = int64_t(1) << (bits - chunk_shift_), size = int64_t(1) << chunk_shift_;
    Ranges all;
    for (int64_t g = 0; g < chunks; ++g)
      for (size_t i = 0; i < n_; ++i) add_block(all, g * size, (g + 1) * size);
    if (code.is_float())
      for (int64_t start : {int64_t(0), half_}) {
        Ranges nf;
        for (size_t i = 0; i < n_; ++i) {
          nf.lo.push_back(start | inf_);
          nf.hi.push_back(start + half_);
        }
        if (!any_inside(nf)) continue;
        all.lo.insert(all.lo.end(), nf.lo.begin(), nf.lo.end());
        all.hi.insert(all.hi.end(), nf.hi.begin(), nf.hi.end());
      }
    const std::vector<double> m = masses(all, size);
    log_z_.assign(n_, -INFINITY);
    for (size_t k = 0; k < m.size() / n_; ++k)
      for (size_t i = 0; i < n_; ++i) log_z_[i] = log_add(log_z_[i], m[k * n_ + i]);
    chunk_mass_.assign(m.begin(), m.begin() + std::ptrdiff_t(size_t(chunks) * n_));
  }

  const std::vector<double>& log_z() const { return log_z_; }
  // Chunk g's finite patterns, example i.
  double chunk(int64_t g, size_t i) const { return chunk_mass_[size_t(g) * n_ + i]; }
  int64_t chunks() const { return int64_t(1) << (opt_.code.bits - chunk_shift_); }
  int chunk_shift() const { return chunk_shift_; }
  // The digit stages' widths in bits, from the top, below the chunks (1, ..., 1, 5 for 16 bits).
  const std::vector<int>& stage_bits() const { return stage_bits_; }
  DType dtype() const { return f32_ ? DType::f32 : DType::f64; }
  // Rounds a value to the dtype the ops return.
  double round(double v) const { return f32_ ? double(float(v)) : v; }

  // The finite patterns of key block [klo, khi) (inside one half; empty when khi <= klo) as a
  // pattern range, appended to `to`.
  void add_block(Ranges& to, int64_t klo, int64_t khi) const {
    int64_t lo = 0, hi = 0;
    if (khi > klo) {
      const int64_t a = opt_.code.from_order_key(uint32_t(klo)),
                    b = opt_.code.from_order_key(uint32_t(khi - 1));
      const int64_t start = std::min(a, b) & half_;  // the sign half's first pattern
      hi = std::min(std::max(a, b) + 1, start + inf_);
      lo = std::min(std::min(a, b), hi);
    }
    to.lo.push_back(lo);
    to.hi.push_back(hi);
  }

  // log mass of each row's range inside its example's support (-inf when empty): one pass over
  // all rows, a second only where a range meets two support pieces.
  std::vector<double> masses(const Ranges& rows, int64_t block) {
    const size_t count = rows.lo.size();
    std::vector<int64_t> first(2 * count, 0), second(2 * count, 0);
    bool any_second = false;
    for (size_t k = 0; k < count; ++k) {
      int found = 0;
      for (const auto& piece : pieces_) {
        const auto& p = piece[k % n_];
        const int64_t lo = std::max(rows.lo[k], p.first), hi = std::min(rows.hi[k], p.second);
        if (hi <= lo) continue;
        std::vector<int64_t>& to = found++ == 0 ? first : second;
        to[k] = lo;
        to[count + k] = hi;
        any_second = any_second || found == 2;
      }
    }
    std::vector<double> out = run(first, block);
    if (any_second) {
      const std::vector<double> more = run(second, block);
      for (size_t k = 0; k < count; ++k)
        if (second[count + k] > second[k]) out[k] = log_add(out[k], more[k]);
    }
    for (size_t k = 0; k < count; ++k)
      if (first[count + k] <= first[k]) out[k] = -INFINITY;
    return out;
  }

 private:
  bool any_inside(const Ranges& g) const {
    for (size_t i = 0; i < n_; ++i)
      for (const auto& piece : pieces_)
        if (std::min(g.hi[i], piece[i].second) > std::max(g.lo[i], piece[i].first)) return true;
    return false;
  }

  // One SICK pass over ranges [lo, hi) as (2, rows) (rows a multiple of the examples), blocks
  // of up to `block` patterns.
  std::vector<double> run(const std::vector<int64_t>& bounds, int64_t block) {
    const int64_t rows = int64_t(bounds.size() / 2);
    Prepared q = p_;
    q.precomputed = p_.precomputed && block >= kPrecomputedMinBlock;
    const Tensor b = from_vector(bounds, {2, rows}, p_.w.device());
    const Tensor lz = run_sick(q, pass_opt_, 0, b.slice(0, 0, 1).reshape({rows}),
                               b.slice(0, 1, 2).reshape({rows}), 0, rows)
                          .logz;
    if (f32_) {
      const std::vector<float> v = lz.to_vector<float>();
      return std::vector<double>(v.begin(), v.end());
    }
    return lz.to_vector<double>();
  }

  Prepared p_;
  BideOptions opt_, pass_opt_;
  size_t n_;
  bool f32_;
  int64_t half_ = 0, inf_ = 0;
  int chunk_shift_ = 0;
  // Each example's support pieces (one, or two with a per-example table), host [lo, hi).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> pieces_;
  std::vector<int> stage_bits_;
  std::vector<double> chunk_mass_, log_z_;
};

// log P(X <= x_n) in f64 on the host: the sums bide_quantile meets.
std::vector<double> log_cdf_host(const Tensor& w, const Tensor& r, const Tensor& x,
                                 const BideOptions& opt, DType* dtype) {
  const int64_t n = w.size(0);
  BG_CHECK(x.numel() == n && x.dtype() == DType::i64, "bide_log_cdf", "x must be (", n,
           ",) i64 patterns");
  const std::vector<int64_t> xs = x.to_vector<int64_t>();
  const int bits = opt.code.bits;
  for (int64_t i = 0; i < n; ++i)
    BG_CHECK(xs[size_t(i)] >= 0 && xs[size_t(i)] < (int64_t(1) << bits) &&
                 opt.code.finite(uint32_t(xs[size_t(i)])),
             "bide_log_cdf", "x[", i, "] = ", xs[size_t(i)], " is not a finite ", bits,
             "-bit pattern");
  ValueOrderMass mass(w, r, opt, "bide_log_cdf");
  *dtype = mass.dtype();
  const size_t count = static_cast<size_t>(n);
  // e = key + 1 keys lie at or below x: the chunks below e's, then e's digits.
  std::vector<int64_t> e(count), base(count);
  std::vector<double> acc(count, -INFINITY);
  for (size_t i = 0; i < count; ++i) {
    e[i] = int64_t(opt.code.order_key(uint32_t(xs[i]))) + 1;
    const int64_t below = e[i] >> mass.chunk_shift();
    for (int64_t g = 0; g < below; ++g) acc[i] = log_add(acc[i], mass.chunk(g, i));
    base[i] = below << mass.chunk_shift();
  }
  int shift = mass.chunk_shift();
  for (const int sb : mass.stage_bits()) {
    shift -= sb;
    const int64_t radix = int64_t(1) << sb, size = int64_t(1) << shift;
    std::vector<int64_t> digit(count);
    for (size_t i = 0; i < count; ++i) digit[i] = (e[i] - base[i]) >> shift;
    Ranges rows;
    for (int64_t g = 0; g + 1 < radix; ++g)
      for (size_t i = 0; i < count; ++i) {
        const int64_t klo = base[i] + g * size;
        mass.add_block(rows, klo, g < digit[i] ? klo + size : klo);
      }
    const std::vector<double> m = mass.masses(rows, size);
    for (size_t i = 0; i < count; ++i) {
      for (int64_t g = 0; g < digit[i]; ++g) acc[i] = log_add(acc[i], m[size_t(g) * count + i]);
      base[i] += digit[i] * size;
    }
  }
  // At most 1: the finite blocks, summed in another order than the normaliser, can round above it.
  for (size_t i = 0; i < count; ++i) acc[i] = std::min(acc[i] - mass.log_z()[i], 0.0);
  return acc;
}

}  // namespace

Tensor bide_log_cdf(const Tensor& w, const Tensor& r, const Tensor& x, const BideOptions& opt) {
  NoGradGuard ng;
  DType dtype;
  const std::vector<double> lc = log_cdf_host(w, r, x, opt, &dtype);
  return from_vector(lc, {w.size(0)}).to(w.device(), dtype);
}

Tensor bide_cdf(const Tensor& w, const Tensor& r, const Tensor& x, const BideOptions& opt) {
  NoGradGuard ng;
  DType dtype;
  std::vector<double> c = log_cdf_host(w, r, x, opt, &dtype);
  for (double& v : c) v = std::exp(v);
  return from_vector(c, {w.size(0)}).to(w.device(), dtype);
}

Tensor bide_quantile(const Tensor& w, const Tensor& r, const Tensor& q, const BideOptions& opt) {
  NoGradGuard ng;
  const int64_t n = w.size(0);
  BG_CHECK(q.numel() == n, "bide_quantile", "q must have ", n, " values");
  const std::vector<double> qs = q.to_vector<double>();
  for (double v : qs) BG_CHECK(v > 0 && v <= 1, "bide_quantile", "q must be in (0, 1], got ", v);
  ValueOrderMass mass(w, r, opt, "bide_quantile");
  const size_t count = static_cast<size_t>(n);
  const auto reaches = [&](double log_below, size_t i) {
    return mass.round(std::exp(std::min(log_below - mass.log_z()[i], 0.0))) >= qs[i];
  };
  // The smallest key whose CDF reaches q. lo is the bracket's first key, acc the mass below it.
  // The last chunk and the last sub-block of a stage need no test: the bracket holds q.
  std::vector<int64_t> lo(count, 0);
  std::vector<double> acc(count, -INFINITY);
  for (size_t i = 0; i < count; ++i) {
    int64_t g = 0;
    for (; g + 1 < mass.chunks(); ++g) {
      const double below = log_add(acc[i], mass.chunk(g, i));
      if (reaches(below, i)) break;
      acc[i] = below;
    }
    lo[i] = g << mass.chunk_shift();
  }
  int shift = mass.chunk_shift();
  for (const int sb : mass.stage_bits()) {
    shift -= sb;
    const int64_t radix = int64_t(1) << sb, size = int64_t(1) << shift;
    Ranges rows;
    for (int64_t g = 0; g + 1 < radix; ++g)
      for (size_t i = 0; i < count; ++i)
        mass.add_block(rows, lo[i] + g * size, lo[i] + (g + 1) * size);
    const std::vector<double> m = mass.masses(rows, size);
    for (size_t i = 0; i < count; ++i) {
      int64_t g = 0;
      for (; g + 1 < radix; ++g) {
        const double below = log_add(acc[i], m[size_t(g) * count + i]);
        if (reaches(below, i)) break;
        acc[i] = below;
      }
      lo[i] += g * size;
    }
  }
  // q above the finite mass (the non-finite patterns' share, or rounding): the largest finite.
  int64_t kmax = int64_t(opt.code.count()) - 1;
  while (!opt.code.finite(opt.code.from_order_key(uint32_t(kmax)))) --kmax;
  std::vector<int64_t> out(count);
  for (size_t i = 0; i < count; ++i)
    out[i] = opt.code.from_order_key(uint32_t(std::min(lo[i], kmax)));
  return from_vector(out, {n}, w.device());
}

}  // namespace bg
