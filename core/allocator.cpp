#include "allocator.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "../kernels/cuda/device_runtime.h"
#include "error.h"

namespace bg {
namespace {

constexpr size_t kMinBlock = 512;
constexpr size_t kLargeRound = size_t(2) << 20;  // 2 MiB granules above 1 MiB

size_t bucket_size(size_t bytes) {
  if (bytes <= kMinBlock) return kMinBlock;
  if (bytes <= (size_t(1) << 20)) {
    size_t b = kMinBlock;
    while (b < bytes) b <<= 1;
    return b;
  }
  return (bytes + kLargeRound - 1) / kLargeRound * kLargeRound;
}

struct DeviceCache {
  std::multimap<size_t, void*> free_blocks;        // bucket size -> block
  std::vector<std::pair<size_t, void*>> reserved;  // freed while a reservation was open
  bool reserving = false;
  AllocatorStats stats;
};

struct CudaCachingAllocator {
  std::mutex mu;
  std::vector<DeviceCache> devices;

  DeviceCache& cache(int d) {
    if (devices.size() <= size_t(d)) devices.resize(size_t(d) + 1);
    return devices[size_t(d)];
  }

  void* allocate(size_t capacity, int d) {
    std::lock_guard<std::mutex> lock(mu);
    DeviceCache& c = cache(d);
    auto it = c.free_blocks.find(capacity);
    void* p = nullptr;
    if (it != c.free_blocks.end()) {
      p = it->second;
      c.free_blocks.erase(it);
      c.stats.cached -= capacity;
    } else {
      cuda::set_device(d);
      p = cuda::device_malloc(capacity);
      if (!p) {  // give the cache back to the driver and try once more
        release_all(d);
        p = cuda::device_malloc(capacity);
      }
      if (!p)
        throw OutOfMemory(str_cat("[alloc] CUDA out of memory allocating ", capacity >> 20,
                                  " MiB on cuda:", d, " (", c.stats.allocated >> 20,
                                  " MiB in use by bitgrad)"));
      ++c.stats.device_mallocs;
    }
    c.stats.allocated += capacity;
    if (c.stats.allocated > c.stats.peak_allocated) c.stats.peak_allocated = c.stats.allocated;
    return p;
  }

  void release(void* p, size_t capacity, int d) noexcept {
    std::lock_guard<std::mutex> lock(mu);
    DeviceCache& c = cache(d);
    c.stats.allocated -= capacity;
    c.stats.cached += capacity;
    if (c.reserving) {
      c.reserved.emplace_back(capacity, p);
    } else {
      c.free_blocks.emplace(capacity, p);
    }
  }

  void release_all(int d) noexcept {  // caller holds mu
    DeviceCache& c = cache(d);
    for (auto& kv : c.free_blocks) cuda::device_free(kv.second);
    c.free_blocks.clear();
    c.stats.cached = 0;
  }
};

CudaCachingAllocator& allocator() {
  // Leaked on purpose: blocks may be returned by static tensors after main() ends.
  static auto* a = new CudaCachingAllocator();
  return *a;
}

}  // namespace

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (device.is_cpu()) {
    capacity_ = (bytes + 63) / 64 * 64;
    if (capacity_ == 0) capacity_ = 64;
    data_ = std::aligned_alloc(64, capacity_);
    if (!data_) fail("alloc", "out of host memory allocating ", bytes, " bytes");
  } else {
    capacity_ = bucket_size(bytes);
    data_ = allocator().allocate(capacity_, device.index);
  }
}

Storage::~Storage() {
  if (device_.is_cpu()) {
    std::free(data_);
  } else {
    allocator().release(data_, capacity_, device_.index);
  }
}

AllocatorStats cuda_allocator_stats(int device) {
  std::lock_guard<std::mutex> lock(allocator().mu);
  return allocator().cache(device).stats;
}

void cuda_reset_peak(int device) {
  std::lock_guard<std::mutex> lock(allocator().mu);
  auto& s = allocator().cache(device).stats;
  s.peak_allocated = s.allocated;
}

void cuda_begin_reservation(int device) {
  std::lock_guard<std::mutex> lock(allocator().mu);
  allocator().cache(device).reserving = true;
}

void cuda_end_reservation(int device) {
  std::lock_guard<std::mutex> lock(allocator().mu);
  allocator().cache(device).reserving = false;
}

void cuda_release_reservation(int device) {
  std::lock_guard<std::mutex> lock(allocator().mu);
  DeviceCache& c = allocator().cache(device);
  for (const auto& [size, p] : c.reserved) c.free_blocks.emplace(size, p);
  c.reserved.clear();
}

void cuda_empty_cache() {
  std::lock_guard<std::mutex> lock(allocator().mu);
  for (size_t d = 0; d < allocator().devices.size(); ++d) allocator().release_all(int(d));
}

}  // namespace bg
