// bide.h: BIDE distributions (the SICK BIDE paper). Example n's distribution over the 2^B bit
// patterns of a value is softmax(l), l_k = r_n . relu(W_n b_k), with W (N, H, B) and r (N, H)
// coming from upstream tensors (gradients flow into them). Normalisation is exact (the SICK
// pass), over all 2^B patterns or over a support: one pattern range [lo, hi) for every example,
// or per example up to two ranges (a float value range [a, b] that spans zero is one range of
// each sign half). Each range is one SICK pass; the passes merge exactly (max, rescaled sums),
// so the normaliser, the gradients, sampling, CDF and moments all sum over the support only.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "../kernels/bide_values.h"
#include "ops.h"

namespace bg {

// sick.variant: how the SICK pass walks the 2^B patterns; automatic picks per shape and device
// (bide_resolve_variant).
#define BG_SICK_VARIANTS(X) \
  X(automatic, "auto") X(bruteforce, "bruteforce") X(precomputed, "precomputed")
BG_NAMED_ENUM(SickVariant, BG_SICK_VARIANTS)
// sick.dtype: the precision of W and r inside the CUDA kernel (the CPU computes in W's dtype).
#define BG_SICK_PRECISIONS(X) X(fp32, "fp32") X(fp16, "fp16")
BG_NAMED_ENUM(SickPrecision, BG_SICK_PRECISIONS)

// Hidden units the CUDA SICK kernels hold: the bruteforce kernel up to 256 (its accumulators in
// registers, spilling above 64), the precomputed one up to 64 (its tables in shared memory).
inline constexpr int64_t kMaxSickHidden = 256;
inline constexpr int64_t kMaxPrecomputedSickHidden = 64;

struct BideOptions {
  BideCode code;  // value type and bits
  SickVariant variant = SickVariant::automatic;
  SickPrecision precision = SickPrecision::fp32;
  // train.deterministic: an example's results never depend on the batch around it. The CUDA
  // pass gives every example one CTA slice (the slice count otherwise grows as the batch
  // shrinks) and `auto` picks the variant from the bit width alone.
  bool batch_invariant = false;
  int64_t support_lo = 0, support_hi = -1;  // restrict to patterns [lo, hi); hi < 0: 2^B
  // Per-example support, replacing [support_lo, support_hi) when defined: (4, N) i64 on the
  // op's device, column n holding example n's [lo0, hi0, lo1, hi1] (lo1 == hi1 when it has one
  // range).
  // ranges_host is the same table on the host (what CDFs, quantiles and plots clip with).
  Tensor ranges, ranges_host;
};

// The patterns of `code` whose values lie in [lo, hi] (-0 counts as 0; NaN/Inf never): up to
// two [begin, end) pattern ranges, in ascending pattern order, none empty. Empty when no value
// of the type is inside.
std::vector<std::pair<int64_t, int64_t>> bide_value_range_patterns(const BideCode& code, double lo,
                                                                   double hi);
// The (4, N) support table for per-example value ranges (host tensor; .to(device) for ops).
// Throws when a range holds no value of the type.
Tensor bide_support_table(const BideCode& code,
                          const std::vector<std::pair<double, double>>& ranges);
// Sets opt.ranges / opt.ranges_host from a host support table, for ops on `device`.
void bide_set_support(BideOptions& opt, const Tensor& table, Device device);
// Whether pattern k is inside example n's support.
bool bide_in_support(const BideOptions& opt, int64_t n, uint32_t k);

// Checks W/r shapes against the options; returns a readable error otherwise.
void bide_check(const Tensor& w, const Tensor& r, const BideOptions& opt, const char* op);

// log p(y_n) for patterns y (N) i64: differentiable in W and r. Each y_n must lie inside example
// n's support: that is not checked here (it would sync the device every step); fit-bide checks
// every value before training.
Tensor bide_log_prob(const Tensor& w, const Tensor& r, const Tensor& y, const BideOptions& opt);
// Mean (or "sum"/"none") negative log-likelihood.
Tensor bide_nll(const Tensor& w, const Tensor& r, const Tensor& y, const BideOptions& opt,
                const std::string& reduction = "mean");

// log Z over the support, differentiable in W and r (one SICK pass with its K-sums when they
// need gradients): a head that mixes the BIDE's patterns with other logits normalises with it.
Tensor bide_log_normalizer(const Tensor& w, const Tensor& r, const BideOptions& opt);
// The unnormalised logit l_y = r . relu(W b_y) of patterns y (N) i64, differentiable (no SICK
// pass). Result in W's compute dtype (f32, f64 for f64 inputs).
Tensor bide_logit(const Tensor& w, const Tensor& r, const Tensor& y, const BideOptions& opt);

// Evaluation (no gradient). Results are (N) tensors on W's device (f32, f64 for f64 inputs).
// log of the unnormalised mass of patterns [lo_n, hi_n) (clipped to the support).
Tensor bide_range_log_mass(const Tensor& w, const Tensor& r, const Tensor& lo, const Tensor& hi,
                           const BideOptions& opt);
// log density of float values: log p(y) - log(bucket width of y).
Tensor bide_log_density(const Tensor& w, const Tensor& r, const Tensor& y, const BideOptions& opt);
// P(X <= x_n) over finite values in their natural order (x given as patterns, i64), and its
// logarithm computed in log space (exact for far tails where the CDF underflows).
Tensor bide_cdf(const Tensor& w, const Tensor& r, const Tensor& x, const BideOptions& opt);
Tensor bide_log_cdf(const Tensor& w, const Tensor& r, const Tensor& x, const BideOptions& opt);
// The smallest finite pattern (in value order) whose CDF reaches q_n; q (N) f64 in (0, 1].
Tensor bide_quantile(const Tensor& w, const Tensor& r, const Tensor& q, const BideOptions& opt);
// One exact sample per example (Gumbel-max over all patterns in the fused pass), as patterns.
Tensor bide_sample(const Tensor& w, const Tensor& r, const BideOptions& opt, uint64_t seed);

struct BideMoments {
  Tensor entropy;         // nats, over all patterns of the support
  Tensor mean, variance;  // of the finite values, renormalised to the finite mass
  Tensor nonfinite_mass;  // probability of NaN/Inf patterns
};
BideMoments bide_moments(const Tensor& w, const Tensor& r, const BideOptions& opt);

// The SICK pass alone over all 2^B patterns, into preallocated f32 outputs and with scratch
// memory from `scratch` (W and r contiguous, in the kernel's dtype): what `bench sick` times as
// the kernel, apart from the op's allocations. m, s, logz (N); with grads also the K-sums gr
// (N, H) and gw (N, H, B).
struct SickPassOutputs {
  Tensor m, s, logz, gr, gw;
};
void bide_sick_pass(const Tensor& w, const Tensor& r, const BideOptions& opt, bool grads,
                    const SickPassOutputs& out, Scratch& scratch);

// The variant `auto` resolves to for this shape and device.
SickVariant bide_resolve_variant(const BideOptions& opt, Device device, int64_t n, int64_t hidden);

}  // namespace bg

namespace bg {

// The bit pattern of `v` in the options' value type (round to nearest even for floats). On
// failure returns false and says why (overflow to Inf, not an integer, out of range).
bool bide_encode(const BideCode& code, double v, uint32_t* pattern, std::string* why);
// log p of the patterns [k_begin, k_end) (k_end < 0: 2^B) for each example: (N, k_end - k_begin),
// materialised (evaluation, sampling and plots; training never does this). Computes log Z with
// SICK passes, then the logits of those patterns only, in chunks; patterns outside the support
// get -inf. A head over a few ids of many bits asks for its ids alone: the cost follows them.
Tensor bide_pattern_log_probs(const Tensor& w, const Tensor& r, const BideOptions& opt,
                              int64_t k_begin = 0, int64_t k_end = -1);

}  // namespace bg
