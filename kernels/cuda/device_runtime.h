// device_runtime.h: the few CUDA runtime services core needs (devices, memory, streams,
// copies). Compiled from device_runtime.cu with CUDA, or device_runtime_stub.cpp without it,
// so core never includes a CUDA header and a CPU-only build links.
#pragma once
#include <cstddef>
#include <string>

#include "../kernel_types.h"

namespace bg::cuda {

bool built_with_cuda();
int device_count();  // 0 without a driver or device
std::string device_name(int device);
void set_device(int device);
void* device_malloc(size_t bytes);  // nullptr when the device is out of memory
void device_free(void* ptr);
void memcpy_async(void* dst, const void* src, size_t bytes, StreamHandle stream);  // any direction
void memset_async(void* dst, int value, size_t bytes, StreamHandle stream);
void stream_synchronize(StreamHandle stream);
StreamHandle stream_create();
void stream_destroy(StreamHandle stream) noexcept;
// Work issued to `waiter` from now on starts after everything issued to `waited` so far.
void stream_wait(StreamHandle waiter, StreamHandle waited);
// A stream whose kernels run on only `sm_count` of the current device's SMs (a CUDA green
// context; the count is rounded up to the driver's granularity and returned in *granted).
// Empty, with the reason in *why, where the driver has no green contexts. The partition test
// runs the same work on it and on the whole GPU. Never destroyed: tests make one or two.
StreamHandle stream_create_on_sms(int sm_count, int* granted, std::string* why);
size_t device_memory_used();  // bytes in use on the current device (free/total query)
// Milliseconds between two events recorded on `stream` around fn() (waits for the stop event).
float time_on_stream_ms(StreamHandle stream, void (*fn)(void*), void* ctx);
// The device that launch decisions and the deterministic mode's GEMM algorithm choice are told
// they run on, where it differs from the real one: the test that deterministic bits never follow
// the GPU model runs one step under several such devices on one GPU. 0 keeps the device's own
// value. Set by simulate_device() or, for a whole command, by the environment:
// BITGRAD_SIMULATE_DEVICE="sms=114,clock_mhz=1755,l2_mb=50" (any subset of the three keys).
struct SimulatedDevice {
  int sm_count = 0;
  int clock_mhz = 0;
  int l2_mb = 0;
  bool active() const { return sm_count > 0 || clock_mhz > 0 || l2_mb > 0; }
};
void simulate_device(const SimulatedDevice& device);  // SimulatedDevice{} ends the simulation
SimulatedDevice simulated_device();
// A device as reports and launch decisions see it: the simulated values where one is set.
struct DeviceInfo {
  std::string name;
  int sm_count = 0;
  int clock_mhz = 0;
  int l2_mb = 0;
  double memory_gb = 0;
  bool simulated = false;
};
DeviceInfo device_info(int device);
// "NVIDIA H200: 132 SMs, 1980 MHz, 60 MiB L2, 139.8 GiB", with "(simulated)" after a simulated
// device's values.
std::string describe(const DeviceInfo& info);
// Where the deterministic mode's GEMM algorithms came from, counted per distinct product since
// the process started: the built-in table's exact row, its nearest row of the same kind, or
// cuBLASLt's heuristic (the one source whose choice can differ between GPU models).
struct GemmAlgoSources {
  int64_t table = 0, nearest_row = 0, heuristic = 0;
};
GemmAlgoSources batch_invariant_algo_sources();
// Which family of tensor-core kernels runs where there are two: the fused attention,
// BitLinear's int8 product and the W2A8 product at batches of 2 and up. `best`: the Hopper ones
// (wgmma; built when the CUDA architectures include 90a) on a compute capability 9.0 GPU, for
// the inputs they take (bf16 attention rows that start 16-byte aligned; any int8_linear or
// w2a8_linear operands); the portable mma.sync ones (sm_80 and later) otherwise. `portable`:
// those everywhere. The two families give the same bits on Hopper (the attention's steps in the
// same order, tests/test_attention.cpp; the integer products are exact). Tests and the benchmarks pin one to compare their speed; a command takes
// BITGRAD_KERNELS=portable (or best) from the environment.
enum class KernelFamily { best, portable };
void set_kernel_family(KernelFamily kernels);
KernelFamily kernel_family();
// Whether this build has the Hopper kernels and the current device runs them.
bool hopper_kernels_available();
// CUDA graphs: capture everything issued on `stream` between begin and end, then replay it.
void graph_begin_capture(StreamHandle stream);
void* graph_end_capture(StreamHandle stream);  // returns an executable graph
void graph_launch(void* exec, StreamHandle stream);
void graph_destroy(void* exec) noexcept;
// The profiler's capture range (cudaProfilerStart/Stop): what `ncu --profile-from-start off`
// records. No effect without a profiler attached.
void profiler_capture(bool on);

}  // namespace bg::cuda
