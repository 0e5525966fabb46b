// check_determinism_checks.h: check-determinism's model checks for a forecaster
// (check_determinism_forecast.cpp); the language models' are in check_determinism.cpp.
#pragma once
#include <string>
#include <vector>

#include "core/device.h"
#include "determinism_record.h"

namespace bg::cli {

// Batch invariance (a series' forecast alone, with the file, one path a group) and sampler =
// trainer (KV-cached head outputs against the training forward's) of the forecaster at
// `checkpoint`, on the series its run trained on.
void forecaster_checks(const std::string& checkpoint, Device device,
                       std::vector<DeterminismRow>* rows);

}  // namespace bg::cli
