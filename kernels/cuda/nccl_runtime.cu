// nccl_runtime.cu: NCCL through dlopen (see nccl_runtime.h). The declarations below are NCCL's
// stable C ABI (nccl.h since 2.0): the unique id is 128 bytes, a communicator an opaque pointer,
// ncclFloat32 is 7 and ncclSum 0.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "cuda_common.cuh"
#include "nccl_runtime.h"

namespace bg::cuda {
namespace {

using Result = int;  // ncclResult_t: 0 success, 7 in progress
constexpr int kFloat32 = 7, kSum = 0;
constexpr Result kSuccess = 0, kInProgress = 7;

struct Nccl {
  Result (*get_unique_id)(NcclId*);
  Result (*comm_init_rank)(void**, int, NcclId, int);
  Result (*comm_destroy)(void*);
  Result (*comm_abort)(void*);
  Result (*comm_get_async_error)(void*, Result*);
  const char* (*get_error_string)(Result);
  Result (*all_reduce)(const void*, void*, size_t, int, int, void*, cudaStream_t);
  Result (*all_gather)(const void*, void*, size_t, int, void*, cudaStream_t);
  Result (*send)(const void*, size_t, int, int, void*, cudaStream_t);
  Result (*recv)(void*, size_t, int, int, void*, cudaStream_t);
  Result (*group_start)();
  Result (*group_end)();
  std::string why_not;  // "" when loaded
};

// Where PyTorch's wheel keeps the library: <site-packages>/nvidia/nccl/lib.
std::vector<std::string> wheel_paths() {
  std::vector<std::string> out;
  for (const char* root : {"/usr/local/lib", "/usr/lib", "/opt/conda/lib"}) {
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec)) continue;
    for (const auto& py : std::filesystem::directory_iterator(root, ec)) {
      const std::string name = py.path().filename().string();
      if (name.rfind("python3", 0) != 0) continue;
      for (const char* pkgs : {"dist-packages", "site-packages"}) {
        const auto lib = py.path() / pkgs / "nvidia/nccl/lib/libnccl.so.2";
        if (std::filesystem::exists(lib, ec)) out.push_back(lib.string());
      }
    }
  }
  return out;
}

const Nccl& nccl() {
  static Nccl n;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> tries;
    if (const char* env = std::getenv("BITGRAD_NCCL_LIB"); env && *env) tries.push_back(env);
    tries.push_back("libnccl.so.2");
    for (const std::string& p : wheel_paths()) tries.push_back(p);
    void* lib = nullptr;
    for (const std::string& path : tries)
      if ((lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) {
      n.why_not =
          "libnccl.so.2 was not found (install NCCL, e.g. Debian's libnccl2, or name the library "
          "with BITGRAD_NCCL_LIB=/path/libnccl.so.2)";
      return;
    }
    bool ok = true;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) {
        ok = false;
        n.why_not = std::string("libnccl.so.2 has no ") + name;
      }
    };
    get(n.get_unique_id, "ncclGetUniqueId");
    get(n.comm_init_rank, "ncclCommInitRank");
    get(n.comm_destroy, "ncclCommDestroy");
    get(n.comm_abort, "ncclCommAbort");
    get(n.comm_get_async_error, "ncclCommGetAsyncError");
    get(n.get_error_string, "ncclGetErrorString");
    get(n.all_reduce, "ncclAllReduce");
    get(n.all_gather, "ncclAllGather");
    get(n.send, "ncclSend");
    get(n.recv, "ncclRecv");
    get(n.group_start, "ncclGroupStart");
    get(n.group_end, "ncclGroupEnd");
    (void)ok;
  });
  return n;
}

const Nccl& loaded() {
  const Nccl& n = nccl();
  if (!n.why_not.empty()) kernel_fail("nccl", n.why_not);
  return n;
}

void check(Result r, const char* what) {
  if (r != kSuccess && r != kInProgress)
    kernel_fail("nccl", std::string(what) + ": " + loaded().get_error_string(r));
}

}  // namespace

std::string nccl_unavailable_reason() { return nccl().why_not; }

NcclId nccl_unique_id() {
  NcclId id{};
  check(loaded().get_unique_id(&id), "ncclGetUniqueId");
  return id;
}

void* nccl_comm_init(const NcclId& id, int world, int rank) {
  void* comm = nullptr;
  check(loaded().comm_init_rank(&comm, world, id, rank), "ncclCommInitRank");
  return comm;
}

void nccl_comm_destroy(void* comm) noexcept {
  if (comm && nccl().why_not.empty()) nccl().comm_destroy(comm);
}
void nccl_comm_abort(void* comm) noexcept {
  if (comm && nccl().why_not.empty()) nccl().comm_abort(comm);
}

void nccl_all_reduce_sum(void* comm, float* data, int64_t count, StreamHandle stream) {
  check(loaded().all_reduce(data, data, size_t(count), kFloat32, kSum, comm, as_stream(stream)),
        "ncclAllReduce");
}

void nccl_all_gather(void* comm, const float* mine, float* all, int64_t count,
                     StreamHandle stream) {
  check(loaded().all_gather(mine, all, size_t(count), kFloat32, comm, as_stream(stream)),
        "ncclAllGather");
}

void nccl_exchange(void* comm, const std::vector<NcclBuffer>& sends,
                   const std::vector<NcclBuffer>& recvs, StreamHandle stream) {
  const Nccl& n = loaded();
  check(n.group_start(), "ncclGroupStart");
  for (const NcclBuffer& b : sends)
    check(n.send(b.data, size_t(b.count), kFloat32, b.peer, comm, as_stream(stream)), "ncclSend");
  for (const NcclBuffer& b : recvs)
    check(n.recv(b.data, size_t(b.count), kFloat32, b.peer, comm, as_stream(stream)), "ncclRecv");
  check(n.group_end(), "ncclGroupEnd");
}

void* nccl_record(StreamHandle stream) {
  cudaEvent_t done;
  BG_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  BG_CUDA_CHECK(cudaEventRecord(done, as_stream(stream)));
  return done;
}

std::string nccl_query(void* comm, void* event, bool* done) {
  const Nccl& n = loaded();
  const cudaError_t q = cudaEventQuery(static_cast<cudaEvent_t>(event));
  *done = q == cudaSuccess;
  if (q != cudaSuccess && q != cudaErrorNotReady)
    return std::string("CUDA error while waiting: ") + cudaGetErrorString(q);
  Result async = kSuccess;
  if (!*done && n.comm_get_async_error(comm, &async) == kSuccess && async != kSuccess &&
      async != kInProgress)
    return std::string("NCCL: ") + n.get_error_string(async);
  return "";
}

void nccl_event_destroy(void* event) noexcept {
  if (event) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

}  // namespace bg::cuda
