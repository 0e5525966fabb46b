// train.h: `bitgrad train`'s config reader (train_config.cpp) and its loss curve, shared with
// check-determinism, which runs the same training N times.
#pragma once
#include <string>

#include "models/run.h"

namespace bg {
class ConfigReader;
}

namespace bg::cli {

TrainRun read_train_config(ConfigReader& r);

// The train and validation loss against step, from the metrics CSV (resumed runs included).
std::string loss_plot(const std::string& metrics_csv);

// The run a config file and its --set overrides describe (the config read, checked and
// finished), as train_run takes it.
struct ConfiguredRun {
  TrainRun run;
  RunContext context;
};
ConfiguredRun configured_run(const std::string& config_path,
                             const std::vector<std::string>& overrides);

}  // namespace bg::cli
