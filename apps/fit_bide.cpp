// fit_bide.cpp: `bitgrad fit-bide CONFIG`: fits one BIDE distribution per entry of
// `distributions` (built-in samplers or sample files) at once, as in the SICK BIDE paper: each
// distribution owns one learned embedding row that is reshaped into its W (H x B) and r (H);
// the loss is the mean NLL of the values' bit patterns, normalised exactly by SICK.
// Everything is validated (config, files, values) before the output folder is touched.
// bide.range restricts each distribution to a value range (fit_bide.h): the normaliser, the
// gradients and every evaluated quantity then sum over the patterns inside it.
#include "fit_bide.h"

#include <cstdio>
#include <memory>

#include "cli.h"
#include "core/config.h"
#include "models/bide_fit/bide_fit.h"
#include "models/trainer.h"

namespace bg::cli {

namespace {

void print_fit_header(const FitConfig& cfg, Device device) {
  const BideCode& code = cfg.bide.code;
  const int64_t n_dist = int64_t(cfg.dists.size());
  std::printf(
      "fit-bide: %lld distribution(s), %lld-bit %s values, H = %lld, batch %lld each, %lld steps, "
      "device %s, variant %s, range %s%s\n",
      (long long)n_dist, (long long)code.bits, code.is_float() ? "float" : "integer",
      (long long)cfg.hidden, (long long)cfg.batch, (long long)cfg.steps, device.str().c_str(),
      enum_name(bide_resolve_variant(cfg.bide, device, n_dist * cfg.batch, cfg.hidden)),
      enum_name(cfg.range), cfg.mode.deterministic ? ", deterministic" : "");
}

}  // namespace

int run_fit_bide(const Args& args) {
  args.allow_only({});
  BG_CHECK(args.positional.size() == 1, "fit-bide",
           "usage: bitgrad fit-bide CONFIG [--set key=value ...]");
  ConfigReader reader(args.positional[0], args.overrides);
  const FitConfig cfg = read_fit_config(reader);
  const Device device = parse_device(cfg.device);
  std::printf("# effective config (%s)\n%s", args.positional[0].c_str(),
              reader.effective_yaml().c_str());
  const FitData data = draw_fit_data(cfg);
  // The data is valid: check the output folder before the run, not at its end.
  check_output_dir(cfg.out_dir, "fit-bide");
  std::vector<std::string> inputs = {args.positional[0]};
  for (const DistSpec& spec : cfg.dists)
    if (spec.from_file) inputs.push_back(spec.file.path);
  for (const char* name : {"config.yaml", "metrics.csv", "summary.csv", "curves.csv", "fit.svg",
                           "loss.svg", "checkpoint.h5"})
    check_output_file(cfg.out_dir + "/" + name, "fit-bide", "run.out_dir's", inputs);
  print_fit_header(cfg, device);
  const std::unique_ptr<BideFit> fit = fit_distributions(cfg, data, device);
  if (fit->result.stop_signal) return 130;
  const std::vector<float>& losses = fit->trainer->step_losses();
  // Evaluate each distribution and write every output.
  NoGradGuard no_grad;
  const Tensor all_idx = arange(int64_t(cfg.dists.size()), DType::i64, device);
  const auto [w_all, r_all] = fit->model->forward(all_idx);
  report_fit(cfg, reader, data.dists,
             {w_all, r_all, fit->eval_options, *fit->params, *fit->trainer->adamw(), losses,
              fit->result.seconds, debiased_ema(losses, cfg.ema)});
  return 0;
}

}  // namespace bg::cli
