// One direction of a communicator as NCCL's proxy drives it: the sender posts each step's
// messages (isend, retried while it returns NULL) and tests the oldest; the receiver posts a
// grouped receive per step (irecv with n tagged buffers) a few steps ahead and tests the oldest.
// Both take what to move from planStep(), so the receiver checks every byte of every message,
// the sizes test() reports, and that the slack behind each message was not written.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "pilot/net/transport.h"
#include "soak_plan.h"

namespace soak {

/// Buffers handed out and given back in the same order, in one block touched up front (so the
/// process's RSS does not grow with the sizes it happens to see).
class FifoArena {
 public:
  explicit FifoArena(size_t bytes);
  ~FifoArena();
  FifoArena(const FifoArena&) = delete;
  FifoArena& operator=(const FifoArena&) = delete;
  /// `bytes` behind everything handed out so far, or nullptr while that space is in use.
  uint8_t* allocate(size_t bytes);
  void releaseOldest();
  void clear();

 private:
  uint8_t* block_ = nullptr;
  size_t size_ = 0;
  std::deque<std::pair<size_t, size_t>> live_;  ///< offset, length (oldest first)
  size_t head_ = 0;
};

/// What a process counts, and reports to the coordinator.
struct TrafficTotals {
  uint64_t transfers = 0;  ///< messages received and verified
  uint64_t bytes = 0;      ///< their payload
  uint64_t corrupted = 0;  ///< messages whose size, bytes or slack were wrong
};

/// Sends may start while the bucket is not in debt; a step takes its payload out of it.
class RateLimit {
 public:
  explicit RateLimit(double bytesPerSecond) : rate_(bytesPerSecond) {}
  bool mayStart(int64_t nowMs);
  void take(size_t bytes) { tokens_ -= static_cast<double>(bytes); }

 private:
  double rate_;
  double tokens_ = 0;
  int64_t lastMs_ = -1;
};

struct LaneId {
  uint64_t seed = 0;
  int comm = 0;
  uint32_t epoch = 0;
  int dir = 0;
};

/// A lane's result for one pass: an error ends the communicator.
struct LanePass {
  bool moved = false;  ///< something was posted or completed
  std::string error;
};

class SendLane {
 public:
  explicit SendLane(size_t arenaBytes) : arena_(arenaBytes) {}
  void start(const LaneId& id, pilot::net::SendComm* comm, int64_t nowMs);
  void stop();
  LanePass drive(pilot::net::Transport& t, RateLimit& limit, int64_t nowMs);
  /// Whether something is posted and not done (or waits to be posted).
  bool busy() const { return !steps_.empty(); }
  /// The last time a message was posted or completed.
  int64_t lastProgressMs() const { return lastProgressMs_; }
  uint64_t completedSteps() const { return completedSteps_; }
  /// When its latest message went, for the last kHistory steps that went: "FIRST:T0,T1,..."
  /// (steps FIRST, FIRST + 1, ...), or "-". A receiver's step waits on the network, not on
  /// its sender, from when the sender posted the last message it posted into it.
  std::string postedSteps() const;

 private:
  static constexpr uint64_t kHistory = 16;
  struct Step {
    StepPlan plan;
    uint8_t* base = nullptr;
    int posted = 0;  ///< messages posted, in plan.sendOrder
    int done = 0;
    std::array<pilot::net::Request*, kMaxGroup> requests{};
  };
  static constexpr size_t kDepth = 4;

  FifoArena arena_;
  LaneId id_;
  pilot::net::SendComm* comm_ = nullptr;
  std::deque<Step> steps_;
  uint64_t nextStep_ = 0;
  uint64_t startedSteps_ = 0;                 ///< steps with a message posted
  std::array<int64_t, kHistory> postedMs_{};  ///< when each step's latest message was posted
  uint64_t completedSteps_ = 0;
  int64_t lastProgressMs_ = 0;
};

class RecvLane {
 public:
  explicit RecvLane(size_t arenaBytes) : arena_(arenaBytes) {}
  void start(const LaneId& id, pilot::net::RecvComm* comm, int64_t nowMs);
  void stop();
  /// `totals` counts what was verified; a corrupted message also ends up in `corruption`.
  LanePass drive(pilot::net::Transport& t, TrafficTotals& totals, std::string* corruption,
                 int64_t nowMs);
  bool busy() const { return !steps_.empty(); }
  int64_t lastProgressMs() const { return lastProgressMs_; }
  /// Steps received and checked since start().
  uint64_t completedSteps() const { return completedSteps_; }
  /// The oldest step not complete: "STEP:POSTED_MS", or "STEP:-" while it is not posted yet
  /// (its sender's eager messages may be on their way all the same).
  std::string oldestWaiting() const;

 private:
  struct Step {
    uint64_t number = 0;
    StepPlan plan;
    uint8_t* base = nullptr;
    pilot::net::Request* request = nullptr;
    int64_t postedMs = 0;
  };
  static constexpr size_t kDepth = 4;
  static constexpr uint8_t kCanary = 0xa5;

  std::string verify(const Step& step, const pilot::net::TestResult& result,
                     TrafficTotals& totals) const;

  FifoArena arena_;
  LaneId id_;
  pilot::net::RecvComm* comm_ = nullptr;
  std::deque<Step> steps_;
  uint64_t nextStep_ = 0;
  uint64_t completedSteps_ = 0;
  int64_t lastProgressMs_ = 0;
  int64_t postAfterMs_ = 0;
};

}  // namespace soak
