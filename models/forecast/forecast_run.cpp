#include "forecast_run.h"

#include <cstdio>

#include "core/checkpoint.h"

namespace bg {

void held_out_windows(const SeriesSet& set, int64_t first_from_end, int64_t last_from_end,
                      const ForecasterConfig& cfg, Device device, Tensor* x, Tensor* y,
                      const std::vector<size_t>* only) {
  const int64_t context = cfg.block_size;
  std::vector<int64_t> xs, ys;
  std::vector<size_t> all;
  if (!only) {
    for (size_t i = 0; i < set.series.size(); ++i) all.push_back(i);
    only = &all;
  }
  for (const size_t i : *only) {
    const Series& s = set.series[i];
    const int64_t n = int64_t(s.y.size()), first = n - first_from_end, last = n - last_from_end;
    const size_t at = ys.size();
    // Inputs end before the last held-out point; the window's targets run up to it.
    series_window(s, last - 1, last, window_spec(cfg, context), xs, ys);
    // The target of position pos is point last - context + pos.
    for (int64_t pos = 0; pos < context; ++pos)
      if (last - context + pos < first) ys[at + size_t(pos)] = kSeriesIgnore;
  }
  const int64_t rows = int64_t(only->size());
  *x = from_vector(xs, series_input_shape(rows, context, cfg.lag), device);
  *y = from_vector(ys, {rows, context}, device);
}

SeriesTask::SeriesTask(const TrainRun& run, const std::string& config_yaml, SeriesSet set,
                       SeriesSplit split, Forecaster& model, Device device)
    : run_(run),
      config_yaml_(config_yaml),
      set_(std::move(set)),
      split_(std::move(split)),
      model_(model),
      device_(device),
      streams_(run.seed + 1, run.seed + 2) {}

Tensor SeriesTask::batch_loss(Generator& data) {
  Tensor x, y;
  const ForecasterConfig& c = model_.config();
  sample_series_windows(set_, split_.train_end, run_.batch, window_spec(c, c.block_size), data,
                        device_, &x, &y);
  return model_.loss(x, y, streams_.dropout);
}

Tensor SeriesTask::train_loss() { return batch_loss(streams_.data); }

void SeriesTask::seek_micro_batch(int64_t index) {
  streams_.seek(index, [&] { (void)batch_loss(streams_.data); });
}

double SeriesTask::validation_loss() {
  const EvalModeScope eval_mode(model_);
  const int64_t h = run_.data.horizon;
  const ForecasterConfig& c = model_.config();
  Tensor x, y;
  held_out_windows(set_, 2 * h, h, c, device_, &x, &y, &split_.validated);
  double total = 0;
  int64_t count = 0;
  // In chunks of train.batch_size series: the memory of a training micro-batch.
  for (int64_t at = 0; at < x.size(0); at += run_.batch) {
    const int64_t end = std::min(x.size(0), at + run_.batch);
    for (const double v : model_.target_nll(x.slice(0, at, end), y.slice(0, at, end))) {
      total += v;
      ++count;
    }
  }
  return count > 0 ? total / double(count) : NAN;
}

RunRecord SeriesTask::record() const {
  RunRecord r;
  r.model_type = kForecasterType;
  r.config_yaml = config_yaml_;
  r.data = run_.data;
  r.val_source = run_.data.path;
  r.mode = model_.compute_mode();
  r.data_offset = streams_.data.offset;
  r.dropout_offset = streams_.dropout.offset;
  return r;
}

void SeriesTask::save(CheckpointWriter& ck) const {
  save_run_record(ck, record(), [&](CheckpointWriter& w) {
    save_forecaster_config(w, model_.config());
    save_trained_attention(w, model_.config().fused_attention ? AttentionChoice::fused
                                                              : AttentionChoice::composed);
  });
}

void SeriesTask::load(const CheckpointReader& ck, const std::string& path) {
  BG_CHECK(is_train_checkpoint(ck), "train", path, " is not a bitgrad train checkpoint");
  BG_CHECK(ck.str_attr("model_type") == kForecasterType, "train", path, " holds a ",
           ck.str_attr("model_type"), " model, the config asks for a forecaster");
  const std::string diff =
      forecaster_settings().difference(load_forecaster_config(ck, path), model_.config());
  BG_CHECK(diff.empty(), "train", path,
           " holds another architecture than the config (checkpoint vs config: ", diff, ")");
  check_resume_run(ck, path, record(), run_.resume_mode_change, streams_);
}

SeriesSet read_forecaster_series(const std::string& path, const ForecasterConfig& cfg) {
  SeriesSet set = read_series(path);
  if (cfg.seasonal_lag) assign_seasonal_lags(set);
  return set;
}

int train_forecaster(const TrainRun& run, const RunContext& context,
                     const RunPlace& place) {
  check_data_path(run.data.path, "data.path");
  ForecasterConfig cfg = run.model.forecaster;
  SeriesSet set = read_forecaster_series(run.data.path, cfg);
  // A series validates when it leaves a target past the scale window before its validation and
  // test points; a shorter one trains on what it has (split_series).
  SeriesSplit split = split_series(set, run.data.horizon, cfg.scale_window + 1);
  if (!split.short_series.empty()) {
    std::string names;
    for (size_t k = 0; k < split.short_series.size() && k < 5; ++k) {
      const Series& s = set.series[split.short_series[k]];
      names += str_cat(k ? ", " : "", "'", s.id, "' (", s.y.size(), " points)");
    }
    if (split.short_series.size() > 5) names += str_cat(" and ", split.short_series.size() - 5, " more");
    std::printf("note: %zu series %s shorter than a validation split needs (2 x data.horizon %lld "
                "+ %lld points): %s; they train on all but their test window and are not "
                "validated\n",
                split.short_series.size(), split.short_series.size() == 1 ? "is" : "are",
                (long long)run.data.horizon, (long long)(cfg.scale_window + 1), names.c_str());
  }
  cfg.fused_attention = choose_fused_attention(run.model.attention, place.mode, place.device,
                                               cfg.n_embd / cfg.n_head);
  Generator init(run.seed);
  Forecaster model(cfg, init);
  model.set_compute_mode(place.mode);
  FlatParameters params(model.named_parameters(), place.device);
  int64_t points = 0;
  for (const Series& s : set.series) points += int64_t(s.y.size());
  std::printf(
      "data: %zu series, %lld points (last %lld of each test, %lld before validate) | model: "
      "forecaster, %s head, %lld parameters | device: %s | compute: %s\n",
      set.series.size(), (long long)points, (long long)run.data.horizon,
      (long long)run.data.horizon, enum_name(cfg.head.kind), (long long)params.numel(),
      place.device.str().c_str(), place.mode.str().c_str());
  SeriesTask task(run, context.effective_yaml, std::move(set), std::move(split), model,
                  place.device);
  const TrainResult result =
      run_trainer(run, context, place, {&params, model.flops_per_token(), cfg.block_size}, task);
  return result.stop_signal ? 130 : 0;
}

std::unique_ptr<LoadedForecaster> load_forecaster_checkpoint(const std::string& path,
                                                             Device device) {
  CheckpointReader ck(path);
  BG_CHECK(is_train_checkpoint(ck) && ck.has_attr("model_type") &&
               ck.str_attr("model_type") == kForecasterType,
           "checkpoint", path, " is not a bitgrad train checkpoint of a forecaster");
  auto out = std::make_unique<LoadedForecaster>();
  ForecasterConfig cfg = load_forecaster_config(ck, path);
  const ComputeMode trained = load_compute_mode(ck, path);
  const std::string activations = trunk_activations_problem(trained, cfg);
  BG_CHECK(activations.empty(), "checkpoint", path, ": ", activations);
  out->mode = inference_mode(trained).on(device);
  cfg.fused_attention = inference_fused_attention(trained, load_trained_attention(ck, path),
                                                  out->mode, device, cfg.n_embd / cfg.n_head);
  Generator init(0);
  out->model = std::make_unique<Forecaster>(cfg, init);
  out->model->set_compute_mode(out->mode);
  const auto named = out->model->named_parameters();
  check_root_datasets(ck, path, named);
  load_parameters(ck, named);
  out->params = FlatParameters(named, device);
  out->model->train(false);
  DataSpec series;
  series.format = DataFormat::series;
  const LoadedRecord record = read_run_record(ck, path, series);
  out->step = record.step;
  out->horizon = record.data.horizon;
  out->season = record.data.season;
  out->data_path = record.val_source;
  return out;
}

}  // namespace bg
