// bench_common.h: the helpers of `bitgrad bench`'s benchmarks (apps/bench/*.cpp, one file a
// benchmark) and their entry points.
#pragma once
#include <functional>
#include <string>
#include <type_traits>
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
// One JSON object's fields, in the order added: strings quoted and escaped (core/json.h), numbers
// as the fewest digits that read back to the same double, a non-finite one as null (JSON has no
// NaN), `raw` a value made elsewhere (an array, an object).
class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& value);
  JsonObject& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  JsonObject& add(const std::string& key, bool value) { return raw(key, value ? "true" : "false"); }
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  JsonObject& add(const std::string& key, T value) {
    return raw(key, number_text(double(value)));
  }
  JsonObject& raw(const std::string& key, const std::string& json);
  std::string str() const { return "{" + fields_ + "}"; }

 private:
  static std::string number_text(double v);
  std::string fields_;
};

// A benchmark's JSON document: {"benchmark": name, "device": the GPU, the settings, "results":
// one object a measured row, then the summary fields}; written to --out when given.
class BenchReport {
 public:
  BenchReport(const std::string& benchmark, const std::string& device);
  JsonObject& settings() { return settings_; }  // fields before the rows
  JsonObject& summary() { return summary_; }    // fields after them
  void row(const JsonObject& r) { rows_.push_back(r.str()); }
  // The rows as a JSON array (a section of a document made of several).
  std::string rows_json() const;
  std::string str() const;
  void write(const Args& args) const;

 private:
  JsonObject settings_, summary_;
  std::vector<std::string> rows_;
};
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
