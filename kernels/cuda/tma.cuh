// tma.cuh: Hopper's tensor memory accelerator (TMA, sm_90) and the shared-memory barriers that
// pace it, for the warp-specialised kernels: one producer thread copies whole 2-D tiles from
// global into shared memory with one instruction each, and the copy's bytes complete a
// transaction barrier that the consumer warpgroups wait on; the consumers arrive on a second
// barrier when their products have read a stage, and the producer waits on that before
// refilling it. The tensor map (the tile's shape, strides and swizzle) is built on the host by
// encode_byte_rows_map and passed to the kernel as a __grid_constant__ parameter.
#pragma once
#include <cuda.h>

#include <cstdint>

#include "cp_async.cuh"

namespace bg::cuda::tma {

// A map of a row-major tensor of bytes (rows x cols, rows `stride` bytes apart, 16-byte aligned)
// whose tiles are box_rows x box_cols bytes, written to shared memory in the 128-byte swizzle
// wgmma reads (box_cols must be 128). Elements past the tensor's edge arrive as zeros. False
// when the driver lacks the entry point or refuses the map (the caller then runs another
// kernel).
bool encode_byte_rows_map(CUtensorMap* map, const void* base, int64_t rows, int64_t cols,
                          int64_t stride, int box_rows, int box_cols);

__device__ __forceinline__ void barrier_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(mma::smem_addr(bar)), "r"(count)
               : "memory");
}
// Makes the barriers' initialisation visible to the async proxy (the TMA unit) before first use.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// The producer's arrival on a stage's full barrier, announcing the bytes its copies will bring.
__device__ __forceinline__ void arrive_expect_bytes(uint64_t* bar, uint32_t bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(mma::smem_addr(bar)),
      "r"(bytes)
      : "memory");
}
__device__ __forceinline__ void arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(mma::smem_addr(bar)) : "memory");
}
// Waits until the barrier's phase of the given parity has completed. A fresh barrier counts its
// (never run) phase of parity 1 as complete, so a producer's first wait on an empty stage, with
// parity 1, returns at once.
__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(mma::smem_addr(bar)),
      "r"(parity)
      : "memory");
}

// Copies the box at (col, row) of `map` into shared memory at dst (1024-byte aligned under the
// 128-byte swizzle); its bytes complete on `bar`.
__device__ __forceinline__ void load_2d(void* dst, const CUtensorMap* map, int32_t col, int32_t row,
                                        uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(mma::smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(row), "r"(mma::smem_addr(bar))
      : "memory");
}
// The same copy, written to the same shared offset of every block of the cluster whose bit is
// set in `blocks`, completing on each one's barrier at bar's offset.
__device__ __forceinline__ void load_2d_multicast(void* dst, const CUtensorMap* map, int32_t col,
                                                  int32_t row, uint64_t* bar, uint16_t blocks) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(mma::smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(col), "r"(row), "r"(mma::smem_addr(bar)),
      "h"(blocks)
      : "memory");
}
// Asks for `bytes` (a multiple of 16, from a 16-byte-aligned address) of global memory to be
// brought into L2, without waiting for it.
__device__ __forceinline__ void prefetch_l2(const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Clusters: this block's rank, an arrival on the barrier at bar's offset in block `rank`'s
// shared memory, and a barrier for every thread of the cluster.
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void arrive_in_block(uint64_t* bar, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote)
               : "r"(mma::smem_addr(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
// Not the .aligned form: a producer warp may reach it diverged (one thread copied, the rest
// waited).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;\n" ::: "memory");
}

// A barrier for the `threads` threads (whole warps) that name the same id, 1..15 (0 is
// __syncthreads'): one warpgroup's threads sync without the rest of the block.
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Moves registers between warpgroups: the producer gives up what it does not need, the
// consumers (holding the accumulators) take it. Every thread of the warpgroup runs it.
template <int N>
__device__ __forceinline__ void release_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void claim_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

}  // namespace bg::cuda::tma
