// Connection setup of the socket transport: the listening side (accepts sockets, checks each
// one's hello, groups a connection's sockets) and the connecting side (opens the sockets and
// sends the hellos). Both are nonblocking state machines NCCL drives by calling again.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "pilot/net/socket.h"
#include "socket_comm.h"

namespace pilot::net {

static_assert(SocketOptions::kMaxStreams == wire::kMaxStreams, "hello checks use the wire bound");
static_assert(SocketOptions::kMinChunk == wire::kMinChunk, "chunk plans assume the same floor");
static_assert(SocketOptions::kMaxEager == wire::kMaxEager, "the receiver parks what may be sent");

class SocketListenComm final : public ListenComm {
 public:
  /// Binds to the interface address on an ephemeral port and fills `handle`.
  static Expected<std::unique_ptr<SocketListenComm>> open(const NetInterface& nic,
                                                          const SocketOptions& options, Logger& log,
                                                          void* handle);
  /// A complete connection (all sockets presented the secret), or nullptr for "not yet".
  Expected<SocketRecvComm*> accept();

  /// Bounds on what unauthenticated peers can make us hold.
  static constexpr size_t kMaxPendingSockets = 64;
  static constexpr size_t kMaxPendingConnections = 32;

 private:
  SocketListenComm(Fd listener, uint64_t secret, const SocketOptions& options, Logger& log);

  /// A socket that has not yet sent a valid hello.
  struct PendingSocket {
    Fd fd;
    std::string peer;
    int64_t deadline = 0;
    std::array<uint8_t, wire::Hello::kBytes> hello{};
    size_t got = 0;
  };
  /// The sockets of one connection (same nonce) seen so far.
  struct PendingConnection {
    uint64_t nonce = 0;
    int streams = 0;
    uint32_t chunkBytes = 0;
    uint32_t eagerBytes = 0;
    int64_t deadline = 0;
    int have = 0;
    std::string peer;
    Fd control;
    std::array<Fd, wire::kMaxStreams> data;
  };

  void acceptSockets(int64_t now);
  /// Reads the hello of pending_[i]; true when the socket left the pending list.
  bool readHello(size_t i);
  void placeSocket(PendingSocket& socket, const wire::Hello& hello);
  void drop(const std::string& peer, const char* why);

  Fd listener_;
  uint64_t secret_;
  int timeoutMs_;
  int threads_;
  int family_;
  Logger& log_;
  std::vector<PendingSocket> pending_;
  std::vector<PendingConnection> connections_;
};

/// One connect() in progress, found again through the ticket kept in NCCL's handle.
class PendingConnect {
 public:
  static Expected<std::unique_ptr<PendingConnect>> start(const void* handle,
                                                         const SocketOptions& options,
                                                         const ConnectOptions& connect);
  /// Moves every socket as far as it goes without blocking; true once all sent their hello.
  Expected<bool> progress();
  /// The established connection (after progress() returned true).
  Connection take();
  const std::string& peer() const { return peerName_; }

 private:
  struct Socket {
    enum class Stage : uint8_t { Idle, Connecting, Hello, Done } stage = Stage::Idle;
    Fd fd;
    int64_t retryAt = 0;
    size_t sent = 0;
    std::array<uint8_t, wire::Hello::kBytes> hello{};
  };
  Status startSocket(Socket& s, int64_t now);

  SocketAddress peer_;
  std::string peerName_;
  int streams_ = 0;
  uint64_t chunkBytes_ = 0;
  uint64_t eagerBytes_ = 0;
  int threads_ = 0;
  int timeoutMs_ = 0;
  int trafficClass_ = -1;
  int64_t deadline_ = 0;
  std::array<Socket, wire::kMaxStreams + 1> sockets_;  ///< [0] control, [1..] data
};

}  // namespace pilot::net
