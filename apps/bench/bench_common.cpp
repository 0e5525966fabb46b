// bench_common.cpp: what every benchmark shares: the median, CUDA-event timing on the device's
// stream, the JSON output, and `bitgrad bench`'s dispatch to each benchmark.
#include "bench_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/json.h"
#include "core/ops.h"
#include "kernels/cuda/device_runtime.h"

namespace bg::cli {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double bench_time_ms(Device dev, const std::function<void()>& fn) {
  auto call = [](void* ctx) { (*static_cast<const std::function<void()>*>(ctx))(); };
  return cuda::time_on_stream_ms(stream_for(dev), call, const_cast<std::function<void()>*>(&fn));
}

double copy_bandwidth(Device dev, int reps) {
  const Tensor a = zeros({int64_t(1) << 28}, DType::f32, dev),
               b = zeros({int64_t(1) << 28}, DType::f32, dev);
  std::vector<double> t;
  for (int r = 0; r < reps + 2; ++r) {
    const double ms = bench_time_ms(dev, [&] { b.copy_(a); });
    if (r >= 2) t.push_back(ms);
  }
  return 2.0 * double(a.numel() * 4) / (median(t) * 1e-3);
}

double graph_us(Device dev, int sets, int reps, const std::function<void(int)>& call) {
  const StreamHandle stream = stream_for(dev);
  for (int i = 0; i < sets; ++i) call(i);  // warm-up outside the capture (library set-up)
  cuda::graph_begin_capture(stream);
  for (int i = 0; i < sets; ++i) call(i);
  void* graph = cuda::graph_end_capture(stream);
  std::vector<double> t;
  for (int r = 0; r < reps + 2; ++r) {
    const double ms = bench_time_ms(dev, [&] { cuda::graph_launch(graph, stream); });
    if (r >= 2) t.push_back(ms * 1e3 / sets);
  }
  cuda::graph_destroy(graph);
  return median(t);
}

JsonObject& JsonObject::add(const std::string& key, const std::string& value) {
  return raw(key, json_quote(value));
}

JsonObject& JsonObject::raw(const std::string& key, const std::string& json) {
  fields_ += (fields_.empty() ? "" : ", ") + json_quote(key) + ": " + json;
  return *this;
}

std::string JsonObject::number_text(double v) {
  return std::isfinite(v) ? shortest_text(v) : std::string("null");
}

BenchReport::BenchReport(const std::string& benchmark, const std::string& device) {
  settings_.add("benchmark", benchmark).add("device", device);
}

std::string BenchReport::rows_json() const {
  std::string out = "[";
  for (size_t i = 0; i < rows_.size(); ++i) out += (i ? ",\n    " : "\n    ") + rows_[i];
  return out + "\n  ]";
}

std::string BenchReport::str() const {
  std::string out = settings_.str();
  out.pop_back();  // the closing brace: the rows and the summary follow
  out += ",\n  \"results\": " + rows_json();
  const std::string summary = summary_.str();
  if (summary.size() > 2) out += ",\n  " + summary.substr(1, summary.size() - 2);
  return out + "\n}\n";
}

void BenchReport::write(const Args& args) const { write_bench_json(args, str()); }

void write_bench_json(const Args& args, const std::string& json) {
  const std::string out = args.option("out", "");
  if (out.empty()) return;
  write_file_atomic(out, json);
  std::printf("wrote %s\n", out.c_str());
}

int run_bench(const Args& args) {
  // Before minutes of timing, not after: --out must be a file that can be written.
  if (args.has("out")) check_output_file(args.option("out", ""), "bench", "--out");
  if (!args.positional.empty() && args.positional[0] == "attention")
    return run_bench_attention(args);
  if (!args.positional.empty() && args.positional[0] == "norms") return run_bench_norms(args);
  if (!args.positional.empty() && args.positional[0] == "gemm") return run_bench_gemm(args);
  if (!args.positional.empty() && args.positional[0] == "bitlinear")
    return run_bench_bitlinear(args);
  if (!args.positional.empty() && args.positional[0] == "lmul") return run_bench_lmul(args);
  if (!args.positional.empty() && args.positional[0] == "bide_head")
    return run_bench_bide_head(args);
  if (!args.positional.empty() && args.positional[0] == "forecast")
    return run_bench_forecast(args);
  return run_bench_sick(args);
}

}  // namespace bg::cli
