// bide.cpp: the BIDE ops. One SICK pass (kernels/{cpu,cuda}/sick) gives, per example, the max
// logit m, the sum s of exp(l - m) over the support and, when gradients are needed, the K-sums
// gr = sum e h and gw = sum e 1[z > 0] b; log p(y) = l_y - m - log s, and its backward is the
// small per-example kernel bide_log_prob_backward (Appendix C of the paper).
#include "../bide.h"

#include <cmath>
#include <cstring>

#include "../dispatch.h"
#include "bide_internal.h"

namespace bg {
namespace bide_internal {

Prepared prepare(const Tensor& w, const Tensor& r, const BideOptions& opt, const char* op) {
  bide_check(w, r, opt, op);
  Prepared p;
  p.n = w.size(0);
  p.hidden = w.size(1);
  // fp16 compute rounds W and r to f16 inside the CUDA kernel (no cast kernels).
  p.half = w.is_cuda() && opt.precision == SickPrecision::fp16;
  p.w = compute_input(w.detach());
  p.r = compute_input(r.detach());
  p.precomputed = bide_resolve_variant(opt, w.device(), p.n, p.hidden) == SickVariant::precomputed;
  return p;
}

// log(exp(a) + exp(b)) elementwise, -inf where both are.
Tensor logaddexp(const Tensor& a, const Tensor& b) {
  const Tensor mx = maximum(a, b);
  const Tensor safe = where(eq(mx, full({}, -INFINITY, mx.dtype(), mx.device())),
                            zeros({}, mx.dtype(), mx.device()), mx);
  return safe + log(exp(a - safe) + exp(b - safe));
}

int64_t support_hi(const BideOptions& opt) {
  return opt.support_hi < 0 ? (int64_t(1) << opt.code.bits) : opt.support_hi;
}

// Whether some example of the per-example table has a second, non-empty range.
bool two_piece_support(const BideOptions& opt) {
  const int64_t n = opt.ranges_host.size(1);
  const int64_t* t = static_cast<const int64_t*>(opt.ranges_host.data_ptr());
  for (int64_t i = 0; i < n; ++i)
    if (t[2 * n + i] < t[3 * n + i]) return true;
  return false;
}

// Runs the fused pass over per-example ranges lo/hi ((N) i64), or over all 2^B patterns when
// they are undefined.
SickResult run_sick(const Prepared& p, const BideOptions& opt, uint32_t outputs, const Tensor& lo,
                    const Tensor& hi, uint64_t seed, int64_t rows) {
  const Device dev = p.w.device();
  const DType sd = stats_dtype(p.w.dtype() == DType::f64 ? DType::f64 : DType::f32);
  if (rows == 0) rows = p.n;
  SickResult out;
  out.m = empty({rows}, sd, dev);
  out.s = empty({rows}, sd, dev);
  SickArgs a;
  a.rows = rows;
  a.w = p.w.kview();
  a.r = p.r.kview();
  Tensor lo_t = lo, hi_t = hi;
  if (lo_t.defined()) {
    lo_t = lo_t.contiguous();
    hi_t = hi_t.contiguous();
    a.lo = lo_t.kview();
    a.hi = hi_t.kview();
  }
  a.m = out.m.kview();
  a.s = out.s.kview();
  out.logz = empty({rows}, sd, dev);
  a.logz = out.logz.kview();
  a.half_compute = p.half;
  if (outputs & kSickGrad) {
    out.gr = empty({rows, p.hidden}, sd, dev);
    out.gw = empty({rows, p.hidden, opt.code.bits}, sd, dev);
    a.gr = out.gr.kview();
    a.gw = out.gw.kview();
  }
  if (outputs & kSickStats) {
    out.stats = empty({rows, 4}, sd, dev);
    a.stats = out.stats.kview();
  }
  if (outputs & kSickSample) {
    out.sample = empty({rows}, DType::i64, dev);
    a.sample = out.sample.kview();
  }
  a.code = opt.code;
  a.outputs = outputs;
  a.seed = seed;
  a.precomputed = p.precomputed;
  a.one_slice = opt.batch_invariant;
  ScratchArena scratch(dev);
  BG_DISPATCH(dev, sick_forward, a, scratch, stream_for(dev));
  return out;
}

// One contiguous pattern range per example: a piece of the support.
struct Piece {
  Tensor lo, hi;  // (N) i64 on the device; undefined: all 2^B patterns
};

// The support as SICK passes: one piece (all patterns, or [support_lo, support_hi)), or the
// per-example table's pieces; the second only when some example has a second range.
std::vector<Piece> support_pieces(const BideOptions& opt, int64_t n, Device dev) {
  if (opt.ranges.defined()) {
    std::vector<Piece> out{
        {opt.ranges.slice(0, 0, 1).reshape({n}), opt.ranges.slice(0, 1, 2).reshape({n})}};
    if (two_piece_support(opt))
      out.push_back(
          {opt.ranges.slice(0, 2, 3).reshape({n}), opt.ranges.slice(0, 3, 4).reshape({n})});
    return out;
  }
  if (opt.support_lo != 0 || support_hi(opt) != (int64_t(1) << opt.code.bits))
    return {{full({n}, double(opt.support_lo), DType::i64, dev),
             full({n}, double(support_hi(opt)), DType::i64, dev)}};
  return {Piece{}};
}

// Example n's support pieces as host [lo, hi) pairs (empty pieces included).
std::vector<std::pair<int64_t, int64_t>> host_pieces(const BideOptions& opt, const Tensor& table,
                                                     int64_t n) {
  if (!table.defined()) return {{opt.support_lo, support_hi(opt)}};
  const int64_t* t = static_cast<const int64_t*>(table.data_ptr());
  const int64_t cols = table.size(1);
  return {{t[n], t[cols + n]}, {t[2 * cols + n], t[3 * cols + n]}};
}

// Merges two passes over disjoint pattern sets into the pass over their union: every sum is
// rescaled from its own max to the common one (exact up to rounding).
SickResult merge_passes(const SickResult& a, const SickResult& b) {
  const Tensor mx = maximum(a.m, b.m);
  const Tensor m = where(eq(mx, full({}, -INFINITY, mx.dtype(), mx.device())),
                         zeros({}, mx.dtype(), mx.device()), mx);  // both empty: stays finite
  const Tensor ca = exp(a.m - m), cb = exp(b.m - m);
  SickResult out;
  out.m = m;
  out.s = ca * a.s + cb * b.s;
  out.logz = m + log(out.s);
  auto mix = [&](const Tensor& x, const Tensor& y) {
    if (!x.defined()) return Tensor();
    Shape col(size_t(x.ndim()), 1);
    col[0] = x.size(0);
    return ca.reshape(col) * x + cb.reshape(col) * y;
  };
  out.gr = mix(a.gr, b.gr);
  out.gw = mix(a.gw, b.gw);
  out.stats = mix(a.stats, b.stats);
  return out;
}

// Samples of the union of two pieces: Gumbel-max over the union is the larger of each piece's
// winning l + g, with g the same per-pattern noise both passes drew (sick_gumbel).
Tensor merge_samples(const Prepared& p, const BideOptions& opt, const SickResult& a,
                     const SickResult& b, uint64_t seed) {
  const Device dev = p.w.device();
  auto logits_at = [&](const Tensor& k) {
    Tensor l = empty({p.n}, p.w.dtype(), dev);
    BG_DISPATCH(dev, bide_logits, l.kview(), p.w.kview(), p.r.kview(), k.kview(), opt.code.bits,
                null_view(), null_view(), stream_for(dev));
    return l.to(Device::cpu(), DType::f64).to_vector<double>();
  };
  const std::vector<int64_t> ka = a.sample.to_vector<int64_t>(), kb = b.sample.to_vector<int64_t>();
  const std::vector<double> la = logits_at(a.sample), lb = logits_at(b.sample);
  const std::vector<double> ma = a.m.to(Device::cpu(), DType::f64).to_vector<double>(),
                            mb = b.m.to(Device::cpu(), DType::f64).to_vector<double>();
  std::vector<int64_t> out(static_cast<size_t>(p.n));
  for (int64_t i = 0; i < p.n; ++i) {
    const size_t u = size_t(i);
    const double ga = la[u] + sick_gumbel(seed, uint64_t(i), uint32_t(ka[u]));
    const double gb = lb[u] + sick_gumbel(seed, uint64_t(i), uint32_t(kb[u]));
    const bool use_b = mb[u] > -INFINITY && (ma[u] == -INFINITY || gb > ga);
    out[u] = use_b ? kb[u] : ka[u];
  }
  return from_vector(out, {p.n}, dev);
}

// The fused pass over each example's support.
SickResult run_support(const Prepared& p, const BideOptions& opt, uint32_t outputs,
                       uint64_t seed = 0) {
  const std::vector<Piece> pieces = support_pieces(opt, p.n, p.w.device());
  SickResult r = run_sick(p, opt, outputs, pieces[0].lo, pieces[0].hi, seed);
  if (pieces.size() == 1) return r;
  const SickResult second = run_sick(p, opt, outputs, pieces[1].lo, pieces[1].hi, seed);
  Tensor sample;
  if (outputs & kSickSample) sample = merge_samples(p, opt, r, second, seed);
  r = merge_passes(r, second);
  r.sample = sample;
  return r;
}

}  // namespace bide_internal

using namespace bide_internal;

void bide_check(const Tensor& w, const Tensor& r, const BideOptions& opt, const char* op) {
  const int bits = opt.code.bits;
  BG_CHECK(bits >= 1, op, "bits must be at least 1, got ", bits);
  BG_CHECK(bits <= 24, op, bits, " bits refused: the cost grows as 2^B (2^", bits,
           " patterns per example); at most 24");
  check_float(w, op, "W");
  check_float(r, op, "r");
  check_same_device(w, r, op);
  BG_CHECK(w.ndim() == 3 && w.size(2) == bits, op, "W must be (N, H, ", bits, "), got ",
           shape_str(w.shape()));
  BG_CHECK(r.ndim() == 2 && r.size(0) == w.size(0) && r.size(1) == w.size(1), op, "r must be (",
           w.size(0), ", ", w.size(1), "), got ", shape_str(r.shape()));
  BG_CHECK(w.dtype() == r.dtype(), op, "W is ", dtype_name(w.dtype()), " but r is ",
           dtype_name(r.dtype()));
  const int64_t full_range = int64_t(1) << bits;
  BG_CHECK(opt.support_lo >= 0 && opt.support_lo < support_hi(opt) && support_hi(opt) <= full_range,
           op, "support [", opt.support_lo, ", ", support_hi(opt),
           ") is not a non-empty range inside [0, ", full_range, ")");
  if (opt.code.is_float())
    BG_CHECK(bits == 16, op, "float16/bfloat16 values have 16 bits, got ", bits);
  if (opt.ranges.defined()) {
    BG_CHECK(opt.ranges.dtype() == DType::i64 && opt.ranges.ndim() == 2 &&
                 opt.ranges.size(0) == 4 && opt.ranges.size(1) == w.size(0) &&
                 opt.ranges.is_contiguous() && opt.ranges.device() == w.device(),
             op, "support ranges must be a contiguous (4, ", w.size(0), ") i64 table on ",
             w.device().str(), ", got ", shape_str(opt.ranges.shape()), " ",
             dtype_name(opt.ranges.dtype()), " on ", opt.ranges.device().str());
    BG_CHECK(opt.ranges_host.defined() && !opt.ranges_host.is_cuda() &&
                 opt.ranges_host.shape() == opt.ranges.shape(),
             op, "ranges_host must hold the support table on the CPU (use bide_set_support)");
  }
  if (w.is_cuda())
    BG_CHECK(w.size(1) <= kMaxSickHidden, op, "the CUDA SICK kernels support hidden sizes up to ",
             kMaxSickHidden, ", got ", w.size(1));
}

Tensor bide_log_prob(const Tensor& w, const Tensor& r, const Tensor& y, const BideOptions& opt) {
  const Prepared p = prepare(w, r, opt, "bide_log_prob");
  BG_CHECK(y.dtype() == DType::i64 && y.ndim() == 1 && y.size(0) == p.n, "bide_log_prob",
           "targets must be (", p.n, ",) i64 patterns, got ", shape_str(y.shape()), " ",
           dtype_name(y.dtype()));
  check_same_device(w, y, "bide_log_prob");
  const Tensor yc = y.contiguous();
  const bool grad = needs_grad({w, r});
  SickResult sr = run_support(p, opt, grad ? uint32_t(kSickGrad) : 0u);
  // log p(y) = l_y - log Z in one small kernel.
  Tensor out = empty({p.n}, sr.logz.dtype(), p.w.device());
  BG_DISPATCH(p.w.device(), bide_logits, null_view(), p.w.kview(), p.r.kview(), yc.kview(),
              opt.code.bits, sr.logz.kview(), out.kview(), stream_for(p.w.device()));
  const DType wdt = w.dtype();
  record(out, "bide_log_prob", {w, r}, [p, sr, yc, opt, wdt](const Tensor& g) {
    Tensor dw = empty(p.w.shape(), p.w.dtype(), p.w.device());
    Tensor dr = empty(p.r.shape(), p.r.dtype(), p.r.device());
    const Tensor gc = g.to(p.w.dtype()).contiguous();
    BG_DISPATCH(p.w.device(), bide_log_prob_backward, dw.kview(), dr.kview(), p.w.kview(),
                p.r.kview(), yc.kview(), sr.gw.kview(), sr.gr.kview(), sr.s.kview(), gc.kview(),
                opt.code.bits, stream_for(p.w.device()));
    return std::vector<Tensor>{dw.to(wdt), dr.to(wdt)};
  });
  return out;
}

Tensor bide_nll(const Tensor& w, const Tensor& r, const Tensor& y, const BideOptions& opt,
                const std::string& reduction) {
  const Tensor lp = bide_log_prob(w, r, y, opt);
  if (reduction == "none") return neg(lp);
  if (reduction == "sum") return neg(sum(lp));
  BG_CHECK(reduction == "mean", "bide_nll", "reduction must be mean, sum or none, got '", reduction,
           "'");
  return neg(mean(lp));
}

Tensor bide_log_normalizer(const Tensor& w, const Tensor& r, const BideOptions& opt) {
  const Prepared p = prepare(w, r, opt, "bide_log_normalizer");
  const bool grad = needs_grad({w, r});
  const SickResult sr = run_support(p, opt, grad ? uint32_t(kSickGrad) : 0u);
  Tensor out = sr.logz;
  if (!grad) return out;
  out = out.detach();
  const DType wdt = w.dtype();
  // d log Z / dr_h = E[relu(z_h)] = gr_h / s, d log Z / dW_hj = r_h E[1[z_h > 0] b_j] = r_h gw_hj /
  // s.
  record(out, "bide_log_normalizer", {w, r}, [p, sr, wdt](const Tensor& g) {
    const Tensor scale = g.to(sr.s.dtype()) / sr.s;  // (N)
    const Tensor dr = sr.gr * scale.reshape({p.n, 1});
    const Tensor dw =
        sr.gw * (p.r.to(sr.s.dtype()) * scale.reshape({p.n, 1})).reshape({p.n, p.hidden, 1});
    return std::vector<Tensor>{dw.to(wdt), dr.to(wdt)};
  });
  return out;
}

Tensor bide_logit(const Tensor& w, const Tensor& r, const Tensor& y, const BideOptions& opt) {
  const Prepared p = prepare(w, r, opt, "bide_logit");
  BG_CHECK(y.dtype() == DType::i64 && y.ndim() == 1 && y.size(0) == p.n, "bide_logit",
           "patterns must be (", p.n, ",) i64, got ", shape_str(y.shape()), " ",
           dtype_name(y.dtype()));
  check_same_device(w, y, "bide_logit");
  const Tensor yc = y.contiguous();
  Tensor out = empty({p.n}, p.w.dtype(), p.w.device());
  BG_DISPATCH(p.w.device(), bide_logits, out.kview(), p.w.kview(), p.r.kview(), yc.kview(),
              opt.code.bits, null_view(), null_view(), stream_for(p.w.device()));
  const DType wdt = w.dtype();
  // The log-prob backward with zero K-sums and s = 1 is the logit's own gradient:
  // dr_h = g relu(z_h), dW_hj = g r_h 1[z_h > 0] b_j.
  record(out, "bide_logit", {w, r}, [p, yc, opt, wdt](const Tensor& g) {
    const DType sd = stats_dtype(p.w.dtype() == DType::f64 ? DType::f64 : DType::f32);
    const Tensor gw = zeros(p.w.shape(), sd, p.w.device()),
                 gr = zeros(p.r.shape(), sd, p.w.device());
    const Tensor s = full({p.n}, 1.0, sd, p.w.device());
    Tensor dw = empty(p.w.shape(), p.w.dtype(), p.w.device());
    Tensor dr = empty(p.r.shape(), p.r.dtype(), p.r.device());
    const Tensor gc = g.to(p.w.dtype()).contiguous();
    BG_DISPATCH(p.w.device(), bide_log_prob_backward, dw.kview(), dr.kview(), p.w.kview(),
                p.r.kview(), yc.kview(), gw.kview(), gr.kview(), s.kview(), gc.kview(),
                opt.code.bits, stream_for(p.w.device()));
    return std::vector<Tensor>{dw.to(wdt), dr.to(wdt)};
  });
  return out;
}

Tensor bide_range_log_mass(const Tensor& w, const Tensor& r, const Tensor& lo, const Tensor& hi,
                           const BideOptions& opt) {
  NoGradGuard ng;
  const Prepared p = prepare(w, r, opt, "bide_range_log_mass");
  BG_CHECK(lo.dtype() == DType::i64 && hi.dtype() == DType::i64 && lo.numel() == p.n &&
               hi.numel() == p.n,
           "bide_range_log_mass", "lo and hi must be (", p.n, ",) i64");
  // Each query range intersected with each support piece: one pass per piece, summed in log
  // space (-inf for an empty intersection).
  const std::vector<int64_t> qlo = lo.to_vector<int64_t>(), qhi = hi.to_vector<int64_t>();
  const Tensor table = opt.ranges.defined() ? opt.ranges_host : Tensor();
  const size_t pieces = table.defined() ? 2 : 1, count = static_cast<size_t>(p.n);
  std::vector<std::vector<int64_t>> plo(pieces, std::vector<int64_t>(count)),
      phi(pieces, std::vector<int64_t>(count));
  for (int64_t i = 0; i < p.n; ++i) {
    const auto ranges = host_pieces(opt, table, i);
    for (size_t j = 0; j < pieces; ++j) {
      const int64_t a = std::max(qlo[size_t(i)], ranges[j].first);
      plo[j][size_t(i)] = a;
      phi[j][size_t(i)] = std::max(a, std::min(qhi[size_t(i)], ranges[j].second));
    }
  }
  Tensor out;
  for (size_t j = 0; j < pieces; ++j) {
    const Tensor lz = run_sick(p, opt, 0, from_vector(plo[j], {p.n}, w.device()),
                               from_vector(phi[j], {p.n}, w.device()))
                          .logz;
    out = j == 0 ? lz : logaddexp(out, lz);
  }
  return out;
}

Tensor bide_log_density(const Tensor& w, const Tensor& r, const Tensor& y, const BideOptions& opt) {
  BG_CHECK(opt.code.is_float(), "bide_log_density",
           "densities are defined for float16/bfloat16 values");
  const Tensor lp = bide_log_prob(w, r, y, opt);
  const std::vector<int64_t> ys = y.to_vector<int64_t>();
  std::vector<double> width(ys.size());
  for (size_t i = 0; i < ys.size(); ++i) width[i] = opt.code.log_bucket_width(uint32_t(ys[i]));
  return lp - from_vector(width, {int64_t(ys.size())}, lp.device()).to(lp.dtype());
}


Tensor bide_sample(const Tensor& w, const Tensor& r, const BideOptions& opt, uint64_t seed) {
  NoGradGuard ng;
  const Prepared p = prepare(w, r, opt, "bide_sample");
  return run_support(p, opt, kSickSample, seed).sample;
}

BideMoments bide_moments(const Tensor& w, const Tensor& r, const BideOptions& opt) {
  NoGradGuard ng;
  const Prepared p = prepare(w, r, opt, "bide_moments");
  const SickResult sr = run_support(p, opt, kSickStats);
  // Finish in f64 on the host: these are n-sized.
  const Tensor st = sr.stats.to(Device::cpu(), DType::f64);
  const Tensor s = sr.s.to(Device::cpu(), DType::f64), m = sr.m.to(Device::cpu(), DType::f64);
  auto col = [&](int c) { return st.slice(1, c, c + 1).reshape({p.n}); };
  BideMoments out;
  out.entropy = m + log(s) - col(0) / s;
  out.mean = col(2) / col(1);
  out.variance = maximum(col(3) / col(1) - out.mean * out.mean, zeros({}, DType::f64, s.device()));
  // Clamped at 0: when every pattern is finite, rounding can leave 1 - finite/total at -1e-7.
  out.nonfinite_mass = maximum(affine(col(1) / s, -1.0, 1.0), zeros({}, DType::f64));
  const Device dev = w.device();
  for (Tensor* t : {&out.entropy, &out.mean, &out.variance, &out.nonfinite_mass})
    *t = t->to(dev, sr.s.dtype());
  return out;
}

}  // namespace bg
