// cp_async.cuh: asynchronous global -> shared copies (cp.async, sm_80+), shared by the kernels
// that stage tiles while the previous tile computes (int8_mma.cuh's users, lmul_gemm.cu).
#pragma once
#include <cstdint>

namespace bg::cuda::mma {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes to shared memory, of which the first `bytes` (0..16) are read from src (16-byte
// aligned) and the rest zero-filled; with 0 bytes src is not read.
__device__ __forceinline__ void cp_async16_partial(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}
// 16 bytes global -> shared; when !valid the 16 bytes are zero-filled and src is not read.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  cp_async16_partial(dst, src, valid ? 16 : 0);
}
// 4 bytes global -> shared (src 4-byte aligned).
__device__ __forceinline__ void cp_async4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

}  // namespace bg::cuda::mma
