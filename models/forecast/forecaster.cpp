#include "forecaster.h"

#include <cmath>

#include "core/checkpoint.h"
#include "data/series.h"

namespace bg {
namespace {

int64_t input_width(SeriesInput input) { return input == SeriesInput::value ? 2 : 16; }

}  // namespace

const Settings<ForecasterConfig>& forecaster_settings() {
  static const Settings<ForecasterConfig> s = [] {
    Settings<ForecasterConfig> s("forecaster");
    s.nested(trunk_settings(), [](auto& c) -> TrunkConfig& { return c; });
    s.integer("model.scale_window", [](auto& c) -> auto& { return c.scale_window; }, 1, 1 << 16,
              "a window is scaled from its first scale_window values; only later values are "
              "targets",
              kArchitecture);
    s.integer("model.lag", [](auto& c) -> auto& { return c.lag; }, 0, 1 << 16,
              "also input the value this many steps before each target (0: none; a season's "
              "length, 12 for monthly data)",
              kArchitecture);
    s.boolean("model.seasonal_lag", [](auto& c) -> auto& { return c.seasonal_lag; },
              "with model.lag: each series' lag input is its cadence's season, read off its "
              "stamps (24 hourly, 7 daily, 5 business days, 52 weekly, 12 monthly, 4 quarterly, "
              "1 yearly); model.lag where they give none",
              kArchitecture | kOptional);
    s.choice("model.scaling", [](auto& c) -> auto& { return c.scaling; },
             "mean_abs (divide by the scale window's mean absolute value, Chronos), standard "
             "(subtract its mean, divide by its standard deviation) or running (each position "
             "by the mean |x| of the last scale_window values up to it)",
             kArchitecture);
    s.choice("model.input", [](auto& c) -> auto& { return c.input; },
             "value (the scaled value and a padding flag through a linear layer) or bits (its 16 "
             "float16 bits in {-1, +1} through a linear layer)",
             kArchitecture);
    s.nested(forecast_head_settings(), [](auto& c) -> auto& { return c.head; });
    return s;
  }();
  return s;
}

WindowSpec window_spec(const ForecasterConfig& cfg, int64_t context) {
  WindowSpec w;
  w.context = context;
  w.scale_len = cfg.scale_window;
  w.scaling = cfg.scaling;
  w.lag = cfg.lag;
  w.values = cfg.head.values;
  return w;
}

SettingProblem forecaster_config_problem(const ForecasterConfig& c) {
  if (const SettingProblem p = trunk_config_problem(c)) return p;
  if (c.seasonal_lag && c.lag == 0)
    return {"model.seasonal_lag",
            "needs model.lag >= 1: the lag input's channel, and the lag of series whose stamps "
            "give no season"};
  if (c.scale_window >= c.block_size)
    return {"model.scale_window", std::to_string(c.scale_window) +
                                      " leaves no targets in a window of model.block_size " +
                                      std::to_string(c.block_size)};
  if (c.head.kind == ForecastHeadKind::bide && c.head.variant == SickVariant::precomputed &&
      c.head.bide_hidden > kMaxPrecomputedSickHidden)
    return {"head.bide.sick.variant",
            "the precomputed kernel holds up to " + std::to_string(kMaxPrecomputedSickHidden) +
                " hidden units; use bruteforce or auto"};
  return {};
}

void save_forecaster_config(CheckpointWriter& ck, const ForecasterConfig& cfg) {
  forecaster_settings().save(ck, cfg);
}

ForecasterConfig load_forecaster_config(const CheckpointReader& ck, const std::string& path) {
  BG_CHECK(ck.has_attr("model_type") && ck.str_attr("model_type") == "forecaster", "checkpoint",
           path, " does not hold a forecaster");
  ForecasterConfig cfg = forecaster_settings().load(ck, path);
  if (const SettingProblem p = forecaster_config_problem(cfg))
    fail("checkpoint", path, ": attribute ", p.key, ": ", p.message);
  const char* input = cfg.input == SeriesInput::value ? "transformer.wve.weight"
                                                      : "transformer.wbe.weight";
  for (const auto& [name, want] :
       {std::pair<const char*, Shape>{
            input, Shape{cfg.n_embd, input_width(cfg.input) * series_channels(cfg.lag)}},
        {"transformer.wpe.weight", Shape{cfg.block_size, cfg.n_embd}}}) {
    BG_CHECK(ck.has(name), "checkpoint", path, ": missing tensor '", name, "'");
    BG_CHECK(ck.shape(name) == want, "checkpoint", path, ": tensor '", name, "' has shape ",
             shape_str(ck.shape(name)), ", but the model.* attributes say ", shape_str(want));
  }
  return cfg;
}

Forecaster::Forecaster(const ForecasterConfig& cfg, Generator& init) : cfg_(cfg) {
  if (const SettingProblem p = forecaster_config_problem(cfg)) fail("forecaster", p.key, ": ", p.message);
  const int64_t width = input_width(cfg.input) * series_channels(cfg.lag);
  // Unit-scale inputs: N(0, 0.02 / sqrt(width)) gives features of the GPT embedding's scale.
  input_ = register_module(cfg.input == SeriesInput::value ? "transformer.wve" : "transformer.wbe",
                           std::make_shared<Linear>(width, cfg.n_embd, false, init,
                                                    0.02 / std::sqrt(double(width))));
  trunk_ = register_module("transformer", std::make_shared<Trunk>(cfg, init));
  head_ = register_module("head", make_forecast_head(cfg.head, cfg.n_embd, init));
}

Tensor Forecaster::input_features(const Tensor& x) const {
  if (!input_table_.defined() || input_table_.device() != x.device()) {
    const int64_t width = input_width(cfg_.input);
    const ValueCode& code = value_code(cfg_.head.values);
    std::vector<float> table(size_t(65536 * width));
    for (int64_t k = 0; k < 65536; ++k) {
      float* row = &table[size_t(k * width)];
      if (cfg_.input == SeriesInput::bits) {
        for (int64_t j = 0; j < width; ++j) row[j] = (k >> j) & 1 ? 1.f : -1.f;
      } else if (k == code.pad()) {
        row[0] = 0.f, row[1] = 1.f;  // before the series: no value, the flag set
      } else {
        const double v = code.value(uint16_t(k));
        row[0] = std::isfinite(v) ? float(v) : 0.f, row[1] = 0.f;
      }
    }
    input_table_ = from_vector(table, {65536, width}, x.device());
  }
  if (cfg_.lag == 0) return input_->forward(embedding(input_table_, x));
  // Each channel's row of the table, side by side: (B, T, 2 x width).
  const Tensor rows = embedding(input_table_, x);  // (B, T, 2, width)
  return input_->forward(rows.reshape({x.size(0), x.size(1), input_->weight.size(1)}));
}

void Forecaster::check_input(const Tensor& x, int64_t max_t) const {
  const bool lagged = cfg_.lag > 0;
  BG_CHECK(x.ndim() == (lagged ? 3 : 2) && x.size(1) >= 1 && x.size(1) <= max_t &&
               (!lagged || x.size(2) == series_channels(cfg_.lag)),
           "forecaster", "expected ", lagged ? "(B, T, 2)" : "(B, T)",
           " value patterns with T in [1, ", max_t, "], got ", shape_str(x.shape()));
}

Tensor Forecaster::hidden(const Tensor& x, Generator& gen) const {
  check_input(x, cfg_.block_size);
  const int64_t b = x.size(0), t = x.size(1);
  const Tensor h = dropout(trunk_->stream_input(input_features(x), 0), cfg_.dropout, training(), gen);
  return trunk_->forward(h, gen).reshape({b * t, cfg_.n_embd});
}

namespace {

// The rows of y (B, T) whose targets count, and those targets.
void valid_targets(const Tensor& y, Device device, Tensor* rows, Tensor* patterns, int64_t* n) {
  std::vector<int64_t> r, p;
  const std::vector<int64_t> all = y.to(Device::cpu()).to(DType::i64).to_vector<int64_t>();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i] != kSeriesIgnore) {
      BG_CHECK(all[i] >= 0 && all[i] < 65536, "forecaster", "target ", all[i],
               " is not a float16 pattern");
      r.push_back(int64_t(i));
      p.push_back(all[i]);
    }
  *n = int64_t(r.size());
  if (r.empty()) return;
  *rows = from_vector(r, {*n}, device);
  *patterns = from_vector(p, {*n}, device);
}

}  // namespace

Tensor Forecaster::loss(const Tensor& x, const Tensor& y, Generator& gen) const {
  Tensor rows, patterns;
  int64_t n = 0;
  valid_targets(y, x.device(), &rows, &patterns, &n);
  BG_CHECK(n > 0, "forecaster", "a batch with no target (every target is padding or scale prefix)");
  return mean(head_->nll(embedding(hidden(x, gen), rows), patterns));
}

std::vector<double> Forecaster::target_nll(const Tensor& x, const Tensor& y) const {
  Tensor rows, patterns;
  int64_t n = 0;
  valid_targets(y, x.device(), &rows, &patterns, &n);
  if (n == 0) return {};
  Generator unused;
  NoGradGuard no_grad;
  return head_->nll(embedding(hidden(x, unused), rows), patterns)
      .to(Device::cpu())
      .to(DType::f64)
      .to_vector<double>();
}

void Forecaster::set_compute_mode(const ComputeMode& mode) {
  Module::set_compute_mode(mode);
  ComputeMode head_mode = mode;
  head_mode.activations = ActivationDtype::fp32;
  head_->set_compute_mode(head_mode);
}

KVCache Forecaster::new_cache(int64_t batch, Device device) const {
  return trunk_->new_cache(batch, device);
}

Tensor Forecaster::forward_cached_hidden(const Tensor& x, KVCache& cache) const {
  BG_CHECK(!training(), "forecaster", "forward_cached_hidden is for inference (train(false))");
  check_input(x, cfg_.block_size);
  const int64_t t = x.size(1), past = cache.length;
  BG_CHECK(t >= 1 && past + t <= cfg_.block_size, "forecaster", "positions ", past, "..",
           past + t - 1, " run past model.block_size = ", cfg_.block_size);
  return trunk_->forward_cached(trunk_->stream_input(input_features(x), past), cache);
}

}  // namespace bg
