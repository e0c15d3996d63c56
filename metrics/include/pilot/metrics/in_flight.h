// What one communicator has launched and what it still waits for, kept on the event path so that
// a rank can say, while it waits, which operation it is stuck in (the state file, `nccl-pilot
// hang`). Per communicator:
//   - how many operations of each kind it launched: collectives numbered per kind from 0, which
//     is NCCL's own seqNumber (src/plugin/profiler.cc: comm->seqNumber[func], read before its
//     increment; NCCL counts none for Send/Recv), and Send/Recv per (kind, peer), so that rank
//     A's Send #k to B is B's Recv #k from A;
//   - the last kRing operations launched: kind, number, bytes, peer, launch time, the channels
//     whose kernels started and stopped;
//   - the newest completed operation. A communicator's kernels run in one stream, in launch
//     order, so every operation launched before a completed one is complete too: the oldest in
//     flight is the one after it.
// Launches come from the thread that enqueues (NCCL uses a communicator from one thread at a
// time); kernel channels and completions from the proxy thread; the exporter reads. Each entry
// is a small seqlock (its ordinal written last), every field an atomic: nothing allocates,
// locks or formats here.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "pilot/metrics/operation.h"

namespace pilot::metrics {

/// CLOCK_MONOTONIC_COARSE in ns (the vDSO's last tick: a few ms of resolution, no system call).
uint64_t monotonicNs();

/// One operation as the exporter saw it.
struct OperationView {
  uint64_t ordinal = 0;  ///< 1-based launch order on its communicator
  Operation op = Operation::AllReduce;
  uint64_t seq = 0;  ///< 0-based, per kind (and peer for Send/Recv)
  uint64_t bytes = 0;
  int peer = -1;  ///< Send/Recv only
  uint64_t launchNs = 0;
  unsigned channels = 0;
  /// The event path's slot following it (EventPath::channelsOf), 0 when none.
  uint64_t task = 0;
  /// Channel ids (bit c = channel c) that started and stopped: filled by the exporter from the
  /// slot's lanes (EventPath::channelsOf), never on the event path.
  uint64_t started = 0, stopped = 0;
};

/// Launched and done counts of one kind, or of one peer's Send or Recv.
struct LaunchCount {
  uint64_t launched = 0, done = 0;
};

struct InFlightView {
  LaunchCount kinds[kNumOperations];
  /// Per peer rank with any Send (Recv) launched: (peer, counts), ascending by peer.
  std::vector<std::pair<int, LaunchCount>> sends, recvs;
  uint64_t inFlight = 0;
  /// More in flight than the ring keeps: the oldest ones' kinds are unknown, and `oldest` is
  /// the oldest the ring still holds (done counts then count them as done).
  bool overflow = false;
  bool hasLast = false, hasOldest = false;
  OperationView last, oldest;
  uint64_t lastDoneNs = 0;  ///< 0: nothing completed yet
};

class InFlightLog {
 public:
  static constexpr unsigned kRing = 128;
  /// Per-peer Send/Recv numbers are kept for communicators up to this many ranks.
  static constexpr int kMaxPeerRanks = 1 << 16;

  explicit InFlightLog(int nRanks);

  /// Notes a launch; returns its ordinal (1-based, per communicator) for the channel and
  /// completion calls. `channels` 0: nothing will report on it, so it counts done at once.
  uint64_t launch(Operation op, uint64_t bytes, int peer, unsigned channels, uint64_t nowNs);
  /// The event path's slot that follows the operation (its lanes say which channels started
  /// and stopped); ignored when the entry was reused since, kRing launches later.
  void attach(uint64_t ordinal, uint64_t task);
  /// The operation completed: it and every one launched before it.
  void complete(uint64_t ordinal, uint64_t nowNs);

  InFlightView view() const;
  /// Launched so far, per kind (Send and Recv: over every peer).
  uint64_t launched(Operation op) const {
    return kinds_[static_cast<int>(op)].load(std::memory_order_relaxed);
  }

 private:
  struct Entry {
    std::atomic<uint64_t> ordinal{0};  // 0 while being written
    std::atomic<uint64_t> what{0};     // op (8) | channels (8) | peer + 1 (32)
    std::atomic<uint64_t> seq{0}, bytes{0}, launchNs{0};
    std::atomic<uint64_t> task{0};
  };
  bool read(uint64_t ordinal, OperationView* out) const;

  std::atomic<uint64_t> kinds_[kNumOperations] = {};
  // Per peer: launched Sends, launched Recvs (2 words per rank).
  std::unique_ptr<std::atomic<uint64_t>[]> peers_;
  int peerRanks_ = 0;
  std::atomic<uint64_t> launched_{0};   // the last ordinal handed out
  std::atomic<uint64_t> completed_{0};  // the newest completed ordinal
  std::atomic<uint64_t> lastDoneNs_{0};
  Entry ring_[kRing];
};

}  // namespace pilot::metrics
