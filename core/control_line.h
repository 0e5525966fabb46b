// control_line.h: the control line of a data-parallel group (core/distributed.h): rank 0
// listens on MASTER_ADDR:MASTER_PORT, every other rank connects; the handshake checks each
// rank's number, the world size and the config digest, and hands out rank 0's payload (the
// NCCL id). The sockets then carry framed messages: the step's stop flag, the socket group's
// tensors, and the fault path (a closed connection names the rank that exited). Every wait is
// bounded by the group's timeout.
#pragma once
#include <string>
#include <vector>

#include "core/distributed.h"

namespace bg::dist {

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

std::string rank_name(int rank);

// Rank 0 holds a socket to every other rank (links[r]; links[0] unused); every other rank one
// socket to rank 0 (links[0]).
struct ControlLine {
  DistEnv env;
  std::vector<Socket> links;
  std::string payload;  // rank 0's payload, on every rank

  ControlLine(const DistEnv& e, const std::string& digest, const std::string& root_payload);
  int fd(int peer) const { return links[size_t(peer)].fd(); }
  void send(int peer, const std::string& bytes);
  std::string recv(int peer);
  // A rank whose connection closed (it exited) is named at once: rank 0 looks at every rank's
  // line, the others at rank 0's.
  void check_peers_alive();
  // Rank 0's flag on every rank.
  bool agree(bool flag);
};

}  // namespace bg::dist
