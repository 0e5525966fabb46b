// launch.cpp: `bitgrad launch --gpus N CONFIG`: N ranks of `bitgrad train CONFIG` on this host,
// each told its place the way torchrun tells it (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT). The launcher forwards SIGINT/SIGTERM to every rank (rank 0 then stops them all
// after one agreed step, with one checkpoint); when a rank fails, it stops the others and says
// which rank failed and how.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cli.h"
#include "core/config.h"
#include "core/device.h"
#include "core/distributed.h"
#include "core/error.h"
#include "train.h"

namespace bg::cli {
namespace {

volatile std::sig_atomic_t g_forward = 0;
extern "C" void remember_signal(int sig) { g_forward = sig; }

// A TCP port nothing listens on now (the kernel's choice), for rank 0 to take.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  if (fd >= 0) ::close(fd);
  BG_CHECK(ok, "launch", "no free TCP port on 127.0.0.1 for the ranks to meet on");
  return ntohs(a.sin_port);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by ") + strsignal(WTERMSIG(status));
  return "stopped";
}

// What every rank would refuse, said once here: too few GPUs, no NCCL, a grad_accum the ranks
// cannot share. Returns the number of ranks.
int checked_world(const Args& args, bool gpus) {
  const int world = int(
      parse_integer(args.option(gpus ? "gpus" : "cpus", ""), gpus ? "--gpus" : "--cpus", 1, 1024));
  if (gpus) {
    BG_CHECK(cuda_device_count() >= world, "launch", "--gpus ", world, " but this host has ",
             cuda_device_count(), " CUDA device(s)");
    const char* backend = std::getenv("BITGRAD_DIST_BACKEND");
    const std::string why = nccl_unavailable_reason();
    BG_CHECK(world == 1 || why.empty() || (backend && std::string(backend) == "socket"), "launch",
             "NCCL cannot run: ", why,
             " (BITGRAD_DIST_BACKEND=socket moves the gradients through the CPU instead)");
  }
  ConfigReader reader(args.positional[0], args.overrides);
  const int64_t accum = read_train_config(reader).trainer.grad_accum;
  BG_CHECK(accum % world == 0, "launch", "train.grad_accum = ", accum,
           " micro-batches per step cannot be shared by ", world,
           " ranks: make it a multiple of the ranks (each rank runs grad_accum / ranks of "
           "train.batch_size; e.g. --set train.grad_accum=",
           (accum + world - 1) / world * world, ")");
  return world;
}

// Starts the ranks: `bitgrad train CONFIG --set ...` with torchrun's variables. Open MPI's are
// cleared in the ranks: the launcher's numbering is theirs (a rank refuses two that disagree).
std::vector<pid_t> start_ranks(const Args& args, bool gpus, int world, const char* self) {
  const std::string port = std::to_string(free_port());
  std::vector<std::string> argv_text = {"bitgrad", "train", args.positional[0]};
  for (const std::string& kv : args.overrides) {
    argv_text.push_back("--set");
    argv_text.push_back(kv);
  }
  argv_text.push_back("--set");
  argv_text.push_back(gpus ? "run.device=cuda" : "run.device=cpu");
  std::vector<char*> child_argv;
  for (std::string& a : argv_text) child_argv.push_back(a.data());
  child_argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = ::fork();
    BG_CHECK(pid >= 0, "launch", "fork: ", std::strerror(errno));
    if (pid == 0) {
      const std::string rank = std::to_string(r), size = std::to_string(world);
      for (const char* v : {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                            "OMPI_COMM_WORLD_LOCAL_RANK"})
        ::unsetenv(v);
      ::setenv("RANK", rank.c_str(), 1);
      ::setenv("LOCAL_RANK", rank.c_str(), 1);
      ::setenv("WORLD_SIZE", size.c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", port.c_str(), 1);
      ::execv("/proc/self/exe", child_argv.data());
      ::execvp(self, child_argv.data());
      std::fprintf(stderr, "bitgrad launch: cannot start rank %d: %s\n", r, std::strerror(errno));
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  return pids;
}

// Waits for the ranks. The launcher's SIGINT/SIGTERM goes to every rank (rank 0 decides the step
// they stop after). A rank that fails makes the others fail too (its connection closes): the
// cause is the rank that died of a signal, or else the first to exit, among those gone within a
// moment; the others are stopped (SIGTERM, then SIGKILL after 10 s) and the cause is named.
class Supervisor {
 public:
  explicit Supervisor(std::vector<pid_t> pids)
      : pids_(std::move(pids)), done_(pids_.size(), false), alive_(int(pids_.size())) {}

  int run() {
    struct sigaction sa {};
    sa.sa_handler = remember_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    while (alive_ > 0) {
      if (g_forward && !forwarded_) {
        stop_all(int(g_forward));
        forwarded_ = true;
      }
      int status = 0;
      const int r = reap(&status);
      if (r < 0) {
        if (std::chrono::steady_clock::now() > kill_deadline_) stop_all(SIGKILL);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      if (failed(status) && first_failure_ < 0) on_failure(r, status);
    }
    if (first_failure_ < 0) return result_;
    if (!told_)
      std::fprintf(stderr, "bitgrad launch: rank %d %s\n", first_failure_,
                   describe_status(failure_status_).c_str());
    return 1;
  }

 private:
  // A stopped rank (SIGSTOP, a debugger) acts on a signal only once it runs again.
  void stop_all(int sig) {
    for (size_t r = 0; r < pids_.size(); ++r)
      if (!done_[r]) {
        ::kill(pids_[r], sig);
        if (sig != SIGKILL) ::kill(pids_[r], SIGCONT);
      }
  }
  int reap(int* status) {
    const pid_t pid = ::waitpid(-1, status, WNOHANG);
    if (pid <= 0) return -1;
    for (size_t r = 0; r < pids_.size(); ++r)
      if (pids_[r] == pid) {
        done_[r] = true;
        --alive_;
        if (r == 0 && WIFEXITED(*status)) result_ = WEXITSTATUS(*status);
        return int(r);
      }
    return -1;
  }
  bool failed(int status) const {
    return !(WIFEXITED(status) &&
             (WEXITSTATUS(status) == 0 || (forwarded_ && WEXITSTATUS(status) == 130)));
  }
  void on_failure(int r, int status) {
    first_failure_ = r;
    failure_status_ = status;
    for (int waited = 0; waited < 25 && alive_ > 0; ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      int other_status = 0;
      const int other = reap(&other_status);
      if (other >= 0 && failed(other_status) && WIFSIGNALED(other_status) &&
          !WIFSIGNALED(failure_status_)) {
        first_failure_ = other;
        failure_status_ = other_status;
      }
    }
    if (alive_ == 0) return;
    std::fprintf(stderr, "bitgrad launch: rank %d %s; stopping the other %d rank(s)\n",
                 first_failure_, describe_status(failure_status_).c_str(), alive_);
    told_ = true;
    stop_all(SIGTERM);
    kill_deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  }

  std::vector<pid_t> pids_;
  std::vector<bool> done_;
  int alive_;
  int first_failure_ = -1, failure_status_ = 0, result_ = 0;
  bool told_ = false, forwarded_ = false;
  std::chrono::steady_clock::time_point kill_deadline_ =
      std::chrono::steady_clock::time_point::max();
};

}  // namespace

int run_launch(const Args& args, const char* self) {
  args.allow_only({"gpus", "cpus"});
  args.exclusive("gpus", "cpus");
  BG_CHECK(args.positional.size() == 1 && (args.has("gpus") || args.has("cpus")), "launch",
           "usage: bitgrad launch --gpus N | --cpus N CONFIG [--set key=value ...]");
  const bool gpus = args.has("gpus");
  const int world = checked_world(args, gpus);
  return Supervisor(start_ranks(args, gpus, world, self)).run();
}

}  // namespace bg::cli
