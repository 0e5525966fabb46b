// fit_bide.cpp: `bitgrad fit-bide CONFIG`: fits one BIDE distribution per entry of
// `distributions` (built-in samplers or sample files) at once, as in the SICK BIDE paper: each
// distribution owns one learned embedding row that is reshaped into its W (H x B) and r (H);
// the loss is the mean NLL of the values' bit patterns, normalised exactly by SICK.
// Everything is validated (config, files, values) before the output folder is touched.
// bide.range restricts each distribution to a value range (fit_bide.h): the normaliser, the
// gradients and every evaluated quantity then sum over the patterns inside it.
#include "fit_bide.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <tuple>

#include "cli.h"
#include "core/config.h"
#include "core/graph.h"
#include "layers/layers.h"

namespace bg::cli {
namespace {

const std::vector<std::string> kKinds = {
    "normal",    "gamma",   "mixture",     "pareto", "poisson", "binomial", "lognormal",
    "student_t", "uniform", "exponential", "beta",   "laplace", "weibull",  "file"};

// Every kind's parameter keys, so that a parameter of another kind is named as such.
const std::vector<std::pair<std::string, std::vector<std::string>>> kParams = {
    {"normal", {"mu", "sigma"}},
    {"lognormal", {"mu", "sigma"}},
    {"gamma", {"alpha", "beta"}},
    {"pareto", {"x_m", "alpha"}},
    {"poisson", {"lambda"}},
    {"binomial", {"n", "p"}},
    {"student_t", {"nu", "scale"}},
    {"uniform", {"low", "high"}},
    {"exponential", {"rate"}},
    {"beta", {"a", "b"}},
    {"laplace", {"mu", "b"}},
    {"weibull", {"k", "lambda"}},
    {"mixture", {"weights", "means", "stds"}},
    {"file", {"path", "format", "column", "dataset", "skip_invalid", "val_fraction"}}};

void read_dist_params(ConfigReader& r, const std::string& p, DistSpec& d) {
  for (const auto& [kind, keys] : kParams)
    if (kind != d.params.kind)
      for (const std::string& k : keys) {
        bool own = false;
        for (const auto& [k2, keys2] : kParams)
          if (k2 == d.params.kind)
            for (const std::string& o : keys2) own |= o == k;
        if (!own) r.not_used(p + k, "kind is " + d.params.kind);
      }
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
  if (r.is_list("bide.range")) {
    const std::vector<double> v = r.numbers("bide.range", {}, 2);
    if (!(v[0] <= v[1])) r.fail_at("bide.range", "expected [lo, hi] with lo <= hi");
    if (bide_value_range_patterns(code, v[0], v[1]).empty())
      r.fail_at("bide.range", "holds no value of bide.dtype " + vt);
    c.range = RangeMode::fixed;
    c.range_lo = v[0];
    c.range_hi = v[1];
  } else {
    c.range = r.choice("bide.range", "auto", {"auto", "all"}) == "all" ? RangeMode::all
                                                                       : RangeMode::automatic;
  }
  if (c.range == RangeMode::automatic)
    c.auto_margin = r.number("bide.auto_margin", 0.02, 0.0, 100.0);
  else
    r.not_used("bide.auto_margin", "bide.range is not auto");
  if (r.has("bide.support")) {
    if (c.range != RangeMode::all)
      r.fail_at("bide.support",
                "a pattern range and bide.range exclude each other (set bide.range: all)");
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

// The support table rows of each distribution: all 2^B patterns, or its value range's pieces.
Tensor support_table(const BideCode& code, const std::vector<DistData>& data) {
  std::vector<std::pair<double, double>> ranges;
  for (const DistData& d : data) ranges.emplace_back(d.range_lo, d.range_hi);
  Tensor table = bide_support_table(code, ranges);
  int64_t* t = static_cast<int64_t*>(table.data_ptr());
  const int64_t n = int64_t(data.size());
  for (int64_t i = 0; i < n; ++i)
    if (data[size_t(i)].full_support) {
      t[i] = 0;
      t[n + i] = int64_t(1) << code.bits;
      t[2 * n + i] = t[3 * n + i] = 0;
    }
  return table;
}

// [min - m, max + m] with m = margin (max - min), never across zero.
std::pair<double, double> auto_range(const BideCode& code, const std::vector<uint32_t>& patterns,
                                     double margin_fraction) {
  double lo = INFINITY, hi = -INFINITY;
  for (uint32_t k : patterns) {
    lo = std::min(lo, code.value(k));
    hi = std::max(hi, code.value(k));
  }
  double margin = margin_fraction * (hi - lo);
  if (hi == lo) margin = margin_fraction * std::max(std::fabs(hi), 1.0);  // one repeated value
  double a = lo - margin, b = hi + margin;
  if (lo >= 0) a = std::max(a, 0.0);
  if (hi <= 0) b = std::min(b, 0.0);
  return {a, b};
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
      std::tie(dd.range_lo, dd.range_hi) =
          auto_range(code, spec.from_file ? dd.train_pool : drawn, cfg.auto_margin);
    }
  }
  // The data is valid: check the output folder before the run, not at its end.
  check_output_dir(cfg.out_dir, "fit-bide");
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
  Embedding w_emb(n_dist, cfg.hidden * bits, init, std::sqrt(2.0 / double(bits)));
  Embedding r_emb(n_dist, cfg.hidden, init, 1.0 / std::sqrt(double(cfg.hidden)));
  FlatParameters params(
      {{"bide.w_embedding.weight", w_emb.weight}, {"bide.r_embedding.weight", r_emb.weight}},
      device);
  AdamW opt(params, cfg.adamw);
  std::printf(
      "fit-bide: %lld distribution(s), %lld-bit %s values, H = %lld, batch %lld each, %lld steps, "
      "device %s, variant %s, range %s\n",
      (long long)n_dist, (long long)bits, code.is_float() ? "float" : "integer",
      (long long)cfg.hidden, (long long)cfg.batch, (long long)cfg.steps, device.str().c_str(),
      bide_resolve_variant(cfg.bide, device, per_step, cfg.hidden).c_str(),
      cfg.range == RangeMode::all     ? "all"
      : cfg.range == RangeMode::fixed ? "fixed"
                                      : "auto");

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
    Tensor loss = bide_nll(w, r, y_buf, train_opt);
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

  // 4./5. Evaluate each distribution and write every output.
  NoGradGuard no_grad;
  const Tensor all_idx = arange(n_dist, DType::i64, device);
  const Tensor w_all = w_emb.forward(all_idx).reshape({n_dist, cfg.hidden, bits}),
               r_all = r_emb.forward(all_idx);
  report_fit(cfg, reader, data,
             {w_all, r_all, eval_opt, params, opt, host_losses, train_seconds, ema_hat});
  return 0;
}

}  // namespace bg::cli
