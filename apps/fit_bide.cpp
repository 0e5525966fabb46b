// fit_bide.cpp: `bitgrad fit-bide CONFIG`: fits one BIDE distribution per entry of
// `distributions` (built-in samplers or sample files) at once, as in the SICK BIDE paper: each
// distribution owns one learned embedding row that is reshaped into its W (H x B) and r (H);
// the loss is the mean NLL of the values' bit patterns, normalised exactly by SICK.
// Everything is validated (config, files, values) before the output folder is touched.
// bide.range restricts each distribution to a value range (fit_bide.h): the normaliser, the
// gradients and every evaluated quantity then sum over the patterns inside it.
#include "fit_bide.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <tuple>

#include "cli.h"
#include "core/config.h"
#include "models/bide_fit.h"
#include "models/trainer.h"

namespace bg::cli {

int run_fit_bide(const Args& args) {
  args.allow_only({});
  BG_CHECK(args.positional.size() == 1, "fit-bide",
           "usage: bitgrad fit-bide CONFIG [--set key=value ...]");
  ConfigReader reader(args.positional[0], args.overrides);
  FitConfig cfg = read_fit_config(reader);
  const Device device = parse_device(cfg.device);
  const BideCode code = cfg.bide.code;
  std::printf("# effective config (%s)\n%s", args.positional[0].c_str(),
              reader.effective_yaml().c_str());
  const int64_t n_dist = int64_t(cfg.dists.size()), per_step = n_dist * cfg.batch, bits = code.bits;
  const int64_t support_hi = cfg.bide.support_hi < 0 ? (int64_t(1) << bits) : cfg.bide.support_hi;
  // Why a value cannot be a training value ("" when it can).
  auto check = [&](double v) -> std::string {
    uint32_t k;
    std::string why;
    if (!bide_encode(code, v, &k, &why)) return why;
    if (int64_t(k) < cfg.bide.support_lo || int64_t(k) >= support_hi)
      return "value outside the configured support";
    const double x = code.value(k);
    if (cfg.range == RangeMode::fixed && !(x >= cfg.range_lo && x <= cfg.range_hi))
      return str_cat("value ", v, " is outside bide.range [", cfg.range_lo, ", ", cfg.range_hi,
                     "]");
    return "";
  };

  // 1. Data: every training pattern of the run up front (one upload), and held-out sets.
  HostRng rng(cfg.seed);
  std::vector<DistData> data(static_cast<size_t>(n_dist));
  std::vector<int64_t> train_y(static_cast<size_t>(cfg.steps * per_step));
  for (int64_t d = 0; d < n_dist; ++d) {
    DistData& dd = data[size_t(d)];
    const DistSpec& spec = cfg.dists[size_t(d)];
    auto encode = [&](double v, uint32_t* k) {
      std::string why;
      return check(v).empty() && bide_encode(code, v, k, &why);
    };
    if (spec.from_file) {
      SampleSet set = read_samples(spec.file, check);
      std::vector<double>& v = set.values;
      for (size_t i = v.size(); i > 1; --i)
        std::swap(v[i - 1], v[size_t(rng.uniform() * double(i)) % i]);
      const size_t n_val = std::max<size_t>(1, size_t(double(v.size()) * spec.val_fraction));
      BG_CHECK(v.size() > n_val, "fit-bide", spec.file.path, ": ", v.size(),
               " samples are too few to split");
      for (size_t i = 0; i < v.size(); ++i) {
        uint32_t k;
        encode(v[i], &k);
        if (i < n_val) {
          dd.eval.push_back(k);
          dd.eval_values.push_back(code.value(k));
        } else {
          dd.train_pool.push_back(k);
        }
      }
      dd.skipped = set.skipped;
      dd.skip_note = set.first_skip;
    } else {
      dd.truth = make_distribution(spec.params);
    }
    auto draw = [&]() -> uint32_t {
      if (spec.from_file)
        return dd.train_pool[size_t(rng.uniform() * double(dd.train_pool.size())) %
                             dd.train_pool.size()];
      for (int attempt = 0;; ++attempt) {
        uint32_t k;
        if (encode(dd.truth->sample(rng), &k)) return k;
        ++dd.skipped;  // e.g. a Pareto draw beyond float16's range, or outside bide.range
        BG_CHECK(attempt < 1000, "fit-bide", spec.name, ": samples keep falling outside ", bits,
                 "-bit values", cfg.range == RangeMode::fixed ? " and bide.range" : "");
      }
    };
    std::vector<uint32_t> drawn(static_cast<size_t>(cfg.steps * cfg.batch));
    for (uint32_t& k : drawn) k = draw();
    for (int64_t s = 0; s < cfg.steps; ++s)
      for (int64_t i = 0; i < cfg.batch; ++i)
        train_y[size_t(s * per_step + d * cfg.batch + i)] = drawn[size_t(s * cfg.batch + i)];
    if (!spec.from_file)
      for (int64_t i = 0; i < cfg.eval_samples; ++i) {
        const uint32_t k = draw();
        dd.eval.push_back(k);
        dd.eval_values.push_back(code.value(k));
      }
    dd.full_support = cfg.range == RangeMode::all;
    if (cfg.range == RangeMode::fixed) {
      dd.range_lo = cfg.range_lo;
      dd.range_hi = cfg.range_hi;
    } else if (cfg.range == RangeMode::automatic) {
      const std::vector<uint32_t>& seen = spec.from_file ? dd.train_pool : drawn;
      std::tie(dd.range_lo, dd.range_hi) = auto_range(code, seen, cfg.auto_margin);
      if (code.is_float()) {
        const uint32_t sign = 1u << (code.bits - 1);
        bool negative = false, positive = false;
        for (uint32_t k : seen) (k & sign ? negative : positive) = true;
        dd.drop_negative_zero = !negative;
        dd.drop_positive_zero = !positive;
      }
    }
  }
  // The data is valid: check the output folder before the run, not at its end.
  check_output_dir(cfg.out_dir, "fit-bide");
  std::vector<std::string> inputs = {args.positional[0]};
  for (const DistSpec& spec : cfg.dists)
    if (spec.from_file) inputs.push_back(spec.file.path);
  for (const char* name : {"config.yaml", "metrics.csv", "summary.csv", "curves.csv", "fit.svg",
                           "loss.svg", "checkpoint.h5"})
    check_output_file(cfg.out_dir + "/" + name, "fit-bide", "run.out_dir's", inputs);
  const Tensor y_all = from_vector(train_y, {cfg.steps, per_step}, device);
  std::vector<int64_t> idx_v(static_cast<size_t>(per_step));
  for (int64_t i = 0; i < per_step; ++i) idx_v[size_t(i)] = i / cfg.batch;
  const Tensor idx = from_vector(idx_v, {per_step}, device);
  // The support per distribution (eval rows) and per training row (rows d * batch + i).
  BideOptions train_opt = cfg.bide, eval_opt = cfg.bide;
  if (cfg.range != RangeMode::all) {
    const Tensor table = support_table(code, data);
    bide_set_support(eval_opt, table, device);
    const std::vector<int64_t> t = table.to_vector<int64_t>();
    std::vector<int64_t> rows(static_cast<size_t>(4 * per_step));
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t i = 0; i < per_step; ++i)
        rows[size_t(j * per_step + i)] = t[size_t(j * n_dist + idx_v[size_t(i)])];
    bide_set_support(train_opt, from_vector(rows, {4, per_step}), device);
  }

  // 2. Model: one embedding row per distribution -> W (H x B) and r (H) (the paper's init).
  Generator init(cfg.seed + 1);
  BideFitModel model(n_dist, cfg.hidden, int(bits), init);
  if (cfg.mode.deterministic) {
    model.set_compute_mode(cfg.mode.on(device));
  }
  FlatParameters params(model.named_parameters(), device);
  std::printf(
      "fit-bide: %lld distribution(s), %lld-bit %s values, H = %lld, batch %lld each, %lld steps, "
      "device %s, variant %s, range %s%s\n",
      (long long)n_dist, (long long)bits, code.is_float() ? "float" : "integer",
      (long long)cfg.hidden, (long long)cfg.batch, (long long)cfg.steps, device.str().c_str(),
      enum_name(bide_resolve_variant(cfg.bide, device, per_step, cfg.hidden)),
      cfg.range == RangeMode::all     ? "all"
      : cfg.range == RangeMode::fixed ? "fixed"
                                      : "auto",
      cfg.mode.deterministic ? ", deterministic" : "");

  // 3. Train. A step reads its targets from a fixed buffer, so on a GPU the trainer captures it
  // once as a CUDA graph (~30 small kernels: launching them costs more than running them).
  BideFitTask task(model, idx, y_all, train_opt, cfg.ema);
  TrainerConfig tc;
  tc.command = "fit-bide";
  tc.steps = cfg.steps;
  tc.log_interval = cfg.log_interval;
  tc.adamw = cfg.adamw;
  tc.schedule = cfg.schedule;
  tc.cuda_graph = cfg.cuda_graph;
  tc.record_every_loss = true;
  Trainer trainer(tc, params, task);
  const TrainResult result = trainer.run();
  if (result.stop_signal) return 130;
  const std::vector<float>& losses = trainer.step_losses();

  // 4./5. Evaluate each distribution and write every output.
  NoGradGuard no_grad;
  const Tensor all_idx = arange(n_dist, DType::i64, device);
  const auto [w_all, r_all] = model.forward(all_idx);
  report_fit(cfg, reader, data,
             {w_all, r_all, eval_opt, params, *trainer.adamw(), losses, result.seconds,
              debiased_ema(losses, cfg.ema)});
  return 0;
}

}  // namespace bg::cli
