// distributed.h: the process group a data-parallel run trains in (after MLX's
// distributed::Group). One process is a group of one whose collectives do nothing; `bitgrad
// launch` (or torchrun / mpirun) starts several, which find each other through the usual
// environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, or OMPI_COMM_WORLD_*).
// Rank 0 listens on MASTER_ADDR:MASTER_PORT; every rank connects, says which rank it is and the
// digest of its config (a mismatch is refused at start, naming both ranks), and keeps the
// connection as the group's control line (the step's stop flag, the fault path). Tensors move
// over NCCL between GPUs, or over these sockets between CPU processes (BITGRAD_DIST_BACKEND=
// socket chooses the sockets for GPUs too). Every wait is bounded: a rank that dies is seen at
// once (its socket closes), one that hangs after BITGRAD_DIST_TIMEOUT seconds (default 300),
// and the others then exit with one line naming it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"

namespace bg {

struct DistEnv {
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  double timeout_s = 300;
  std::string backend;  // "", "nccl" or "socket" (BITGRAD_DIST_BACKEND)
  // BITGRAD_DIST_OVERLAP=1: sum each bucket of gradients during the backward, as soon as it is
  // final, instead of all of them after it. Off by default: on 2 x H200 it was slower (docs/
  // data_parallel.md).
  bool overlap = false;
};
// The environment's group, checked (one-line errors naming the variable); world 1 without one.
DistEnv read_dist_env();

// A buffer moved between two ranks: `data` (contiguous f32 on the group's device) goes to or
// comes from `peer`.
struct Transfer {
  int peer = 0;
  Tensor data;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const { return 0; }
  virtual int size() const { return 1; }
  // Elementwise sum over the ranks, in place (NCCL's order: not bitwise fixed).
  virtual void all_reduce_sum(const Tensor& data) { (void)data; }
  // The same, started now and overlapped with the work that follows (NCCL: on a stream of its
  // own, after what the compute stream holds so far); finish_async() makes the compute stream
  // wait for every sum started. The ranks must start the same sums in the same order.
  virtual void all_reduce_sum_async(const Tensor& data) { all_reduce_sum(data); }
  virtual void finish_async() {}
  // Whether the gradient sums should overlap the backward (all_reduce_sum_async per bucket).
  virtual bool overlaps() const { return false; }
  // Rank r's `mine` lands at all[r * mine.numel() ...) on every rank.
  virtual void all_gather(const Tensor& mine, const Tensor& all);
  // Every rank's sends and receives of one round, matched by (sender, receiver, order).
  virtual void exchange(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs);
  // Rank 0's flag on every rank (the step's stop: a consistent checkpoint needs one agreed step).
  virtual bool agree(bool rank0_flag) { return rank0_flag; }
  // Wait for the group's queued work on the device (bounded, naming a rank that failed).
  virtual void wait() {}
  virtual std::string transport() const { return "none"; }
};

// The group of this process: a group of one when the environment names no world, else one over
// sockets or NCCL for `device`. `config_digest` must agree on every rank.
std::unique_ptr<ProcessGroup> make_process_group(const DistEnv& env, Device device,
                                                 const std::string& config_digest);

// "" when NCCL can run here; else why not (the library is not found, or the build has no CUDA).
std::string nccl_unavailable_reason();

}  // namespace bg
