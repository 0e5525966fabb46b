#include "core/distributed.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "core/control_line.h"
#include "core/error.h"
#include "core/ops.h"
#include "kernels/cuda/device_runtime.h"
#include "kernels/cuda/nccl_runtime.h"

namespace bg {
namespace {

using dist::ControlLine;
using dist::rank_name;

constexpr const char* kOp = "dist";

int env_int(const char* name, int lo, int hi, bool* present) {
  const char* v = std::getenv(name);
  *present = v && *v;
  if (!*present) return 0;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  BG_CHECK(*end == '\0' && x >= lo && x <= hi, kOp, name, "='", v, "': expected an integer in [",
           lo, ", ", hi, "]");
  return int(x);
}

std::string host_bytes(const Tensor& t) {
  const Tensor h = t.to(Device::cpu()).contiguous();
  return std::string(static_cast<const char*>(h.data_ptr()), size_t(h.numel()) * sizeof(float));
}

void put_bytes(const Tensor& dst, const char* bytes) {
  std::vector<float> v(size_t(dst.numel()));
  std::memcpy(v.data(), bytes, v.size() * sizeof(float));
  dst.copy_(from_vector(v, dst.shape()).to(dst.device()));
}

// ---- the socket group: every collective through rank 0, in rank order ----

class SocketGroup : public ProcessGroup {
 public:
  SocketGroup(const DistEnv& env, const std::string& digest) : line_(env, digest, "") {}
  int rank() const override { return line_.env.rank; }
  int size() const override { return line_.env.world; }
  std::string transport() const override { return "sockets"; }
  bool agree(bool flag) override { return line_.agree(flag); }

  void all_reduce_sum(const Tensor& data) override {
    BG_CHECK(data.dtype() == DType::f32 && data.is_contiguous(), kOp, "all_reduce needs f32");
    if (rank() != 0) {
      line_.send(0, host_bytes(data));
      put_bytes(data, line_.recv(0).data());
      return;
    }
    Tensor acc = data.to(Device::cpu()).contiguous().clone();
    for (int r = 1; r < size(); ++r) {
      const std::string b = line_.recv(r);
      BG_CHECK(b.size() == size_t(data.numel()) * sizeof(float), kOp, rank_name(r),
               " sent a buffer of another size");
      Tensor part = empty(data.shape(), DType::f32);
      put_bytes(part, b.data());
      acc = acc + part;  // rank order
    }
    const std::string out = host_bytes(acc);
    for (int r = 1; r < size(); ++r) line_.send(r, out);
    data.copy_(acc.to(data.device()));
  }

  void all_gather(const Tensor& mine, const Tensor& all) override {
    if (rank() != 0) {
      line_.send(0, host_bytes(mine));
      put_bytes(all, line_.recv(0).data());
      return;
    }
    std::string out = host_bytes(mine);
    for (int r = 1; r < size(); ++r) out += line_.recv(r);
    BG_CHECK(out.size() == size_t(all.numel()) * sizeof(float), kOp,
             "all_gather: the ranks' buffers differ in size");
    for (int r = 1; r < size(); ++r) line_.send(r, out);
    put_bytes(all, out.data());
  }

  // Each rank sends rank 0 its packets (receiver, bytes); rank 0 hands each rank the packets
  // addressed to it, by sender, in the order they were sent.
  void exchange(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) override {
    using Packets = std::vector<std::pair<int, std::string>>;  // (peer, bytes)
    auto pack = [](const Packets& ps) {
      std::string out;
      for (const auto& [peer, bytes] : ps) {
        const int32_t p = peer;
        const uint64_t n = bytes.size();
        out.append(reinterpret_cast<const char*>(&p), sizeof p);
        out.append(reinterpret_cast<const char*>(&n), sizeof n);
        out += bytes;
      }
      return out;
    };
    auto unpack = [](const std::string& s) {
      Packets ps;
      for (size_t at = 0; at < s.size();) {
        int32_t p;
        uint64_t n;
        std::memcpy(&p, s.data() + at, sizeof p);
        std::memcpy(&n, s.data() + at + sizeof p, sizeof n);
        at += sizeof p + sizeof n;
        ps.emplace_back(p, s.substr(at, n));
        at += n;
      }
      return ps;
    };
    Packets out;
    for (const Transfer& t : sends) out.emplace_back(t.peer, host_bytes(t.data));
    Packets in;  // (sender, bytes) addressed to this rank
    if (rank() != 0) {
      line_.send(0, pack(out));
      in = unpack(line_.recv(0));
    } else {
      std::vector<Packets> to(static_cast<size_t>(size()));
      for (int from = 0; from < size(); ++from)
        for (auto& [peer, bytes] : from == 0 ? out : unpack(line_.recv(from))) {
          BG_CHECK(peer >= 0 && peer < size(), kOp, rank_name(from), " addressed rank ", peer);
          to[size_t(peer)].emplace_back(from, std::move(bytes));
        }
      for (int r = 1; r < size(); ++r) line_.send(r, pack(to[size_t(r)]));
      in = std::move(to[0]);
    }
    std::map<int, size_t> taken;
    for (const Transfer& t : recvs) {
      size_t seen = 0, want = taken[t.peer]++;
      bool found = false;
      for (const auto& [from, bytes] : in)
        if (from == t.peer && seen++ == want) {
          BG_CHECK(bytes.size() == size_t(t.data.numel()) * sizeof(float), kOp, rank_name(from),
                   " sent a buffer of another size");
          put_bytes(t.data, bytes.data());
          found = true;
          break;
        }
      BG_CHECK(found, kOp, rank_name(t.peer), " sent fewer buffers than expected");
    }
  }

 private:
  ControlLine line_;
};

// ---- the NCCL group: tensors between GPUs, the control line beside them ----

std::string id_bytes(const cuda::NcclId& id) { return std::string(id.bytes, sizeof id.bytes); }

class NcclGroup : public ProcessGroup {
 public:
  NcclGroup(const DistEnv& env, Device device, const std::string& digest)
      : device_(device),
        line_(env, digest, env.rank == 0 ? id_bytes(cuda::nccl_unique_id()) : ""),
        timeout_s_(env.timeout_s),
        overlap_(env.overlap) {
    BG_CHECK(line_.payload.size() == sizeof(cuda::NcclId), kOp, "rank 0 sent no NCCL id");
    cuda::NcclId id;
    std::memcpy(id.bytes, line_.payload.data(), sizeof id.bytes);
    comm_ = cuda::nccl_comm_init(id, env.world, env.rank);
  }
  ~NcclGroup() override {
    try {
      if (pending_) wait();
    } catch (const std::exception&) {
    }
    cuda::nccl_comm_destroy(comm_);
  }
  int rank() const override { return line_.env.rank; }
  int size() const override { return line_.env.world; }
  std::string transport() const override { return "NCCL"; }
  bool overlaps() const override { return overlap_; }
  bool agree(bool flag) override { return line_.agree(flag); }

  void all_reduce_sum(const Tensor& data) override {
    cuda::nccl_all_reduce_sum(comm_, data.data<float>(), data.numel(), stream_for(device_));
    queued(stream_for(device_));
  }
  void all_reduce_sum_async(const Tensor& data) override {
    if (!comm_stream_) comm_stream_ = cuda::stream_create();
    cuda::stream_wait(comm_stream_, stream_for(device_));
    cuda::nccl_all_reduce_sum(comm_, data.data<float>(), data.numel(), comm_stream_);
    async_started_ = true;
  }
  void finish_async() override {
    if (!async_started_) return;
    async_started_ = false;
    cuda::stream_wait(stream_for(device_), comm_stream_);
    queued(stream_for(device_));
  }
  void all_gather(const Tensor& mine, const Tensor& all) override {
    cuda::nccl_all_gather(comm_, mine.data<float>(), all.data<float>(), mine.numel(),
                          stream_for(device_));
    queued(stream_for(device_));
  }
  void exchange(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) override {
    std::vector<cuda::NcclBuffer> s, r;
    for (const Transfer& t : sends) s.push_back({t.peer, t.data.data<float>(), t.data.numel()});
    for (const Transfer& t : recvs) r.push_back({t.peer, t.data.data<float>(), t.data.numel()});
    cuda::nccl_exchange(comm_, s, r, stream_for(device_));
    queued(stream_for(device_));
  }
  // The previous round must have finished: the host stays at most one round ahead of the GPUs.
  // While it waits, a rank whose control line closes (it exited) is named at once, NCCL's own
  // errors end the wait, and no progress within the timeout means a rank hangs.
  void wait() override {
    if (!pending_) return;
    void* event = pending_;
    pending_ = nullptr;
    const auto start = std::chrono::steady_clock::now();
    auto last_look = start;
    std::string why;
    for (int spins = 0;; ++spins) {
      bool done = false;
      why = cuda::nccl_query(comm_, event, &done);
      if (done || !why.empty()) break;
      const auto now = std::chrono::steady_clock::now();
      if (now - last_look > std::chrono::milliseconds(100)) {
        last_look = now;
        try {
          line_.check_peers_alive();
        } catch (const Error&) {  // already says which rank, as "[dist] ..."
          cuda::nccl_event_destroy(event);
          cuda::nccl_comm_abort(comm_);
          comm_ = nullptr;
          throw;
        }
      }
      if (std::chrono::duration<double>(now - start).count() > timeout_s_) {
        why = str_cat("no progress for ", int(timeout_s_),
                      " s (a rank stopped or hangs; BITGRAD_DIST_TIMEOUT sets the limit)");
        break;
      }
      if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    cuda::nccl_event_destroy(event);
    if (!why.empty()) {
      cuda::nccl_comm_abort(comm_);
      comm_ = nullptr;
      fail(kOp, why);
    }
  }

 private:
  void queued(StreamHandle stream) {
    wait();
    pending_ = cuda::nccl_record(stream);
  }
  Device device_;
  ControlLine line_;
  double timeout_s_;
  void* comm_ = nullptr;
  void* pending_ = nullptr;
  StreamHandle comm_stream_ =
      nullptr;  // the overlapped sums' stream (never destroyed: one per run)
  bool async_started_ = false;
  bool overlap_ = false;
};

}  // namespace

void ProcessGroup::all_gather(const Tensor& mine, const Tensor& all) {
  all.copy_(mine.reshape(all.shape()));
}

void ProcessGroup::exchange(const std::vector<Transfer>& sends,
                            const std::vector<Transfer>& recvs) {
  BG_CHECK(sends.size() == recvs.size(), kOp, "a group of one receives what it sends");
  for (size_t i = 0; i < sends.size(); ++i) recvs[i].data.copy_(sends[i].data);
}

DistEnv read_dist_env() {
  DistEnv e;
  // Two launchers' variables: torchrun's (and bitgrad launch's), and Open MPI's mpirun's. Either
  // set may be given, or both when they agree; a rank without a world size is not one of N.
  struct Set {
    const char *world_name, *rank_name, *local_name;
    bool has_world = false, has_rank = false, has_local = false;
    int world = 1, rank = 0, local = 0;
    bool any() const { return has_world || has_rank || has_local; }
  };
  Set sets[2] = {{"WORLD_SIZE", "RANK", "LOCAL_RANK"},
                 {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"}};
  for (Set& s : sets) {
    s.world = env_int(s.world_name, 1, 1 << 16, &s.has_world);
    s.rank = env_int(s.rank_name, 0, 1 << 16, &s.has_rank);
    s.local = env_int(s.local_name, 0, 1 << 16, &s.has_local);
    if (!s.any()) {
      s.world = 1;
      continue;
    }
    BG_CHECK(s.has_world, kOp, s.has_rank ? s.rank_name : s.local_name, "=",
             s.has_rank ? s.rank : s.local, " is set but ", s.world_name,
             " is not: set the number of ranks too, or unset it for a single process");
    BG_CHECK(s.world == 1 || s.has_rank, kOp, s.world_name, "=", s.world, " but no ", s.rank_name,
             " is set");
    BG_CHECK(s.rank < s.world, kOp, s.rank_name, "=", s.rank, " is not below ", s.world_name, "=",
             s.world);
    if (!s.has_local) s.local = s.rank;
  }
  if (sets[0].any() && sets[1].any())
    BG_CHECK(sets[0].world == sets[1].world && sets[0].rank == sets[1].rank &&
                 sets[0].local == sets[1].local,
             kOp, "WORLD_SIZE=", sets[0].world, " RANK=", sets[0].rank, " LOCAL_RANK=",
             sets[0].local, " disagree with Open MPI's OMPI_COMM_WORLD_SIZE=", sets[1].world,
             " RANK=", sets[1].rank, " LOCAL_RANK=", sets[1].local, "; launch with one of them");
  const Set& used = sets[0].any() ? sets[0] : sets[1];
  e.world = used.world;
  e.rank = used.rank;
  e.local_rank = used.local;
  if (const char* a = std::getenv("MASTER_ADDR"); a && *a) e.master_addr = a;
  bool has_port = false;
  const int port = env_int("MASTER_PORT", 1, 65535, &has_port);
  if (has_port) e.master_port = port;
  bool has_timeout = false;
  const int t = env_int("BITGRAD_DIST_TIMEOUT", 1, 86400, &has_timeout);
  if (has_timeout) e.timeout_s = t;
  if (const char* o = std::getenv("BITGRAD_DIST_OVERLAP"); o && *o) {
    BG_CHECK(std::string(o) == "0" || std::string(o) == "1", kOp, "BITGRAD_DIST_OVERLAP='", o,
             "': expected 0 or 1");
    e.overlap = std::string(o) == "1";
  }
  if (const char* b = std::getenv("BITGRAD_DIST_BACKEND"); b && *b) {
    e.backend = b;
    BG_CHECK(e.backend == "nccl" || e.backend == "socket", kOp, "BITGRAD_DIST_BACKEND='", b,
             "': expected nccl or socket");
  }
  return e;
}

std::string nccl_unavailable_reason() { return cuda::nccl_unavailable_reason(); }

std::unique_ptr<ProcessGroup> make_process_group(const DistEnv& env, Device device,
                                                 const std::string& config_digest) {
  if (env.world == 1) return std::make_unique<ProcessGroup>();
  const bool nccl = device.is_cuda() && env.backend != "socket";
  BG_CHECK(!(env.backend == "nccl" && !device.is_cuda()), kOp,
           "BITGRAD_DIST_BACKEND=nccl needs a CUDA device (run.device)");
  if (nccl) {
    const std::string why = cuda::nccl_unavailable_reason();
    BG_CHECK(why.empty(), kOp, "NCCL cannot run: ", why,
             " (BITGRAD_DIST_BACKEND=socket moves the gradients through the CPU instead)");
    return std::make_unique<NcclGroup>(env, device, config_digest);
  }
  return std::make_unique<SocketGroup>(env, config_digest);
}

}  // namespace bg
