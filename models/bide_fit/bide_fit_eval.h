// bide_fit_eval.h: how well each fitted distribution matches its data: the held-out NLL, the KS
// distance to the reference CDF, mean, std, median and 1%/99% quantiles of the fit and of the
// reference (the true law, or a file's held-out samples), and CDF and density curves for the
// plots. Pure computation: `bitgrad fit-bide` prints and writes what this returns.
#pragma once
#include <string>
#include <vector>

#include "models/bide_fit/bide_fit_data.h"

namespace bg {

struct FitRow {
  std::string name;
  double range_lo, range_hi;  // the support's value range (+-inf: every pattern)
  double nll, ks, nonfinite;
  double fit[5], ref[5];  // mean, std, median, q01, q99
  int64_t skipped, outside;
};

// Over [q 0.002, q 0.98] of the reference in cfg.plot_bins equal bins: bin centres, the fit's
// and the reference's CDF at each bin's end and density over it.
struct FitCurve {
  std::vector<double> x, cdf_fit, cdf_ref, density_fit, density_ref;
  bool reference_is_law = true;  // false: a file's held-out samples
};

struct FitEvaluation {
  std::vector<FitRow> rows;
  std::vector<FitCurve> curves;
};

// The fit W (N, H, B), r (N, H) against each distribution's held-out data, over the supports
// of `eval_options`.
FitEvaluation evaluate_fit(const FitConfig& cfg, const std::vector<DistData>& data,
                           const Tensor& w_all, const Tensor& r_all,
                           const BideOptions& eval_options);

}  // namespace bg
