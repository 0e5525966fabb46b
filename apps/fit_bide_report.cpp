// fit_bide_report.cpp: what `bitgrad fit-bide` prints and writes from its evaluation
// (models/bide_fit/bide_fit_eval.h): the summary table and summary.csv, curves.csv and fit.svg,
// metrics.csv and loss.svg, config.yaml and checkpoint.h5. Everything is computed first and
// written last.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli.h"
#include "core/checkpoint.h"
#include "core/config.h"
#include "data/csv.h"
#include "fit_bide.h"
#include "models/bide_fit/bide_fit_eval.h"
#include "plot.h"

namespace bg::cli {
namespace {

std::string fmt(double v, int prec = 4) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

// curves.csv and the CDF and density panels of fit.svg, one pair per distribution.
std::string curves_csv(const FitEvaluation& ev, std::vector<plot::Panel>* panels) {
  std::ostringstream curves;
  curves << "distribution,x,cdf_fit,cdf_true,density_fit,density_true\n";
  for (size_t d = 0; d < ev.rows.size(); ++d) {
    const std::string& name = ev.rows[d].name;
    const FitCurve& c = ev.curves[d];
    for (size_t b = 0; b < c.x.size(); ++b)
      curves << csv_field(name) << "," << c.x[b] << "," << c.cdf_fit[b] << "," << c.cdf_ref[b] << ","
             << c.density_fit[b] << "," << c.density_ref[b] << "\n";
    const std::string ref_label = c.reference_is_law ? "true" : "held-out samples";
    panels->push_back({name + ": CDF",
                       "value",
                       "P(X <= x)",
                       {{"BIDE fit", "#d62728", c.x, c.cdf_fit, false},
                        {ref_label, "#1f77b4", c.x, c.cdf_ref, true}},
                       true});
    panels->push_back({name + ": density",
                       "value",
                       "density (per bin)",
                       {{"BIDE fit", "#d62728", c.x, c.density_fit, false},
                        {ref_label, "#1f77b4", c.x, c.density_ref, true}},
                       true});
  }
  return curves.str();
}

// The summary table (printed) and summary.csv, with notes on skipped and outside values.
std::string print_summary(const FitConfig& cfg, const std::vector<DistData>& data,
                          const std::vector<FitRow>& rows) {
  std::printf("\n%-14s %9s %8s %10s %10s %9s %9s %10s %10s %10s %8s %8s\n", "distribution", "NLL",
              "KS", "mean fit", "mean ref", "std fit", "std ref", "median fit", "median ref",
              "nonfinite", "skipped", "outside");
  std::ostringstream summary;
  summary << "distribution,range_lo,range_hi,nll,ks,mean_fit,mean_ref,std_fit,std_ref,median_fit,"
             "median_ref,q01_fit,q01_ref,q99_fit,q99_ref,nonfinite_mass,skipped,outside\n";
  for (size_t d = 0; d < rows.size(); ++d) {
    const FitRow& r = rows[d];
    std::printf("%-14s %9.4f %8.4f %10s %10s %9s %9s %10s %10s %10.2e %8lld %8lld\n",
                r.name.c_str(), r.nll, r.ks, fmt(r.fit[0]).c_str(), fmt(r.ref[0]).c_str(),
                fmt(r.fit[1]).c_str(), fmt(r.ref[1]).c_str(), fmt(r.fit[2]).c_str(),
                fmt(r.ref[2]).c_str(), r.nonfinite, (long long)r.skipped, (long long)r.outside);
    summary << csv_field(r.name) << "," << r.range_lo << "," << r.range_hi << "," << r.nll << "," << r.ks;
    for (int j = 0; j < 5; ++j) summary << "," << r.fit[j] << "," << r.ref[j];
    summary << "," << r.nonfinite << "," << r.skipped << "," << r.outside << "\n";
    if (!data[d].skip_note.empty())
      std::printf("  %s: skipped %lld value(s), first: %s\n", r.name.c_str(), (long long)r.skipped,
                  data[d].skip_note.c_str());
    if (r.outside > 0)
      std::printf("  %s: %lld held-out value(s) outside the range [%g, %g], left out of the NLL\n",
                  r.name.c_str(), (long long)r.outside, r.range_lo, r.range_hi);
  }
  const BideValueType type = cfg.bide.code.type;
  if (cfg.range == RangeMode::all && (type == BideValueType::f16 || type == BideValueType::bf16))
    std::printf(
        "note: under bide.range: all the fit's moments sum over every finite pattern; the small "
        "mass a fit leaves spread over the type's far tails (to +-65504 in float16) inflates "
        "mean and std fit, while KS and NLL are unaffected. bide.range: auto gives the moments "
        "of the data's range.\n");
  return summary.str();
}

// metrics.csv and loss.svg, from one pass of the debiased EMA over the step losses.
std::pair<std::string, std::string> loss_outputs(const FitConfig& cfg,
                                                 const std::vector<float>& losses) {
  std::ostringstream metrics;
  metrics << "step,loss,ema_loss,lr\n";
  std::vector<double> steps_x, loss_y, ema_y;
  double e = 0;
  for (size_t s = 0; s < losses.size(); ++s) {
    e = cfg.ema * e + (1 - cfg.ema) * losses[s];
    steps_x.push_back(double(s + 1));
    loss_y.push_back(losses[s]);
    ema_y.push_back(e / (1 - std::pow(cfg.ema, double(s + 1))));
    metrics << s + 1 << "," << losses[s] << "," << ema_y.back() << ","
            << cfg.schedule.at(int64_t(s)) << "\n";
  }
  return {metrics.str(), plot::svg({{"training loss (mean NLL, nats)",
                                     "step",
                                     "loss",
                                     {{"loss", "#bbbbbb", steps_x, loss_y, false},
                                      {"EMA", "#d62728", steps_x, ema_y, false}}}},
                                   1, 640, 360)};
}

}  // namespace

void report_fit(const FitConfig& cfg, const ConfigReader& reader, const std::vector<DistData>& data,
                const FitResult& fit) {
  const FitEvaluation ev = evaluate_fit(cfg, data, fit.w_all, fit.r_all, fit.eval_options);
  std::vector<plot::Panel> panels;
  const std::string curves = curves_csv(ev, &panels);
  const std::string summary = print_summary(cfg, data, ev.rows);
  const auto [metrics, loss_svg] = loss_outputs(cfg, fit.losses);
  // Every output written (atomically) only now that everything succeeded.
  const std::string& out = cfg.out_dir;
  write_file_atomic(out + "/config.yaml", reader.effective_yaml());
  write_file_atomic(out + "/metrics.csv", metrics);
  write_file_atomic(out + "/summary.csv", summary);
  write_file_atomic(out + "/curves.csv", curves);
  write_file_atomic(out + "/fit.svg", plot::svg(panels, 2));
  write_file_atomic(out + "/loss.svg", loss_svg);
  CheckpointWriter ck(out + "/checkpoint.h5");
  for (const auto& [name, t] : fit.params.named()) ck.tensor(name, t);
  // Optimizer state in a group of its own, as in train checkpoints.
  ck.tensor("optimizer/exp_avg", fit.optimizer.exp_avg());
  ck.tensor("optimizer/exp_avg_sq", fit.optimizer.exp_avg_sq());
  if (fit.eval_options.ranges_host.defined())
    ck.tensor("bide/support", fit.eval_options.ranges_host);  // (4, N) pattern ranges
  ck.attr("format", std::string("bitgrad-bide-fit-v1"));
  ck.attr("config", reader.effective_yaml());
  ck.attr("step", cfg.steps);
  ck.attr("seed", int64_t(cfg.seed));
  ck.commit();
  std::printf(
      "\ntraining: %lld steps in %.3f s (%.0f steps/s) | final EMA loss %.4f | outputs in %s\n",
      (long long)cfg.steps, fit.train_seconds, double(cfg.steps) / fit.train_seconds, fit.final_ema,
      out.c_str());
}

}  // namespace bg::cli
