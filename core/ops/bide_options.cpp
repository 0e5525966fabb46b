// bide_options.cpp: BideOptions' SICK settings (names, parsing, the variant `auto` picks) and
// the bare SICK pass that `bitgrad bench sick` times.
#include <cmath>

#include "../bide.h"
#include "../dispatch.h"

namespace bg {

void bide_sick_pass(const Tensor& w, const Tensor& r, const BideOptions& opt, bool grads,
                    const SickPassOutputs& out, Scratch& scratch) {
  bide_check(w, r, opt, "bide_sick_pass");
  BG_CHECK(w.is_contiguous() && r.is_contiguous() && compute_dtype(w) == w.dtype(),
           "bide_sick_pass", "W and r must be contiguous, in the kernel's dtype");
  SickArgs a;
  a.w = w.kview();
  a.r = r.kview();
  a.m = out.m.kview();
  a.s = out.s.kview();
  a.logz = out.logz.kview();
  if (grads) {
    a.gr = out.gr.kview();
    a.gw = out.gw.kview();
  }
  a.code = opt.code;
  a.outputs = grads ? uint32_t(kSickGrad) : 0u;
  a.precomputed =
      bide_resolve_variant(opt, w.device(), w.size(0), w.size(1)) == SickVariant::precomputed;
  a.half_compute = w.is_cuda() && opt.precision == SickPrecision::fp16;
  a.one_slice = opt.batch_invariant;
  BG_DISPATCH(w.device(), sick_forward, a, scratch, stream_for(w.device()));
}

SickVariant bide_resolve_variant(const BideOptions& opt, Device device, int64_t n, int64_t hidden) {
  // The precomputed kernel's tables hold up to 64 hidden units; above, only bruteforce runs.
  const bool precomputed_fits = device.is_cpu() || hidden <= kMaxPrecomputedSickHidden;
  BG_CHECK(opt.variant != SickVariant::precomputed || precomputed_fits, "sick",
           "the precomputed CUDA SICK kernel holds up to ", kMaxPrecomputedSickHidden,
           " hidden units, got ", hidden, "; use sick.variant bruteforce or auto");
  if (opt.variant != SickVariant::automatic) return opt.variant;
  if (!precomputed_fits) return SickVariant::bruteforce;
  // Measured choice (bench/results/sick_h200.json, docs/sick.md). CPU: the vectorised
  // precomputed path from 8 bits. CUDA: precomputed from N * 2^B >= 2^22 patterns (batch 64 at
  // 16 bits: 30 vs 40 us for the normaliser, 59 vs 64 us for the fused pass; batch 16384: 2.3
  // vs 5.3 ms); below that each warp has too few tiles to amortise its table set-up, and the
  // bruteforce kernel, which needs none, is kept.
  if (device.is_cpu())
    return opt.code.bits >= 8 ? SickVariant::precomputed : SickVariant::bruteforce;
  // Batch invariance: the variants sum in different orders, so the choice may not follow N;
  // from 12 bits the table set-up pays for itself at any batch the fits use.
  if (opt.batch_invariant)
    return opt.code.bits >= 12 ? SickVariant::precomputed : SickVariant::bruteforce;
  return double(n) * std::ldexp(1.0, opt.code.bits) >= std::ldexp(1.0, 22)
             ? SickVariant::precomputed
             : SickVariant::bruteforce;
}

}  // namespace bg
