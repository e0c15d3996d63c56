// One side of a soak communicator: a send comm and a receive comm to the same peer process, as
// two ranks of an NCCL communicator hold one per channel. Set up the way NCCL does (listen, the
// handle to the peer through the coordinator, connect + accept until both exist), torn down at
// the first error on either (as an aborted communicator), and set up anew in a later epoch.
#pragma once

#include <cstdint>
#include <string>

#include "pilot/net/transport.h"
#include "traffic.h"

namespace soak {

/// Why a communicator stopped: the event the coordinator gets.
struct Breakage {
  bool hung = false;  ///< no error, but nothing moved for longer than the hang bound
  int64_t atMs = 0;   ///< when the error surfaced (or the hang was declared)
  /// What the coordinator times the detection from (a step waits on the network from when its
  /// sender posted the last message it posted into it): when the send lane posted into its
  /// last steps (SendLane::postedSteps) and the receive lane's oldest step waiting
  /// (RecvLane::oldestWaiting); "-" in set-up.
  std::string sendSteps = "-";
  std::string recvWaiting = "-";
  std::string where;  ///< send, recv, connect, accept
  std::string message;
};

class Communicator {
 public:
  enum class State { Closed, Listening, Connecting, Up };

  Communicator(int id, size_t arenaBytes) : id_(id), send_(arenaBytes), recv_(arenaBytes) {}
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// Closes what is open, listens, and fills `handle` for the peer.
  std::string open(pilot::net::Transport& t, uint32_t epoch, unsigned char* handle, int64_t nowMs);
  /// The peer's handle arrived: connect to it (and keep accepting) from the next drive().
  void connectTo(const unsigned char* handle, int64_t nowMs);
  /// Closes everything (with requests in flight: an abort).
  void close(pilot::net::Transport& t);

  /// One pass of set-up or traffic: whether it came up (and how long that took) or broke (then
  /// it is closed already).
  struct Outcome {
    bool moved = false;
    int64_t upAfterMs = -1;
    bool broken = false;
    Breakage breakage;
    std::string corruption;
  };
  Outcome drive(pilot::net::Transport& t, RateLimit& limit, TrafficTotals& totals,
                const LaneId& send, const LaneId& recv, int hangMs, int64_t nowMs);

  int id() const { return id_; }
  uint32_t epoch() const { return epoch_; }
  State state() const { return state_; }
  uint64_t receivedSteps() const { return recv_.completedSteps(); }

 private:
  Outcome fail(pilot::net::Transport& t, Outcome out, const std::string& where,
               const std::string& message, int64_t nowMs);

  int id_;
  uint32_t epoch_ = 0;
  State state_ = State::Closed;
  pilot::net::ListenComm* listen_ = nullptr;
  pilot::net::SendComm* sendComm_ = nullptr;
  pilot::net::RecvComm* recvComm_ = nullptr;
  unsigned char peerHandle_[pilot::net::kHandleBytes] = {};
  int64_t connectSinceMs_ = 0;
  SendLane send_;
  RecvLane recv_;
};

}  // namespace soak
