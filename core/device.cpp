#include "device.h"

#include <mutex>
#include <vector>

#include "../kernels/cuda/device_runtime.h"
#include "error.h"

namespace bg {

int cuda_device_count() {
  static const int n = cuda::device_count();
  return n;
}
bool cuda_available() { return cuda_device_count() > 0; }

Device parse_device(const std::string& s) {
  if (s == "cpu") return Device::cpu();
  if (s == "auto") return cuda_available() ? Device::cuda(0) : Device::cpu();
  if (s == "cuda" || s.rfind("cuda:", 0) == 0) {
    int idx = 0;
    if (s.size() > 5) {
      try {
        idx = std::stoi(s.substr(5));
      } catch (const std::exception&) {
        fail("device", "bad device '", s, "' (expected cpu, cuda, cuda:N or auto)");
      }
    }
    BG_CHECK(cuda::built_with_cuda(), "device", "'", s,
             "' requested but bitgrad was built without CUDA");
    BG_CHECK(idx >= 0 && idx < cuda_device_count(), "device", "'", s, "' requested but ",
             cuda_device_count(), " CUDA device(s) are visible");
    return Device::cuda(idx);
  }
  fail("device", "bad device '", s, "' (expected cpu, cuda, cuda:N or auto)");
}

namespace {
std::mutex g_streams_mu;
std::vector<StreamHandle> g_streams;  // one per CUDA device, created on first use
}  // namespace

StreamHandle stream_for(const Device& d) {
  if (d.is_cpu()) return nullptr;
  std::lock_guard<std::mutex> lock(g_streams_mu);
  if (g_streams.size() <= size_t(d.index)) g_streams.resize(size_t(d.index) + 1, nullptr);
  if (!g_streams[size_t(d.index)]) {
    cuda::set_device(d.index);
    g_streams[size_t(d.index)] = cuda::stream_create();
  }
  return g_streams[size_t(d.index)];
}

ScopedStream::ScopedStream(Device device, StreamHandle stream)
    : device_(device), previous_(stream_for(device)) {
  BG_CHECK(device.is_cuda(), "device", "ScopedStream needs a CUDA device");
  cuda::stream_synchronize(previous_);
  std::lock_guard<std::mutex> lock(g_streams_mu);
  g_streams[size_t(device.index)] = stream;
}

ScopedStream::~ScopedStream() {
  try {
    cuda::stream_synchronize(stream_for(device_));
  } catch (const std::exception&) {  // a failed kernel was reported where it ran
  }
  std::lock_guard<std::mutex> lock(g_streams_mu);
  g_streams[size_t(device_.index)] = previous_;
}

void synchronize(const Device& d) {
  if (d.is_cuda()) cuda::stream_synchronize(stream_for(d));
}

void profiler_capture(const Device& d, bool on) {
  if (!d.is_cuda()) return;
  synchronize(d);
  cuda::profiler_capture(on);
}

void select_cuda_device(int index) { cuda::set_device(index); }
std::string cuda_device_name(int index) { return cuda::device_name(index); }
size_t cuda_memory_in_use() { return cuda::device_memory_used(); }

double peak_bf16_tflops(const std::string& name) {
  struct Peak {
    const char* key;
    double tflops;
  };
  // Dense (no sparsity) BF16 tensor throughput; "H100 PCIe" before "H100".
  static const Peak peaks[] = {{"H200", 989.4}, {"H100 PCIe", 756.0}, {"H100", 989.4},
                               {"H800", 989.4}, {"GH200", 989.4},     {"A100", 312.0},
                               {"A800", 312.0}, {"L40S", 362.1},      {"L4", 121.0},
                               {"A10", 125.0},  {"RTX 4090", 165.2},  {"RTX 3090", 71.0}};
  for (const Peak& p : peaks)
    if (name.find(p.key) != std::string::npos) return p.tflops;
  return 0;
}

}  // namespace bg
