// device.h: where a tensor lives, and the stream its work is issued on.
#pragma once
#include <string>

#include "../kernels/kernel_types.h"

namespace bg {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;
  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int i = 0) { return {DeviceType::cuda, i}; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool is_cpu() const { return type == DeviceType::cpu; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
};

// Parses "cpu", "cuda", "cuda:N" or "auto" (CUDA when a GPU is present, else CPU).
Device parse_device(const std::string& s);
// The dense bf16 tensor-core peak (TFLOP/s) of a GPU by its name (vendor data sheets); 0 when
// unknown. MFU is measured against it.
double peak_bf16_tflops(const std::string& gpu_name);
bool cuda_available();
int cuda_device_count();
// The GPU this process's CUDA work goes to by default (a data-parallel rank's own), its name,
// and the bytes in use on the current one (the CUDA context and libraries included).
void select_cuda_device(int index);
std::string cuda_device_name(int index);
size_t cuda_memory_in_use();

// bitgrad issues all work for a device on one stream (created on first use), which keeps
// the caching allocator's reuse safe and cuBLAS deterministic. CPU work ignores it.
StreamHandle stream_for(const Device& d);
void synchronize(const Device& d);
// Opens (on) or closes the profiler's capture range after the device's queued work: the steps
// `ncu --profile-from-start off` records (BITGRAD_PROFILE_STEPS, trainer.h). CPU: nothing.
void profiler_capture(const Device& d, bool on);

// Issues `device`'s work on `stream` while it lives (the partition test runs a training step on
// a stream of a few SMs). Both streams are synchronised at each switch, so blocks the caching
// allocator hands from one stream's work to the other's stay ordered.
class ScopedStream {
 public:
  ScopedStream(Device device, StreamHandle stream);
  ~ScopedStream();
  ScopedStream(const ScopedStream&) = delete;
  ScopedStream& operator=(const ScopedStream&) = delete;

 private:
  Device device_;
  StreamHandle previous_;
};

}  // namespace bg
