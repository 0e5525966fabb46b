// fit_bide.h: what `bitgrad fit-bide` passes between reading its config and data
// (fit_bide.cpp) and evaluating and reporting the fit (fit_bide_report.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "models/bide_fit/bide_fit_data.h"

namespace bg {
class ConfigReader;
}

namespace bg::cli {

// fit_bide_config.cpp: the config, checked.
FitConfig read_fit_config(ConfigReader& r);

// Evaluates the fitted distributions (w_all (N, H, B), r_all (N, H)) against their data
// (models/bide_fit/bide_fit_eval.h) and writes every output of the run (summary.csv, curves.csv, fit.svg, metrics.csv, loss.svg,
// config.yaml, checkpoint.h5) into cfg.out_dir, after printing the summary table.
struct FitResult {
  const Tensor& w_all;
  const Tensor& r_all;
  const BideOptions& eval_options;  // the support per distribution
  const FlatParameters& params;
  AdamW& optimizer;
  const std::vector<float>& losses;  // per step
  double train_seconds;
  double final_ema;
};
void report_fit(const FitConfig& cfg, const ConfigReader& reader, const std::vector<DistData>& data,
                const FitResult& fit);

}  // namespace bg::cli
