// device_runtime_stub.cpp: the CPU-only build's device runtime: no devices, and a clear error
// for anything that would need one.
#include "device_runtime.h"

namespace bg::cuda {
namespace {
[[noreturn]] void no_cuda() { kernel_fail("cuda", "bitgrad was built without CUDA support"); }
}  // namespace

bool built_with_cuda() { return false; }
int device_count() { return 0; }
std::string device_name(int) { no_cuda(); }
void set_device(int) { no_cuda(); }
void* device_malloc(size_t) { no_cuda(); }
void device_free(void*) {}
void memcpy_async(void*, const void*, size_t, StreamHandle) { no_cuda(); }
void memset_async(void*, int, size_t, StreamHandle) { no_cuda(); }
void stream_synchronize(StreamHandle) { no_cuda(); }
StreamHandle stream_create() { no_cuda(); }
void stream_destroy(StreamHandle) noexcept {}
void stream_wait(StreamHandle, StreamHandle) { no_cuda(); }
StreamHandle stream_create_on_sms(int, int*, std::string* why) {
  *why = "bitgrad was built without CUDA support";
  return nullptr;
}
size_t device_memory_used() { return 0; }
float time_on_stream_ms(StreamHandle, void (*)(void*), void*) { no_cuda(); }
DeviceInfo device_info(int) { no_cuda(); }
void simulate_device(const SimulatedDevice&) {}
SimulatedDevice simulated_device() { return {}; }
std::string describe(const DeviceInfo&) { no_cuda(); }
GemmAlgoSources batch_invariant_algo_sources() { return {}; }
void graph_begin_capture(StreamHandle) { no_cuda(); }
void* graph_end_capture(StreamHandle) { no_cuda(); }
void graph_launch(void*, StreamHandle) { no_cuda(); }
void graph_destroy(void*) noexcept {}
void profiler_capture(bool) {}
void set_kernel_family(KernelFamily) {}
KernelFamily kernel_family() { return KernelFamily::best; }
bool hopper_kernels_available() { return false; }

}  // namespace bg::cuda
