// bench_common.h: the helpers of `bitgrad bench`'s benchmarks (apps/bench/*.cpp, one file a
// benchmark) and their entry points.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "../cli.h"
#include "core/device.h"

namespace bg::cli {

// Tensor-core ceilings the benchmarks' floors use: bf16 is the GEMM rate measured on an H200
// (../REFERENCES.md: 728 TFLOP/s at 4096^3); int8 is taken as twice it, Hopper's int8 to bf16
// ratio of peaks (1979 / 989 TOPS dense).
constexpr double kBf16TensorFlops = 728e12;
constexpr double kInt8TensorOps = 2 * kBf16TensorFlops;

// The median of benchmark timings (the upper one of an even count).
double median(std::vector<double> v);
// Milliseconds fn takes on dev's stream (CUDA events around it).
double bench_time_ms(Device dev, const std::function<void()>& fn);
// Device-to-device copy bandwidth (bytes read + written per second) over 1 GiB: the memory
// floor's rate.
double copy_bandwidth(Device dev, int reps);
// Median microseconds per call of `call(i)` for i in [0, sets), each replay of one captured CUDA
// graph running all of them once (no host work in the time, as in a captured training step).
double graph_us(Device dev, int sets, int reps, const std::function<void(int)>& call);
// Writes a benchmark's JSON to --out (when given).
void write_bench_json(const Args& args, const std::string& json);

int run_bench_sick(const Args& args);
int run_bench_attention(const Args& args);
int run_bench_norms(const Args& args);
int run_bench_gemm(const Args& args);
int run_bench_bitlinear(const Args& args);
int run_bench_lmul(const Args& args);
int run_bench_bide_head(const Args& args);
int run_bench_forecast(const Args& args);

}  // namespace bg::cli
