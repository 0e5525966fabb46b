// fit_bide.cpp: `bitgrad fit-bide CONFIG`: fits one BIDE distribution per entry of
// `distributions` (built-in samplers or sample files) at once, as in the SICK BIDE paper: each
// distribution owns one learned embedding row that is reshaped into its W (H x B) and r (H);
// the loss is the mean NLL of the values' bit patterns, normalised exactly by SICK.
// Everything is validated (config, files, values) before the output folder is touched.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include "cli.h"
#include "core/bide.h"
#include "core/checkpoint.h"
#include "core/config.h"
#include "core/graph.h"
#include "core/optim.h"
#include "data/distributions.h"
#include "data/samples.h"
#include "layers/layers.h"
#include "plot.h"

namespace bg::cli {
namespace {

struct DistSpec {
  std::string name;
  bool from_file = false;
  DistributionParams params;
  SampleFileSpec file;
  double val_fraction = 0.1;
};

struct FitConfig {
  std::string out_dir, device, config_path;
  uint64_t seed = 0;
  BideOptions bide;
  int64_t hidden = 32, steps = 2000, batch = 64, log_interval = 100, eval_samples = 8192,
          plot_bins = 200;
  bool cuda_graph = true;
  double ema = 0.99;
  AdamWConfig adamw;
  LrSchedule schedule;
  std::vector<DistSpec> dists;
};

const std::vector<std::string> kKinds = {
    "normal",    "gamma",   "mixture",     "pareto", "poisson", "binomial", "lognormal",
    "student_t", "uniform", "exponential", "beta",   "laplace", "weibull",  "file"};

void read_dist_params(ConfigReader& r, const std::string& p, DistSpec& d) {
  const double tiny = 1e-300, big = 1e300;
  DistributionParams& q = d.params;
  const std::string& k = q.kind;
  auto num = [&](const char* key, double lo, double hi) { return r.number(p + key, lo, hi); };
  if (k == "normal" || k == "lognormal") {
    q.a = num("mu", -big, big);
    q.b = num("sigma", tiny, big);
  } else if (k == "gamma") {
    q.a = num("alpha", tiny, big);
    q.b = r.number(p + "beta", 1.0, tiny, big);
  } else if (k == "pareto") {
    q.a = r.number(p + "x_m", 1.0, tiny, big);
    q.b = num("alpha", tiny, big);
  } else if (k == "poisson") {
    q.a = num("lambda", tiny, 1e6);
  } else if (k == "binomial") {
    q.a = double(r.integer(p + "n", 10, 1, 1000000));
    q.b = num("p", 0.0, 1.0);
  } else if (k == "student_t") {
    q.a = num("nu", tiny, big);
    q.b = r.number(p + "scale", 1.0, tiny, big);
  } else if (k == "uniform") {
    q.a = num("low", -big, big);
    q.b = num("high", -big, big);
    if (q.b <= q.a) r.fail_at(p + "high", "must be greater than low");
  } else if (k == "exponential") {
    q.a = num("rate", tiny, big);
  } else if (k == "beta") {
    q.a = num("a", tiny, big);
    q.b = num("b", tiny, big);
  } else if (k == "laplace") {
    q.a = num("mu", -big, big);
    q.b = num("b", tiny, big);
  } else if (k == "weibull") {
    q.a = num("k", tiny, big);
    q.b = num("lambda", tiny, big);
  } else if (k == "mixture") {
    const size_t n = r.list_size(p + "weights");
    if (n == 0) r.fail_at(p + "weights", "a mixture needs weights, means and stds lists");
    q.weights = r.numbers(p + "weights", {}, n);
    q.means = r.numbers(p + "means", {}, n);
    q.stds = r.numbers(p + "stds", {}, n);
    for (size_t i = 0; i < n; ++i) {
      if (q.weights[i] <= 0) r.fail_at(p + "weights", "weights must be positive");
      if (q.stds[i] <= 0) r.fail_at(p + "stds", "stds must be positive");
    }
  } else {  // file
    d.from_file = true;
    d.file.path = r.string(p + "path");
    d.file.format = r.choice(p + "format", "auto", {"auto", "text", "csv", "hdf5"});
    d.file.column = r.string(p + "column", "0");
    d.file.dataset = r.string(p + "dataset", "samples");
    d.file.skip_invalid = r.boolean(p + "skip_invalid", false);
    d.val_fraction = r.number(p + "val_fraction", 0.1, 0.01, 0.9);
  }
}

FitConfig read_fit_config(ConfigReader& r) {
  FitConfig c;
  const std::string name = r.string("run.name", "bide_fit");
  c.out_dir = r.string("run.out_dir", "runs/" + name);
  c.seed = uint64_t(r.integer("run.seed", 0, 0, INT64_MAX));
  c.device = r.string("run.device", "auto");
  const std::string vt = r.choice(
      "bide.dtype", "float16", {"float16", "bfloat16", "uint8", "uint16", "int8", "int16", "uint"});
  BideCode& code = c.bide.code;
  if (vt == "float16" || vt == "bfloat16") {
    code.type = vt == "float16" ? BideValueType::f16 : BideValueType::bf16;
    code.bits = 16;
  } else if (vt == "uint") {
    code.type = BideValueType::uint;
    code.bits = int(r.integer("bide.bits", 8, 1, 24));
  } else {
    code.type = vt[0] == 'u' ? BideValueType::uint : BideValueType::sint;
    code.bits = vt.find("16") != std::string::npos ? 16 : 8;
  }
  c.hidden = r.integer("bide.hidden", 2 * code.bits, 1, 64);
  if (r.has("bide.support")) {
    const std::vector<double> s = r.numbers("bide.support", {}, 2);
    c.bide.support_lo = int64_t(s[0]);
    c.bide.support_hi = int64_t(s[1]);
    if (!(s[0] >= 0 && s[1] > s[0] && s[1] <= std::ldexp(1.0, code.bits)))
      r.fail_at("bide.support", "expected [lo, hi) with 0 <= lo < hi <= 2^bits");
  }
  c.bide.variant = r.choice("sick.variant", "auto", {"auto", "bruteforce", "precomputed"});
  c.bide.dtype = r.choice("sick.dtype", "fp32", {"fp32", "fp16"});
  c.steps = r.integer("train.steps", 2000, 1, 100000000);
  c.batch = r.integer("train.batch_size", 64, 1, 1 << 20);
  c.log_interval = r.integer("train.log_interval", 100, 1, 100000000);
  c.ema = r.number("train.ema", 0.99, 0.0, 0.99999);
  c.cuda_graph = r.boolean("train.cuda_graph", true);
  read_adamw_and_schedule(r, {0.1, {0.9, 0.96}, 0.01, "exponential", 1e-5}, c.steps, &c.adamw,
                          &c.schedule);
  c.eval_samples = r.integer("eval.samples", 8192, 16, 1 << 24);
  c.plot_bins = r.integer("eval.plot_bins", 200, 10, 10000);
  const size_t n = r.list_size("distributions");
  if (n == 0) r.fail_at("distributions", "list at least one distribution");
  for (size_t i = 0; i < n; ++i) {
    const std::string p = "distributions." + std::to_string(i) + ".";
    DistSpec d;
    d.params.kind = r.choice(p + "kind", "", kKinds);
    d.name = r.string(p + "name", d.params.kind);
    read_dist_params(r, p, d);
    c.dists.push_back(d);
  }
  r.finish();
  return c;
}

// One distribution's data, as patterns.
struct DistData {
  std::unique_ptr<Distribution> truth;  // null for sample files
  std::vector<uint32_t> train_pool;     // files: the training split
  std::vector<uint32_t> eval;           // held-out patterns
  std::vector<double> eval_values;      // their values (files: the empirical reference)
  int64_t skipped = 0;
  std::string skip_note;
};

std::string fmt(double v, int prec = 4) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

}  // namespace

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
  auto check = [&](double v) -> std::string {
    uint32_t k;
    std::string why;
    if (!bide_encode(code, v, &k, &why)) return why;
    if (int64_t(k) < cfg.bide.support_lo || int64_t(k) >= support_hi)
      return "value outside the configured support";
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
        ++dd.skipped;  // e.g. a Pareto draw beyond float16's range
        BG_CHECK(attempt < 1000, "fit-bide", spec.name, ": samples keep falling outside ", bits,
                 "-bit values");
      }
    };
    for (int64_t s = 0; s < cfg.steps; ++s)
      for (int64_t i = 0; i < cfg.batch; ++i)
        train_y[size_t(s * per_step + d * cfg.batch + i)] = draw();
    if (!spec.from_file)
      for (int64_t i = 0; i < cfg.eval_samples; ++i) {
        const uint32_t k = draw();
        dd.eval.push_back(k);
        dd.eval_values.push_back(code.value(k));
      }
  }
  const Tensor y_all = from_vector(train_y, {cfg.steps, per_step}, device);
  std::vector<int64_t> idx_v(static_cast<size_t>(per_step));
  for (int64_t i = 0; i < per_step; ++i) idx_v[size_t(i)] = i / cfg.batch;
  const Tensor idx = from_vector(idx_v, {per_step}, device);

  // 2. Model: one embedding row per distribution -> W (H x B) and r (H) (the paper's init).
  Generator init(cfg.seed + 1);
  Embedding w_emb(n_dist, cfg.hidden * bits, init, std::sqrt(2.0 / double(bits)));
  Embedding r_emb(n_dist, cfg.hidden, init, 1.0 / std::sqrt(double(cfg.hidden)));
  FlatParameters params(
      {{"bide.w_embedding.weight", w_emb.weight}, {"bide.r_embedding.weight", r_emb.weight}},
      device);
  AdamW opt(params, cfg.adamw);
  std::printf(
      "fit-bide: %lld distribution(s), %lld-bit %s values, H = %lld, batch %lld each, %lld steps, "
      "device %s, variant %s\n",
      (long long)n_dist, (long long)bits,
      reader.effective_yaml().find("float16") != std::string::npos ? "float" : "",
      (long long)cfg.hidden, (long long)cfg.batch, (long long)cfg.steps, device.str().c_str(),
      bide_resolve_variant(cfg.bide, device, per_step, cfg.hidden).c_str());

  // 3. Train. Losses stay on the device until a progress line needs them.
  Tensor losses = zeros({cfg.steps}, DType::f32, device);
  std::vector<float> host_losses;
  double ema = 0, ema_hat = NAN;
  int64_t consumed = 0;
  auto fold_losses = [&](int64_t upto) {
    const std::vector<float> l = losses.slice(0, consumed, upto).to_vector<float>();
    for (float v : l) {
      BG_CHECK(std::isfinite(v), "fit-bide", "loss is ", v, " at step ", consumed + 1,
               "; stopping (nothing was written)");
      host_losses.push_back(v);
      ema = cfg.ema * ema + (1 - cfg.ema) * v;
      ++consumed;
    }
    ema_hat = ema / (1 - std::pow(cfg.ema, double(consumed)));
  };
  // One training step reads its targets and AdamW hyper-parameters from fixed device buffers
  // and writes its loss to one, so on a GPU it can be captured once as a CUDA graph and replayed
  // (a step is ~30 small kernels: launching them one by one costs more than running them).
  Tensor y_buf = empty({per_step}, DType::i64, device), hyper = empty({3}, DType::f32, device);
  Tensor loss_buf = zeros({1}, DType::f32, device);
  std::vector<float> sched;
  for (int64_t st = 0; st < cfg.steps; ++st)
    for (float v : opt.hyper_values(st + 1, cfg.schedule.at(st))) sched.push_back(v);
  const Tensor sched_t = from_vector(sched, {cfg.steps, 3}, device);
  auto train_step = [&] {
    params.zero_grad();
    const Tensor w = w_emb.forward(idx).reshape({per_step, cfg.hidden, bits});
    const Tensor r = r_emb.forward(idx);
    Tensor loss = bide_nll(w, r, y_buf, cfg.bide);
    loss.backward();
    opt.step_device(hyper);
    loss_buf.copy_(loss.detach().to(DType::f32).reshape({1}));
  };
  const bool use_graph = device.is_cuda() && cfg.cuda_graph;
  std::unique_ptr<CudaGraph> graph;
  synchronize(device);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < cfg.steps; ++step) {
    y_buf.copy_(y_all.slice(0, step, step + 1).reshape({per_step}));
    hyper.copy_(sched_t.slice(0, step, step + 1).reshape({3}));
    if (use_graph && step >= 2) {  // two eager steps warm the caches and the allocator first
      if (!graph) graph = std::make_unique<CudaGraph>(device, train_step);
      graph->replay();
    } else {
      train_step();
    }
    losses.slice(0, step, step + 1).copy_(loss_buf);
    if ((step + 1) % cfg.log_interval == 0 || step + 1 == cfg.steps) {
      fold_losses(step + 1);
      const double el =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("step %6lld/%lld | loss %.4f | ema %.4f | lr %.2e | %.0f steps/s | ETA %.1fs\n",
                  (long long)(step + 1), (long long)cfg.steps, host_losses.back(), ema_hat,
                  cfg.schedule.at(step), double(step + 1) / el,
                  el / double(step + 1) * double(cfg.steps - step - 1));
      std::fflush(stdout);
    }
  }
  opt.set_steps(cfg.steps);
  synchronize(device);
  const double train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // 4. Evaluate each distribution: NLL on held-out values, KS distance, moments, curves.
  NoGradGuard no_grad;
  struct Row {
    std::string name;
    double nll, ks, mean_fit, mean_ref, std_fit, std_ref, nonfinite;
  };
  std::vector<Row> rows;
  std::vector<plot::Panel> panels;
  std::ostringstream curves;
  curves << "distribution,x,cdf_fit,cdf_true,density_fit,density_true\n";
  const Tensor all_idx = arange(n_dist, DType::i64, device);
  const Tensor w_all = w_emb.forward(all_idx).reshape({n_dist, cfg.hidden, bits}),
               r_all = r_emb.forward(all_idx);
  const std::vector<double> logp_all =
      bide_pattern_log_probs(w_all, r_all, cfg.bide).to_vector<double>();
  const BideMoments mom = bide_moments(w_all, r_all, cfg.bide);
  const std::vector<double> mean_fit = mom.mean.to_vector<double>(),
                            var_fit = mom.variance.to_vector<double>(),
                            nonfinite = mom.nonfinite_mass.to_vector<double>();
  const int64_t k_all = int64_t(1) << bits;
  // Finite patterns in value order.
  std::vector<uint32_t> order;
  for (uint32_t key = 0; key < uint32_t(k_all); ++key) {
    const uint32_t k = code.from_order_key(key);
    if (code.finite(k)) order.push_back(k);
  }
  for (int64_t d = 0; d < n_dist; ++d) {
    const DistData& dd = data[size_t(d)];
    const double* lp = logp_all.data() + d * k_all;
    Row row;
    row.name = cfg.dists[size_t(d)].name;
    double nll = 0;
    for (uint32_t k : dd.eval) nll -= lp[k];
    row.nll = nll / double(dd.eval.size());
    // Reference CDF at each finite pattern: the true law rounded to the nearest value, or the
    // empirical CDF of the held-out samples.
    std::vector<double> sorted_eval = dd.eval_values;
    std::sort(sorted_eval.begin(), sorted_eval.end());
    auto ref_cdf_at = [&](size_t i) {
      const double x = code.value(order[i]);
      if (!dd.truth)
        return double(std::upper_bound(sorted_eval.begin(), sorted_eval.end(), x) -
                      sorted_eval.begin()) /
               double(sorted_eval.size());
      if (i + 1 == order.size()) return 1.0;
      const double nx = code.value(order[i + 1]);
      return dd.truth->cdf(code.is_float() ? 0.5 * (x + nx) : x);
    };
    double cum = 0, ks = 0;
    std::vector<double> fit_cdf(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      cum += std::exp(lp[order[i]]);
      fit_cdf[i] = cum;
      ks = std::max(ks, std::fabs(cum - ref_cdf_at(i)));
    }
    row.ks = ks;
    row.mean_fit = mean_fit[size_t(d)];
    row.std_fit = std::sqrt(var_fit[size_t(d)]);
    row.nonfinite = nonfinite[size_t(d)];
    if (dd.truth) {
      row.mean_ref = dd.truth->mean();
      row.std_ref = dd.truth->stddev();
    } else {
      double m = 0, v = 0;
      for (double x : dd.eval_values) m += x / double(dd.eval_values.size());
      for (double x : dd.eval_values) v += (x - m) * (x - m) / double(dd.eval_values.size());
      row.mean_ref = m;
      row.std_ref = std::sqrt(v);
    }
    rows.push_back(row);
    // Curves over [q 0.001, q 0.995] of the reference, in plot_bins equal bins.
    double lo, hi;
    if (dd.truth) {
      lo = dd.truth->quantile(0.002);
      hi = dd.truth->quantile(0.98);
    } else {
      lo = sorted_eval[size_t(0.002 * double(sorted_eval.size() - 1))];
      hi = sorted_eval[size_t(0.98 * double(sorted_eval.size() - 1))];
    }
    if (!(hi > lo)) hi = lo + 1;
    const int64_t nb = cfg.plot_bins;
    const double width = (hi - lo) / double(nb);
    // Fitted density of a bin: its mass over the summed widths of the value buckets inside it
    // (mass / bin width would alias against the float16 spacing).
    std::vector<double> mass(static_cast<size_t>(nb), 0.0), span(static_cast<size_t>(nb), 0.0), xs,
        cf, ct, df, dt;
    for (size_t i = 0; i < order.size(); ++i) {
      const double x = code.value(order[i]);
      const int64_t b = int64_t(std::floor((x - lo) / width));
      if (b >= 0 && b < nb) {
        mass[size_t(b)] += std::exp(lp[order[i]]);
        span[size_t(b)] += std::exp(code.log_bucket_width(order[i]));
      }
    }
    auto fit_cdf_at = [&](double x) {  // mass of finite values <= x
      size_t a = 0, z = order.size();
      while (a < z) {
        const size_t m = (a + z) / 2;
        if (code.value(order[m]) <= x)
          a = m + 1;
        else
          z = m;
      }
      return a == 0 ? 0.0 : fit_cdf[a - 1];
    };
    auto ref_cdf_x = [&](double x) {
      if (dd.truth) return dd.truth->cdf(x);
      return double(std::upper_bound(sorted_eval.begin(), sorted_eval.end(), x) -
                    sorted_eval.begin()) /
             double(sorted_eval.size());
    };
    for (int64_t b = 0; b < nb; ++b) {
      const double x0 = lo + double(b) * width, x1 = x0 + width, xc = 0.5 * (x0 + x1);
      xs.push_back(xc);
      cf.push_back(fit_cdf_at(x1));
      ct.push_back(ref_cdf_x(x1));
      df.push_back(span[size_t(b)] > 0 ? mass[size_t(b)] / span[size_t(b)] : 0.0);
      dt.push_back((ref_cdf_x(x1) - ref_cdf_x(x0)) / width);
      curves << row.name << "," << xc << "," << cf.back() << "," << ct.back() << "," << df.back()
             << "," << dt.back() << "\n";
    }
    const std::string ref_label = dd.truth ? "true" : "held-out samples";
    panels.push_back(
        {row.name + ": CDF",
         "value",
         "P(X <= x)",
         {{"BIDE fit", "#d62728", xs, cf, false}, {ref_label, "#1f77b4", xs, ct, true}}});
    panels.push_back(
        {row.name + ": density",
         "value",
         "density (per bin)",
         {{"BIDE fit", "#d62728", xs, df, false}, {ref_label, "#1f77b4", xs, dt, true}}});
  }

  // 5. Report and write every output (atomically) only now that everything succeeded.
  std::printf("\n%-14s %9s %8s %11s %11s %10s %10s %10s %8s\n", "distribution", "NLL", "KS",
              "mean fit", "mean ref", "std fit", "std ref", "nonfinite", "skipped");
  std::ostringstream summary;
  summary << "distribution,nll,ks,mean_fit,mean_ref,std_fit,std_ref,nonfinite_mass,skipped\n";
  for (size_t d = 0; d < rows.size(); ++d) {
    const Row& r = rows[d];
    std::printf("%-14s %9.4f %8.4f %11s %11s %10s %10s %10.2e %8lld\n", r.name.c_str(), r.nll, r.ks,
                fmt(r.mean_fit).c_str(), fmt(r.mean_ref).c_str(), fmt(r.std_fit).c_str(),
                fmt(r.std_ref).c_str(), r.nonfinite, (long long)data[d].skipped);
    summary << r.name << "," << r.nll << "," << r.ks << "," << r.mean_fit << "," << r.mean_ref
            << "," << r.std_fit << "," << r.std_ref << "," << r.nonfinite << "," << data[d].skipped
            << "\n";
    if (!data[d].skip_note.empty())
      std::printf("  %s: skipped %lld value(s), first: %s\n", r.name.c_str(),
                  (long long)data[d].skipped, data[d].skip_note.c_str());
  }
  // One pass: the debiased EMA curve feeds both metrics.csv and loss.svg.
  std::ostringstream metrics;
  metrics << "step,loss,ema_loss,lr\n";
  std::vector<double> steps_x, loss_y, ema_y;
  double e = 0;
  for (size_t s = 0; s < host_losses.size(); ++s) {
    e = cfg.ema * e + (1 - cfg.ema) * host_losses[s];
    steps_x.push_back(double(s + 1));
    loss_y.push_back(host_losses[s]);
    ema_y.push_back(e / (1 - std::pow(cfg.ema, double(s + 1))));
    metrics << s + 1 << "," << host_losses[s] << "," << ema_y.back() << ","
            << cfg.schedule.at(int64_t(s)) << "\n";
  }
  const std::string& out = cfg.out_dir;
  write_file_atomic(out + "/config.yaml", reader.effective_yaml());
  write_file_atomic(out + "/metrics.csv", metrics.str());
  write_file_atomic(out + "/summary.csv", summary.str());
  write_file_atomic(out + "/curves.csv", curves.str());
  write_file_atomic(out + "/fit.svg", plot::svg(panels, 2));
  write_file_atomic(out + "/loss.svg", plot::svg({{"training loss (mean NLL, nats)",
                                                   "step",
                                                   "loss",
                                                   {{"loss", "#bbbbbb", steps_x, loss_y, false},
                                                    {"EMA", "#d62728", steps_x, ema_y, false}}}},
                                                 1, 640, 360));
  CheckpointWriter ck(out + "/checkpoint.h5");
  for (const auto& [name, t] : params.named()) ck.tensor(name, t);
  ck.tensor("optimizer.exp_avg", opt.exp_avg());
  ck.tensor("optimizer.exp_avg_sq", opt.exp_avg_sq());
  ck.attr("format", std::string("bitgrad-bide-fit-v1"));
  ck.attr("config", reader.effective_yaml());
  ck.attr("step", cfg.steps);
  ck.attr("seed", int64_t(cfg.seed));
  ck.commit();
  std::printf(
      "\ntraining: %lld steps in %.3f s (%.0f steps/s) | final EMA loss %.4f | outputs in %s\n",
      (long long)cfg.steps, train_seconds, double(cfg.steps) / train_seconds, ema_hat, out.c_str());
  return 0;
}

}  // namespace bg::cli
