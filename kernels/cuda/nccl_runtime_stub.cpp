// nccl_runtime_stub.cpp: the CPU-only build's NCCL: never available, with the reason.
#include "nccl_runtime.h"

namespace bg::cuda {
namespace {
[[noreturn]] void no_nccl() { kernel_fail("nccl", "bitgrad was built without CUDA support"); }
}  // namespace

std::string nccl_unavailable_reason() { return "bitgrad was built without CUDA support"; }
NcclId nccl_unique_id() { no_nccl(); }
void* nccl_comm_init(const NcclId&, int, int) { no_nccl(); }
void nccl_comm_destroy(void*) noexcept {}
void nccl_comm_abort(void*) noexcept {}
void nccl_all_reduce_sum(void*, float*, int64_t, StreamHandle) { no_nccl(); }
void nccl_all_gather(void*, const float*, float*, int64_t, StreamHandle) { no_nccl(); }
void nccl_exchange(void*, const std::vector<NcclBuffer>&, const std::vector<NcclBuffer>&,
                   StreamHandle) {
  no_nccl();
}
void* nccl_record(StreamHandle) { no_nccl(); }
std::string nccl_query(void*, void*, bool*) { no_nccl(); }
void nccl_event_destroy(void*) noexcept {}

}  // namespace bg::cuda
