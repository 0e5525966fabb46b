// allocator.h: RAII storage and the caching device allocator. Device blocks are rounded to
// size buckets and returned to a free list instead of cudaFree, so a training step that
// allocates the same shapes every iteration never calls cudaMalloc after the first step.
#pragma once
#include <cstddef>
#include <memory>

#include "device.h"

namespace bg {

struct AllocatorStats {
  size_t allocated = 0;       // bytes handed out now
  size_t peak_allocated = 0;  // high-water mark of `allocated`
  size_t cached = 0;          // bytes held in free lists
  size_t device_mallocs = 0;  // cudaMalloc calls so far
};

// Owns one allocation; frees (or returns to the cache) on destruction. Move-only.
class Storage {
 public:
  Storage(size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  size_t capacity_ = 0;  // bucket size actually reserved
  Device device_;
};

AllocatorStats cuda_allocator_stats(int device = 0);
void cuda_reset_peak(int device = 0);
void cuda_empty_cache();  // releases all cached blocks to the driver

// While a reservation is open, device blocks freed on `device` are kept aside instead of going
// back to the cache; closing it returns them. A CUDA graph captured in that window may replay
// into those blocks safely for as long as the reservation's owner keeps it (CudaGraph does).
void cuda_begin_reservation(int device);
void cuda_end_reservation(int device);  // the blocks stay reserved until cuda_release_reservation
void cuda_release_reservation(int device);

}  // namespace bg
