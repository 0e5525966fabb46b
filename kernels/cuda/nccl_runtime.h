// nccl_runtime.h: the few NCCL calls a data-parallel run makes, loaded from libnccl.so.2 when
// first needed (dlopen: no build-time dependency, so every build has the path and a machine
// without NCCL is told why not). The library is looked for as BITGRAD_NCCL_LIB names it, then by
// the loader's search (LD_LIBRARY_PATH), then in Python's nvidia/nccl/lib wheels, where PyTorch
// ships it. Compiled from nccl_runtime.cu with CUDA, or nccl_runtime_stub.cpp without it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "../kernel_types.h"

namespace bg::cuda {

struct NcclId {
  char bytes[128];
};
// "" when libnccl.so.2 loads and has every call; else why not.
std::string nccl_unavailable_reason();
NcclId nccl_unique_id();
// A communicator of `world` ranks on the current device; throws naming NCCL's error.
void* nccl_comm_init(const NcclId& id, int world, int rank);
void nccl_comm_destroy(void* comm) noexcept;
void nccl_comm_abort(void* comm) noexcept;
struct NcclBuffer {
  int peer;
  float* data;
  int64_t count;
};
void nccl_all_reduce_sum(void* comm, float* data, int64_t count, StreamHandle stream);
void nccl_all_gather(void* comm, const float* mine, float* all, int64_t count, StreamHandle stream);
// Grouped point-to-point sends and receives (one round of an all-to-all).
void nccl_exchange(void* comm, const std::vector<NcclBuffer>& sends,
                   const std::vector<NcclBuffer>& recvs, StreamHandle stream);
// An event after the stream's work so far. nccl_query says, without blocking, whether the work
// before it is done (*done) and returns "" or the error that stopped it (CUDA's, or NCCL's
// asynchronous one), after which the communicator must be aborted.
void* nccl_record(StreamHandle stream);
std::string nccl_query(void* comm, void* event, bool* done);
void nccl_event_destroy(void* event) noexcept;

}  // namespace bg::cuda
