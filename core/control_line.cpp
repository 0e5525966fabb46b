#include "core/control_line.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "core/error.h"

namespace bg::dist {
namespace {

constexpr const char* kOp = "dist";

// Waits until fd is readable (or writable); false on timeout.
bool wait_fd(int fd, short events, double timeout_s) {
  pollfd p{fd, events, 0};
  const int ms = int(timeout_s * 1000);
  for (;;) {
    const int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

void send_all(int fd, const void* data, size_t n, double timeout_s, const std::string& peer) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    BG_CHECK(wait_fd(fd, POLLOUT, timeout_s), kOp, peer, " took no data for ", int(timeout_s),
             " s (it hangs; BITGRAD_DIST_TIMEOUT sets the limit)");
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    BG_CHECK(w > 0, kOp, peer, " closed its connection (it exited)");
    p += w;
    n -= size_t(w);
  }
}

void recv_all(int fd, void* data, size_t n, double timeout_s, const std::string& peer) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    BG_CHECK(wait_fd(fd, POLLIN, timeout_s), kOp, "no word from ", peer, " for ", int(timeout_s),
             " s (it stopped or hangs; BITGRAD_DIST_TIMEOUT sets the limit)");
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    BG_CHECK(r > 0, kOp, peer, " closed its connection (it exited)");
    p += r;
    n -= size_t(r);
  }
}

void send_msg(int fd, const std::string& bytes, double timeout_s, const std::string& peer) {
  const uint64_t n = bytes.size();
  send_all(fd, &n, sizeof n, timeout_s, peer);
  send_all(fd, bytes.data(), bytes.size(), timeout_s, peer);
}

std::string recv_msg(int fd, double timeout_s, const std::string& peer) {
  uint64_t n = 0;
  recv_all(fd, &n, sizeof n, timeout_s, peer);
  BG_CHECK(n < (uint64_t(1) << 40), kOp, peer, " sent a malformed message");
  std::string bytes(n, '\0');
  recv_all(fd, bytes.data(), n, timeout_s, peer);
  return bytes;
}

addrinfo* resolve(const DistEnv& env) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  const std::string port = std::to_string(env.master_port);
  const int rc = ::getaddrinfo(env.master_addr.c_str(), port.c_str(), &hints, &res);
  BG_CHECK(rc == 0 && res, kOp, "MASTER_ADDR=", env.master_addr, ": ", gai_strerror(rc));
  return res;
}

void no_delay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

std::string rank_name(int r) { return "rank " + std::to_string(r); }

ControlLine::ControlLine(const DistEnv& e, const std::string& digest,
                         const std::string& root_payload)
    : env(e), links(size_t(e.world)) {
  const std::string hello =
      std::to_string(env.rank) + " " + std::to_string(env.world) + " " + digest;
  addrinfo* addr = resolve(env);
  if (env.rank == 0) {
    Socket listener(::socket(AF_INET, SOCK_STREAM, 0));
    const int one = 1;
    ::setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const bool bound = ::bind(listener.fd(), addr->ai_addr, addr->ai_addrlen) == 0 &&
                       ::listen(listener.fd(), e.world) == 0;
    ::freeaddrinfo(addr);
    BG_CHECK(bound, kOp, "rank 0 cannot listen on ", env.master_addr, ":", env.master_port, " (",
             std::strerror(errno), "; MASTER_PORT picks another)");
    std::vector<std::string> digests(size_t(e.world));
    digests[0] = digest;
    for (int joined = 1; joined < e.world; ++joined) {
      BG_CHECK(wait_fd(listener.fd(), POLLIN, env.timeout_s), kOp, "only ", joined, " of ", e.world,
               " ranks joined within ", int(env.timeout_s), " s");
      Socket s(::accept(listener.fd(), nullptr, nullptr));
      BG_CHECK(s.fd() >= 0, kOp, "accept: ", std::strerror(errno));
      no_delay(s.fd());
      const std::string h = recv_msg(s.fd(), env.timeout_s, "a joining rank");
      int r = -1, w = -1;
      char dig[129] = {0};
      BG_CHECK(std::sscanf(h.c_str(), "%d %d %128s", &r, &w, dig) == 3, kOp,
               "a process that is not a bitgrad rank connected to ", env.master_addr, ":",
               env.master_port);
      BG_CHECK(w == e.world, kOp, rank_name(r), " says WORLD_SIZE=", w, ", rank 0 says ", e.world);
      BG_CHECK(r >= 1 && r < e.world && links[size_t(r)].fd() < 0, kOp,
               "two processes say RANK=", r, " (or it is out of range for WORLD_SIZE=", e.world,
               ")");
      digests[size_t(r)] = dig;
      links[size_t(r)] = std::move(s);
    }
    std::string refusal;
    for (int r = 1; r < e.world && refusal.empty(); ++r)
      if (digests[size_t(r)] != digest)
        refusal = str_cat("rank ", r, "'s config differs from rank 0's (effective config sha256 ",
                          digests[size_t(r)].substr(0, 12), " vs ", digest.substr(0, 12),
                          "): every rank must run the same config and --set overrides");
    for (int r = 1; r < e.world; ++r)
      send_msg(links[size_t(r)].fd(), refusal.empty() ? "ok" + root_payload : "no" + refusal,
               env.timeout_s, rank_name(r));
    BG_CHECK(refusal.empty(), kOp, refusal);
    payload = root_payload;
  } else {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(env.timeout_s);
    for (;;) {
      Socket s(::socket(AF_INET, SOCK_STREAM, 0));
      if (::connect(s.fd(), addr->ai_addr, addr->ai_addrlen) == 0) {
        links[0] = std::move(s);
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ::freeaddrinfo(addr);
        fail(kOp, "rank ", env.rank, " could not reach rank 0 at ", env.master_addr, ":",
             env.master_port, " within ", int(env.timeout_s), " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::freeaddrinfo(addr);
    no_delay(links[0].fd());
    send_msg(links[0].fd(), hello, env.timeout_s, "rank 0");
    const std::string reply = recv_msg(links[0].fd(), env.timeout_s, "rank 0");
    BG_CHECK(reply.rfind("ok", 0) == 0, kOp, reply.substr(2));
    payload = reply.substr(2);
  }
}

void ControlLine::send(int peer, const std::string& b) {
  send_msg(fd(peer), b, env.timeout_s, rank_name(peer));
}
std::string ControlLine::recv(int peer) {
  return recv_msg(fd(peer), env.timeout_s, rank_name(peer));
}

// A rank whose connection closed (it exited) is named at once: rank 0 looks at every rank's
// line, the others at rank 0's.
void ControlLine::check_peers_alive() {
  for (int r = env.rank == 0 ? 1 : 0; r < (env.rank == 0 ? env.world : 1); ++r) {
    pollfd p{fd(r), POLLIN, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLIN))) {
      char c;
      const ssize_t n = ::recv(fd(r), &c, 1, MSG_PEEK | MSG_DONTWAIT);
      BG_CHECK(n != 0, kOp, rank_name(r), " closed its connection (it exited)");
    }
  }
}

bool ControlLine::agree(bool flag) {
  if (env.rank == 0) {
    check_peers_alive();
    for (int r = 1; r < env.world; ++r) send(r, flag ? "1" : "0");
    return flag;
  }
  return recv(0) == "1";
}

}  // namespace bg::dist
