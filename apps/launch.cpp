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

}  // namespace

int run_launch(const Args& args, const char* self) {
  args.allow_only({"gpus", "cpus"});
  args.exclusive("gpus", "cpus");
  BG_CHECK(args.positional.size() == 1 && (args.has("gpus") || args.has("cpus")), "launch",
           "usage: bitgrad launch --gpus N | --cpus N CONFIG [--set key=value ...]");
  const bool gpus = args.has("gpus");
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
  // The config is read once here, so that what every rank would refuse is said once.
  {
    ConfigReader reader(args.positional[0], args.overrides);
    const LanguageModelRun cfg = read_train_config(reader);
    const int64_t accum = cfg.trainer.grad_accum;
    BG_CHECK(accum % world == 0, "launch", "train.grad_accum = ", accum,
             " micro-batches per step cannot be shared by ", world,
             " ranks: make it a multiple of the ranks (each rank runs grad_accum / ranks of "
             "train.batch_size; e.g. --set train.grad_accum=",
             (accum + world - 1) / world * world, ")");
  }
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
  // The ranks get the signals the launcher gets; rank 0 decides the step they stop after.
  struct sigaction sa {};
  sa.sa_handler = remember_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  int first_failure = -1, failure_status = 0, alive = world, result = 0;
  bool told = false;
  bool forwarded = false;
  std::vector<bool> done(size_t(world), false);
  // A stopped rank (SIGSTOP, a debugger) acts on a signal only once it runs again.
  auto stop_all = [&](int sig) {
    for (int r = 0; r < world; ++r)
      if (!done[size_t(r)]) {
        ::kill(pids[size_t(r)], sig);
        if (sig != SIGKILL) ::kill(pids[size_t(r)], SIGCONT);
      }
  };
  auto kill_deadline = std::chrono::steady_clock::time_point::max();
  // A rank that fails makes the others fail too (its connection closes): the cause is the rank
  // that died of a signal, or else the first to exit, among those gone within a moment.
  auto reap = [&](int* status) {
    const pid_t pid = ::waitpid(-1, status, WNOHANG);
    if (pid <= 0) return -1;
    for (int r = 0; r < world; ++r)
      if (pids[size_t(r)] == pid) {
        done[size_t(r)] = true;
        --alive;
        if (r == 0 && WIFEXITED(*status)) result = WEXITSTATUS(*status);
        return r;
      }
    return -1;
  };
  auto failed = [&](int status) {
    return !(WIFEXITED(status) &&
             (WEXITSTATUS(status) == 0 || (forwarded && WEXITSTATUS(status) == 130)));
  };
  while (alive > 0) {
    if (g_forward && !forwarded) {
      stop_all(int(g_forward));
      forwarded = true;
    }
    int status = 0;
    const int r = reap(&status);
    if (r < 0) {
      if (std::chrono::steady_clock::now() > kill_deadline) stop_all(SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (!failed(status) || first_failure >= 0) continue;
    first_failure = r;
    failure_status = status;
    for (int waited = 0; waited < 25 && alive > 0; ++waited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      int other_status = 0;
      const int other = reap(&other_status);
      if (other >= 0 && failed(other_status) && WIFSIGNALED(other_status) &&
          !WIFSIGNALED(failure_status)) {
        first_failure = other;
        failure_status = other_status;
      }
    }
    if (alive > 0) {
      std::fprintf(stderr, "bitgrad launch: rank %d %s; stopping the other %d rank(s)\n",
                   first_failure, describe_status(failure_status).c_str(), alive);
      told = true;
      stop_all(SIGTERM);
      kill_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    }
  }
  if (first_failure >= 0) {
    if (!told)
      std::fprintf(stderr, "bitgrad launch: rank %d %s\n", first_failure,
                   describe_status(failure_status).c_str());
    return 1;
  }
  return result;
}

}  // namespace bg::cli
