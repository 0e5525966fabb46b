// forecast_run.h: training a forecaster (models/forecast/forecaster.h) on a series file: the Trainer's
// task (windows sampled across the series, the validation window's NLL), the run, and the
// checkpoint read back for `bitgrad forecast` and `bitgrad eval`.
#pragma once
#include <memory>
#include <string>

#include "data/series.h"
#include "models/forecast/forecaster.h"
#include "models/run_record.h"
#include "models/run.h"

namespace bg {

// A checkpoint's model_type for a forecaster.
inline constexpr const char* kForecasterType = "forecaster";

// One window per series over its held-out points [first, last) (validation: the horizon before
// the test window; test: the last horizon): inputs up to the last of them, the scale and the
// targets as data/series.h's series_window makes them, targets before `first` ignored.
// The window is the model's: model.block_size values, scaled as the model scales.
// `only`: those series of the set (the validated ones), in its order; null: every series.
void held_out_windows(const SeriesSet& set, int64_t first_from_end, int64_t last_from_end,
                      const ForecasterConfig& cfg, Device device, Tensor* x, Tensor* y,
                      const std::vector<size_t>* only = nullptr);

class SeriesTask : public TrainTask {
 public:
  // `split`: each series' training end and which are validated (data/series.h split_series).
  SeriesTask(const TrainRun& run, const std::string& config_yaml, SeriesSet set, SeriesSplit split,
             Forecaster& model, Device device);
  Tensor train_loss() override;
  // The mean NLL of every validated series' validation window (each point once, teacher-forced).
  double validation_loss() override;
  void save(CheckpointWriter& ck) const override;
  void load(const CheckpointReader& ck, const std::string& path) override;
  void seek_micro_batch(int64_t index) override;
  std::vector<uint64_t> stream_positions() const override { return streams_.positions(); }
  void set_stream_positions(const std::vector<uint64_t>& p) override { streams_.set_positions(p); }

 private:
  Tensor batch_loss(Generator& data);
  RunRecord record() const;  // what save writes and load checks
  const TrainRun& run_;
  std::string config_yaml_;
  SeriesSet set_;
  SeriesSplit split_;
  Forecaster& model_;
  Device device_;
  MicroBatchStreams streams_;
};

// A series file read for a forecaster of `cfg`: data/series.h's read_series, each series' own
// lag set from its cadence under model.seasonal_lag. What training, forecast, eval and
// check-determinism read.
SeriesSet read_forecaster_series(const std::string& path, const ForecasterConfig& cfg);

// Trains `run` (model.type forecaster, data.format series) at `place`; as train_run.
int train_forecaster(const TrainRun& run, const RunContext& context, const RunPlace& place);

// A trained forecaster read back, ready for inference on `device` in the mode its training
// implies, with the run's data settings.
struct LoadedForecaster {
  std::unique_ptr<Forecaster> model;
  FlatParameters params;
  ComputeMode mode;
  int64_t step = 0, horizon = 0, season = 1;
  std::string data_path;
};
std::unique_ptr<LoadedForecaster> load_forecaster_checkpoint(const std::string& path,
                                                             Device device);

}  // namespace bg
