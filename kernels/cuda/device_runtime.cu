// device_runtime.cu: thin wrappers over the CUDA runtime (see device_runtime.h).
#include <cuda.h>  // driver types for the green-context entry points (not linked: see below)
#include <cuda_profiler_api.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "cuda_common.cuh"
#include "device_runtime.h"

namespace bg::cuda {

bool built_with_cuda() { return true; }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  BG_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

void set_device(int device) { BG_CUDA_CHECK(cudaSetDevice(device)); }

void* device_malloc(size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return p;
}

void device_free(void* ptr) { (void)cudaFree(ptr); }

void memcpy_async(void* dst, const void* src, size_t bytes, StreamHandle stream) {
  BG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, as_stream(stream)));
}

void memset_async(void* dst, int value, size_t bytes, StreamHandle stream) {
  BG_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, as_stream(stream)));
}

void stream_synchronize(StreamHandle stream) {
  BG_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
}

StreamHandle stream_create() {
  cudaStream_t s = nullptr;
  BG_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

void stream_destroy(StreamHandle stream) noexcept { (void)cudaStreamDestroy(as_stream(stream)); }

void stream_wait(StreamHandle waiter, StreamHandle waited) {
  cudaEvent_t e;
  BG_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  BG_CUDA_CHECK(cudaEventRecord(e, as_stream(waited)));
  BG_CUDA_CHECK(cudaStreamWaitEvent(as_stream(waiter), e, 0));
  BG_CUDA_CHECK(cudaEventDestroy(e));
}

StreamHandle stream_create_on_sms(int sm_count, int* granted, std::string* why) {
  // The driver's green-context calls, found through the runtime so that nothing links libcuda
  // (a CPU machine runs the binaries without it). Asked for as of CUDA 12.5, the first driver
  // API with cuGreenCtxStreamCreate; these are the 12.x signatures declared below.
  auto entry = [&](const char* name) -> void* {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion(name, &fn, 12050, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      *why = std::string("the driver has no ") + name;
      return nullptr;
    }
    return fn;
  };
  using GetResource = CUresult (*)(CUdevice, CUdevResource*, CUdevResourceType);
  using Split = CUresult (*)(CUdevResource*, unsigned*, const CUdevResource*, CUdevResource*,
                             unsigned, unsigned);
  using Describe = CUresult (*)(CUdevResourceDesc*, CUdevResource*, unsigned);
  using CreateGreen = CUresult (*)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned);
  using CreateStream = CUresult (*)(CUstream*, CUgreenCtx, unsigned, int);
  const auto get_resource = reinterpret_cast<GetResource>(entry("cuDeviceGetDevResource"));
  const auto split = reinterpret_cast<Split>(entry("cuDevSmResourceSplitByCount"));
  const auto describe = reinterpret_cast<Describe>(entry("cuDevResourceGenerateDesc"));
  const auto create_green = reinterpret_cast<CreateGreen>(entry("cuGreenCtxCreate"));
  const auto create_stream = reinterpret_cast<CreateStream>(entry("cuGreenCtxStreamCreate"));
  if (!get_resource || !split || !describe || !create_green || !create_stream) return nullptr;
  int dev = 0;
  BG_CUDA_CHECK(cudaGetDevice(&dev));
  BG_CUDA_CHECK(cudaFree(nullptr));  // the primary context exists before a green one
  CUdevResource all{}, part{}, rest{};
  unsigned groups = 1;
  CUgreenCtx green = nullptr;
  CUdevResourceDesc desc = nullptr;
  CUstream stream = nullptr;
  const char* step = nullptr;
  if (get_resource(CUdevice(dev), &all, CU_DEV_RESOURCE_TYPE_SM) != CUDA_SUCCESS)
    step = "cuDeviceGetDevResource";
  else if (split(&part, &groups, &all, &rest, 0, unsigned(sm_count)) != CUDA_SUCCESS || !groups)
    step = "cuDevSmResourceSplitByCount";
  else if (describe(&desc, &part, 1) != CUDA_SUCCESS)
    step = "cuDevResourceGenerateDesc";
  else if (create_green(&green, desc, CUdevice(dev), CU_GREEN_CTX_DEFAULT_STREAM) != CUDA_SUCCESS)
    step = "cuGreenCtxCreate";
  else if (create_stream(&stream, green, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS)
    step = "cuGreenCtxStreamCreate";
  if (step) {
    *why = std::string(step) + " failed";
    return nullptr;
  }
  *granted = int(part.sm.smCount);
  return static_cast<StreamHandle>(stream);
}

size_t device_memory_used() {
  size_t free_b = 0, total_b = 0;
  BG_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return total_b - free_b;
}

float time_on_stream_ms(StreamHandle stream, void (*fn)(void*), void* ctx) {
  cudaEvent_t start, stop;
  BG_CUDA_CHECK(cudaEventCreate(&start));
  BG_CUDA_CHECK(cudaEventCreate(&stop));
  BG_CUDA_CHECK(cudaEventRecord(start, as_stream(stream)));
  fn(ctx);
  BG_CUDA_CHECK(cudaEventRecord(stop, as_stream(stream)));
  BG_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.f;
  BG_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  return ms;
}

namespace {

// BITGRAD_SIMULATE_DEVICE's value: comma-separated key=value pairs, each a positive integer.
SimulatedDevice parse_simulated_device(const std::string& text) {
  const std::string var = "BITGRAD_SIMULATE_DEVICE";
  SimulatedDevice d;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq),
                      value = eq == std::string::npos ? "" : item.substr(eq + 1);
    int* field = key == "sms"         ? &d.sm_count
                 : key == "clock_mhz" ? &d.clock_mhz
                 : key == "l2_mb"     ? &d.l2_mb
                                      : nullptr;
    if (!field) kernel_fail("cuda", var + ": unknown key '" + key + "' (sms, clock_mhz, l2_mb)");
    char* stop = nullptr;
    const long v = value.empty() ? 0 : std::strtol(value.c_str(), &stop, 10);
    if (value.empty() || *stop != '\0' || v <= 0 || v > 1000000)
      kernel_fail("cuda", var + ": " + key + " needs a positive integer, got '" + value + "'");
    *field = int(v);
    at = end + 1;
  }
  if (!d.active()) kernel_fail("cuda", var + " is set but names no sms, clock_mhz or l2_mb");
  return d;
}

std::mutex g_simulated_mu;
bool g_simulated_read = false;
SimulatedDevice g_simulated;

}  // namespace

void simulate_device(const SimulatedDevice& device) {
  std::lock_guard<std::mutex> lock(g_simulated_mu);
  g_simulated = device;
  g_simulated_read = true;
}

SimulatedDevice simulated_device() {
  std::lock_guard<std::mutex> lock(g_simulated_mu);
  if (!g_simulated_read) {
    const char* env = std::getenv("BITGRAD_SIMULATE_DEVICE");
    if (env && *env) g_simulated = parse_simulated_device(env);
    g_simulated_read = true;
  }
  return g_simulated;
}

DeviceInfo device_info(int device) {
  cudaDeviceProp prop{};
  BG_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int clock_khz = 0;
  BG_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  DeviceInfo d;
  d.name = prop.name;
  d.sm_count = prop.multiProcessorCount;
  d.clock_mhz = clock_khz / 1000;
  d.l2_mb = int(prop.l2CacheSize >> 20);
  d.memory_gb = double(prop.totalGlobalMem) / (1 << 30);
  const SimulatedDevice sim = simulated_device();
  if (sim.active()) {
    d.simulated = true;
    if (sim.sm_count) d.sm_count = sim.sm_count;
    if (sim.clock_mhz) d.clock_mhz = sim.clock_mhz;
    if (sim.l2_mb) d.l2_mb = sim.l2_mb;
  }
  return d;
}

std::string describe(const DeviceInfo& info) {
  char text[160];
  std::snprintf(text, sizeof(text), ": %d SMs, %d MHz, %d MiB L2, %.1f GiB%s", info.sm_count,
                info.clock_mhz, info.l2_mb, info.memory_gb, info.simulated ? " (simulated)" : "");
  return info.name + text;
}

void graph_begin_capture(StreamHandle stream) {
  BG_CUDA_CHECK(cudaStreamBeginCapture(as_stream(stream), cudaStreamCaptureModeRelaxed));
}

void* graph_end_capture(StreamHandle stream) {
  cudaGraph_t graph = nullptr;
  BG_CUDA_CHECK(cudaStreamEndCapture(as_stream(stream), &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  BG_CUDA_CHECK(err);
  return exec;
}

void graph_launch(void* exec, StreamHandle stream) {
  BG_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), as_stream(stream)));
}

void graph_destroy(void* exec) noexcept {
  (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
}

void profiler_capture(bool on) { BG_CUDA_CHECK(on ? cudaProfilerStart() : cudaProfilerStop()); }

namespace {

constexpr const char* kKernelFamilyVar = "BITGRAD_KERNELS";

// The values BITGRAD_KERNELS takes.
constexpr std::pair<KernelFamily, const char*> kKernelFamilyNames[] = {
    {KernelFamily::best, "best"}, {KernelFamily::portable, "portable"}};

std::mutex g_kernel_family_mu;
bool g_kernel_family_read = false;
KernelFamily g_kernel_family = KernelFamily::best;

}  // namespace

void set_kernel_family(KernelFamily kernels) {
  std::lock_guard<std::mutex> lock(g_kernel_family_mu);
  g_kernel_family = kernels;
  g_kernel_family_read = true;
}

KernelFamily kernel_family() {
  std::lock_guard<std::mutex> lock(g_kernel_family_mu);
  if (!g_kernel_family_read) {
    g_kernel_family_read = true;
    const char* env = std::getenv(kKernelFamilyVar);
    if (env && *env) {
      bool known = false;
      for (const auto& [value, name] : kKernelFamilyNames)
        if (std::string(env) == name) g_kernel_family = value, known = true;
      if (!known)
        kernel_fail("cuda", std::string(kKernelFamilyVar) + ": unknown value '" + env +
                                "' (best, portable)");
    }
  }
  return g_kernel_family;
}

// The compute capability, not the SM count or clocks: two GPU models of one architecture (H100
// and H200) run the same kernels and give the same bits.
bool hopper_kernels_available() {
#if defined(BITGRAD_HAS_SM90A)
  int device = 0, major = 0, minor = 0;
  BG_CUDA_CHECK(cudaGetDevice(&device));
  BG_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  BG_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major == 9 && minor == 0;
#else
  return false;
#endif
}

}  // namespace bg::cuda
