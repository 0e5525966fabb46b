// bench_common.h: the helpers of `bitgrad bench`'s benchmarks (apps/bench/*.cpp, one file a
// benchmark) and their entry points.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "../cli.h"
#include "core/device.h"

namespace bg::cli {

// The median of benchmark timings (the upper one of an even count).
double median(std::vector<double> v);
// Milliseconds fn takes on dev's stream (CUDA events around it).
double bench_time_ms(Device dev, const std::function<void()>& fn);
// Writes a benchmark's JSON to --out (when given).
void write_bench_json(const Args& args, const std::string& json);

int run_bench_sick(const Args& args);
int run_bench_attention(const Args& args);
int run_bench_norms(const Args& args);
int run_bench_gemm(const Args& args);
int run_bench_bitlinear(const Args& args);
int run_bench_lmul(const Args& args);
int run_bench_bide_head(const Args& args);

}  // namespace bg::cli
