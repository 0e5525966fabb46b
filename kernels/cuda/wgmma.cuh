// wgmma.cuh: what the Hopper (sm_90a) kernels share to feed the warpgroup MMA (wgmma) from
// shared memory: the 128-byte-swizzled tile layout, its matrix descriptor, and the fences and
// group waits around the asynchronous products. A tile holds rows of 128 bytes (64 bf16 or 128
// int8 values); the swizzle repeats every 8 rows, so tiles start 1024-byte aligned.
#pragma once
#include <cstdint>

#include "cp_async.cuh"

namespace bg::cuda::wgmma {

constexpr int kRowBytes = 128;
constexpr int kAlign = 1024;

// Byte offset of row r's 16-byte chunk c in a swizzled tile: chunk c ^ (r % 8) of the row, the
// layout wgmma's 128-byte swizzle mode reads (and bank-conflict-free for 16-byte copies).
__device__ __forceinline__ int swizzled_byte(int row, int chunk) {
  return row * kRowBytes + ((chunk ^ (row & 7)) << 4);
}

// The first kAlign-aligned byte of a dynamic shared-memory block (sized kAlign more than used).
__device__ __forceinline__ unsigned char* aligned(unsigned char* raw) {
  const uint32_t a = mma::smem_addr(raw);
  return raw + ((kAlign - (a & (kAlign - 1))) & (kAlign - 1));
}

// wgmma reads shared memory through the async proxy: copies that landed through the generic one
// are made visible to it by this fence (before the barrier that publishes them).
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Descriptor of a swizzled tile: start address >> 4 (bits 0-13), leading byte offset (16-29;
// unused under the 128-byte swizzle, 1 by convention), stride byte offset >> 4 (32-45: 1024
// bytes from one 8-row group to the next), swizzle mode 128B (bits 62-63 = 1).
__device__ __forceinline__ uint64_t tile_desc(const void* tile) {
  return uint64_t((mma::smem_addr(tile) & 0x3FFFF) >> 4) | (uint64_t(1) << 16) |
         (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}
// Descriptor advance per step of a product: along the rows (K-major operands, the depth running
// along each row) 32 bytes, i.e. 16 bf16 or 32 int8 values; across rows (MN-major operands, the
// depth running down the rows) 16 rows.
constexpr uint64_t kStepAlongRows = 32 >> 4;
constexpr uint64_t kStepAcrossRows = (16 * kRowBytes) >> 4;

__device__ __forceinline__ void fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wait_all() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
// Waits until at most N committed groups of this warpgroup are still running.
template <int N>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving reads or writes of a wgmma operand's N registers (from r) across
// a wgmma boundary (ptxas would otherwise insert waits of its own).
template <int N>
__device__ __forceinline__ void fence_regs(float* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

// The cp.async ring the W2A8 wgmma kernel runs over K: S stages, S - 2 of them loading ahead of
// the one multiplied, so a stage is refilled only after the products that read it (two steps
// back) have retired, which each kernel's wgmma wait at the end of a step guarantees.
// load(step) issues the copies of step `step` into stage step % S. ring_start before the loop;
// ring_step at the top of step kt: waits for stage kt, makes it visible to wgmma, and refills
// the stage of step kt - 2 with step kt + S - 2.
template <int S, typename Load>
__device__ __forceinline__ void ring_start(int64_t steps, Load&& load) {
  for (int s = 0; s < S - 2; ++s) {
    if (s < steps) load(int64_t(s));
    mma::cp_async_commit();
  }
}
template <int S, typename Load>
__device__ __forceinline__ void ring_step(int64_t kt, int64_t steps, Load&& load) {
  mma::cp_async_wait<S - 3>();
  fence_proxy_async();
  __syncthreads();
  if (kt + S - 2 < steps) load(kt + S - 2);
  mma::cp_async_commit();
}

}  // namespace bg::cuda::wgmma
