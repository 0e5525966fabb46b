// forecaster.h: a decoder-only forecaster of real-valued series. Position t reads the window's
// scaled value x_t (data/series.h: scaled from the window's first scale_window values by
// model.scaling, then rounded to float16) and predicts x_{t+1}; the trunk is the GPT's
// (models/transformer.h: learned position embeddings, n_layer pre-LayerNorm blocks of causal
// attention and MLP, a final LayerNorm), the head one of models/forecast/forecast_heads.h's laws. Inputs:
//   value  the scaled value and a flag for the left padding before a series starts, through a
//          bias-free 2 -> n_embd linear layer (transformer.wve);
//   bits   the value's 16 float16 bits in {-1, +1} through a 16 -> n_embd linear layer
//          (transformer.wbe), the GPT's bit input over the value's pattern.
// Forecasting draws the next value, feeds it back through the KV cache and draws again.
#pragma once
#include <memory>

#include "data/series.h"
#include "models/forecast/forecast_heads.h"
#include "models/transformer.h"

namespace bg {

#define BG_SERIES_INPUTS(X) X(value, "value") X(bits, "bits")
BG_NAMED_ENUM(SeriesInput, BG_SERIES_INPUTS)

// The trunk's fields (models/transformer.h) and the forecaster's own.
struct ForecasterConfig : TrunkConfig {
  ForecasterConfig() {
    block_size = 128;
    n_layer = 4;
    n_head = 4;
    n_embd = 128;
  }
  // model.scale_window: a window is scaled from its first scale_window values, and only values
  // after them are targets (a forecast's context is scaled the same way).
  int64_t scale_window = 32;
  SeriesScaling scaling = SeriesScaling::mean_abs;
  // model.lag: beside each position's value, the value `lag` steps before its target (0: none);
  // a season's length hands the model last season's value (DeepAR's and Lag-Llama's lag inputs).
  int64_t lag = 0;
  // model.seasonal_lag: each series' lag is its cadence's season (data/series.h
  // assign_seasonal_lags); model.lag is the fallback and the channel's presence.
  bool seasonal_lag = false;
  SeriesInput input = SeriesInput::value;
  ForecastHeadSpec head;
};

// Its declared fields (core/settings.h): model.* and the head's.
const Settings<ForecasterConfig>& forecaster_settings();
// How the model cuts a window of `context` positions (data/series.h).
WindowSpec window_spec(const ForecasterConfig& cfg, int64_t context);
// The rules between them (n_embd divisible by n_head, a scale window inside the block).
SettingProblem forecaster_config_problem(const ForecasterConfig& cfg);
void save_forecaster_config(CheckpointWriter& ck, const ForecasterConfig& cfg);
ForecasterConfig load_forecaster_config(const CheckpointReader& ck, const std::string& path);

class Forecaster : public Module {
 public:
  Forecaster(const ForecasterConfig& cfg, Generator& init);
  // Windows x of input patterns (the format's pad id before a series), (B, T) or with model.lag (B, T, 2)
  // (data/series.h's series_input_shape) -> ln_f's rows (B T, n_embd).
  Tensor hidden(const Tensor& x, Generator& gen) const;
  // The mean NLL (nats per target, a density of the scaled value) of the targets y (B, T) that
  // are not kSeriesIgnore.
  Tensor loss(const Tensor& x, const Tensor& y, Generator& gen) const;
  // Each such target's NLL, in row order, without dropout (call train(false) first); empty when
  // there are none.
  std::vector<double> target_nll(const Tensor& x, const Tensor& y) const;
  // Inference through the KV cache: x (B, T[, 2]) continues the cache's positions; ln_f's rows
  // of the last position (B, n_embd).
  KVCache new_cache(int64_t batch, Device device) const;
  Tensor forward_cached_hidden(const Tensor& x, KVCache& cache) const;
  const ForecastHead& head() const { return *head_; }
  // The trunk and input in `mode`; the head in it with f32 activations: under
  // train.activations: bf16 the residual stream is bf16 and the head reads ln_f's bf16 rows (as
  // under bf16 precision), while its own laws (log densities, SICK's normaliser) keep f32.
  void set_compute_mode(const ComputeMode& mode) override;
  // A training token's FLOPs by the trunk's estimate (models/transformer.h), N the parameters
  // but the position table's.
  double flops_per_token() const {
    return trunk_->flops_per_token(parameter_count() - trunk_->position_parameters());
  }
  const ForecasterConfig& config() const { return cfg_; }

 private:
  Tensor input_features(const Tensor& x) const;  // (B, T, n_embd)
  ForecasterConfig cfg_;
  std::shared_ptr<Linear> input_;  // transformer.wve or transformer.wbe
  std::shared_ptr<Trunk> trunk_;   // transformer.wpe, transformer.h.N, transformer.ln_f
  std::shared_ptr<ForecastHead> head_;
  mutable Tensor input_table_;  // (65536, 2 or 16) per pattern, on the device of the last call
  void check_input(const Tensor& x, int64_t max_t) const;
};

}  // namespace bg
