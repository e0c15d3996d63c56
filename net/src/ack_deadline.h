// The transport promises that a dead peer or a cut link surfaces within
// NCCL_PILOT_SOCKET_TIMEOUT_MS, by TCP_USER_TIMEOUT (data unacknowledged) and keepalive (an idle
// connection). The kernel does not always keep the first: when this side's carrier is gone (a
// cable pulled at the switch, a veth whose peer went down), data written afterwards waits for a
// neighbour that cannot be resolved, and the connection failed 0.7-1.6 s past a 3 s timeout, at
// EHOSTUNREACH once resolution gave up (the soak, tests/soak, found it; tests/net/netns_test
// holds it). So a comm also looks for itself: a socket whose sent bytes have waited for their
// acknowledgement, with none arriving from the peer, for the whole timeout is a dead connection.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "wire.h"

namespace pilot::net {

class AckDeadline {
 public:
  /// What a failed inspect() says, before "N ms" (how long the bytes waited).
  static constexpr const char* kNoAcknowledgement = "no acknowledgement from the peer for ";

  explicit AckDeadline(int timeoutMs);
  /// Time to inspect the sockets: at most once per interval (the timeout / 32, 10 to 250 ms);
  /// otherwise it costs one read of the coarse clock.
  bool due();
  /// "" while socket `slot` (0 = control, 1 + s = data stream s) is fine, else why it is not.
  /// One getsockopt(TCP_INFO).
  std::string inspect(int slot, int fd);

 private:
  int timeoutMs_;
  int intervalMs_;
  int64_t now_ = 0;
  int64_t nextMs_ = 0;
  /// Since when the socket's bytes wait for the peer, as the looks saw it; 0 = none waited.
  std::array<int64_t, wire::kMaxStreams + 1> waitingSince_{};
};

}  // namespace pilot::net
