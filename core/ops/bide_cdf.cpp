// bide_cdf.cpp: the BIDE law in value order, its CDF and its quantile.
//
// Order keys sort the finite patterns by value; the two sign halves of the keys are each one
// contiguous pattern range, and so is any aligned key block inside a half. The CDF at key e - 1
// (e keys at or below it) is a sum of such blocks read off e's digits: the lower half if e
// reaches it, then, digit by digit from the top, the sub-blocks below e's digit, in order. The
// quantile searches the same digits: at each stage it sums the bracket's sub-blocks in order
// until the CDF reaches q, so every comparison it makes is the CDF's own sum at that point
// (quantile(cdf(x)) == x to the bit).
//
// Cost: one SICK pass per stage (the kernels tile each row's [lo, hi) only, so a pass's work is
// the patterns it covers): the normaliser's pass over all patterns, then blocks half as long at
// each stage, half the patterns in all. A bisection that evaluated a whole CDF at each of its 16
// steps cost about 33 passes' work.
#include <algorithm>
#include <cmath>

#include "../bide.h"
#include "../dispatch.h"
#include "bide_internal.h"

namespace bg {
using namespace bide_internal;
namespace {

// Bits per digit: 1, a bisection. Wider digits mean fewer passes, but each pass then runs one
// row per sub-block and a row's fixed cost (loading W, and the precomputed kernel's tables)
// outweighs the passes saved: radix 16 made the forecast's draw 2x slower on an H100.
constexpr int kRadixBits = 1;
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
    half_ = int64_t(1) << (code.bits - 1);
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
    for (int left = code.bits - 1; left > 0;) {
      const int b = left % kRadixBits ? left % kRadixBits : kRadixBits;
      stage_bits_.push_back(b);
      max_groups_ = std::max(max_groups_, (size_t(1) << b) - 1);
      left -= b;
    }
    // The normaliser: the finite lower and upper halves and the non-finite patterns (Inf, NaN)
    // of each half, one pass; groups empty for every example are left out.
    std::vector<Ranges> groups(2);
    for (size_t i = 0; i < n_; ++i) {
      add_block(groups[0], 0, half_);
      add_block(groups[1], half_, 2 * half_);
    }
    if (code.is_float())
      for (int64_t start : {int64_t(0), half_}) {
        Ranges nf;
        for (size_t i = 0; i < n_; ++i) {
          nf.lo.push_back(start | inf_);
          nf.hi.push_back(start + half_);
        }
        groups.push_back(nf);
      }
    std::vector<int> kept;
    Ranges all;
    for (int g = 0; g < int(groups.size()); ++g) {
      if (g > 0 && !any_inside(groups[size_t(g)])) continue;  // the lower half always stays
      kept.push_back(g);
      all.lo.insert(all.lo.end(), groups[size_t(g)].lo.begin(), groups[size_t(g)].lo.end());
      all.hi.insert(all.hi.end(), groups[size_t(g)].hi.begin(), groups[size_t(g)].hi.end());
    }
    max_groups_ = std::max(max_groups_, kept.size());
    const std::vector<double> m = masses(all, half_);
    log_z_.assign(n_, -INFINITY);
    for (size_t k = 0; k < kept.size(); ++k)
      for (size_t i = 0; i < n_; ++i) log_z_[i] = log_add(log_z_[i], m[k * n_ + i]);
    lower_.assign(m.begin(), m.begin() + std::ptrdiff_t(n_));
  }

  const std::vector<double>& log_z() const { return log_z_; }
  // The finite patterns of the lower key half.
  const std::vector<double>& lower_half() const { return lower_; }
  int64_t half() const { return half_; }
  // The digit stages' widths in bits, from the top (3, 4, 4, 4 for 16 bits).
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
  // all rows (W replicated per group), a second only where a range meets two support pieces.
  std::vector<double> masses(const Ranges& rows, int64_t block) {
    const size_t count = rows.lo.size(), groups = count / n_;
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
    std::vector<double> out = run(first, groups, block);
    if (any_second) {
      const std::vector<double> more = run(second, groups, block);
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

  // One SICK pass over `groups` copies of the examples, ranges [lo, hi) as (2, rows), blocks of
  // up to `block` patterns.
  std::vector<double> run(const std::vector<int64_t>& bounds, size_t groups, int64_t block) {
    const int64_t rows = int64_t(groups * n_);
    if (groups > 1 &&
        replicated_ < groups) {  // W and r once per group of the largest pass, made once
      const int64_t g = int64_t(std::max(groups, max_groups_));
      rep_ = p_;
      rep_.w = p_.w.unsqueeze(0)
                   .expand({g, p_.n, p_.hidden, p_.w.size(2)})
                   .contiguous()
                   .reshape({g * p_.n, p_.hidden, p_.w.size(2)});
      rep_.r = p_.r.unsqueeze(0)
                   .expand({g, p_.n, p_.hidden})
                   .contiguous()
                   .reshape({g * p_.n, p_.hidden});
      replicated_ = size_t(g);
    }
    Prepared q = p_;
    if (groups > 1) {
      q.n = rows;
      q.w = rep_.w.slice(0, 0, rows);
      q.r = rep_.r.slice(0, 0, rows);
    }
    q.precomputed = p_.precomputed && block >= kPrecomputedMinBlock;
    const Tensor b = from_vector(bounds, {2, rows}, p_.w.device());
    const Tensor lz = run_sick(q, pass_opt_, 0, b.slice(0, 0, 1).reshape({rows}),
                               b.slice(0, 1, 2).reshape({rows}))
                          .logz;
    if (f32_) {
      const std::vector<float> v = lz.to_vector<float>();
      return std::vector<double>(v.begin(), v.end());
    }
    return lz.to_vector<double>();
  }

  Prepared p_, rep_;
  BideOptions opt_, pass_opt_;
  size_t n_, replicated_ = 0, max_groups_ = 1;
  bool f32_;
  int64_t half_ = 0, inf_ = 0;
  // Each example's support pieces (one, or two with a per-example table), host [lo, hi).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> pieces_;
  std::vector<int> stage_bits_;
  std::vector<double> lower_, log_z_;
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
  const int64_t half = mass.half();
  // e = key + 1 keys lie at or below x. The largest key (integer codes: its pattern is finite)
  // is the sum up to the key below it, then that key alone.
  std::vector<int64_t> e(count), base(count, 0);
  std::vector<bool> top(count);
  std::vector<double> acc(count, -INFINITY);
  for (size_t i = 0; i < count; ++i) {
    e[i] = int64_t(opt.code.order_key(uint32_t(xs[i]))) + 1;
    top[i] = e[i] == 2 * half;
    if (top[i]) e[i] -= 1;
    if (e[i] >= half) {
      acc[i] = mass.lower_half()[i];
      base[i] = half;
    }
  }
  int shift = bits - 1;
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
  if (std::find(top.begin(), top.end(), true) != top.end()) {
    Ranges rows;
    for (size_t i = 0; i < count; ++i) mass.add_block(rows, e[i], top[i] ? e[i] + 1 : e[i]);
    const std::vector<double> last = mass.masses(rows, 1);
    for (size_t i = 0; i < count; ++i)
      if (top[i]) acc[i] = log_add(acc[i], last[i]);
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
  std::vector<int64_t> lo(count, 0);
  std::vector<double> acc(count, -INFINITY);
  for (size_t i = 0; i < count; ++i)
    if (!reaches(mass.lower_half()[i], i)) {
      acc[i] = mass.lower_half()[i];
      lo[i] = mass.half();
    }
  int shift = opt.code.bits - 1;
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
      for (; g + 1 < radix; ++g) {  // the last sub-block needs no test: the bracket holds q
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
