// Everything the soak does is derived from one seed, so a failing run can be replayed with
// --seed: the messages of every step of every connection (both ends compute the same plan, so
// the receiver checks each byte without a side channel) and the fault schedule.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "pilot/net/transport.h"

namespace soak {

/// Largest message, and largest step (all the messages of one grouped receive together).
constexpr size_t kMaxStepBytes = size_t{16} << 20;
/// A receive buffer may be this much larger than its message (test() reports the real size).
constexpr size_t kMaxSlack = 4096;
constexpr int kMaxGroup = pilot::net::kMaxRecvs;

/// SplitMix64 over pilot::mix64: the same numbers on every process and platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  /// Uniform in [0, n) (n > 0).
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  uint64_t state_;
};

/// A key for (seed, a, b, ...): the parts hashed in order.
uint64_t keyOf(uint64_t seed, std::initializer_list<uint64_t> parts);

/// One message of a step, as the receiver posts its buffer.
struct PlannedMessage {
  int tag = 0;
  size_t size = 0;       ///< what the sender sends
  size_t capacity = 0;   ///< the receiver's buffer: size plus a slack it must not touch
  uint64_t pattern = 0;  ///< content seed (tests/net's fillPattern)
};

/// One grouped receive (irecv with n buffers, distinct tags) and the sends that fill it.
struct StepPlan {
  int n = 0;
  std::array<PlannedMessage, kMaxGroup> messages;  ///< in the receiver's buffer order
  std::array<int, kMaxGroup> sendOrder{};          ///< the order the sender posts them in
  int receiverLagMs = 0;  ///< the receiver posts late, so small messages arrive unexpected
  /// Bytes of the buffers of the step, each rounded up to 64 (the arena's unit).
  size_t footprint() const;
  size_t payload() const;
};

/// Step `step` of direction `dir` (0: side A sends to B, 1: B to A) of communicator `comm` in
/// its `epoch`-th incarnation.
StepPlan planStep(uint64_t seed, int comm, uint32_t epoch, int dir, uint64_t step);

enum class FaultKind { Drop, LinkFlap, Kill, Flood, WrongSecret };
constexpr int kFaultKinds = 5;
const char* faultName(FaultKind kind);

struct Fault {
  FaultKind kind = FaultKind::Drop;
  int gapMs = 0;       ///< traffic runs this long after the previous fault settled
  int durationMs = 0;  ///< Drop: 2000; LinkFlap: how long the link stays down
  int pair = 0;        ///< Kill, Flood, WrongSecret: the process pair hit
  int side = 0;        ///< Kill: the process killed; Flood, WrongSecret: the listening side
  int comm = 0;        ///< Flood, WrongSecret: the communicator re-created under attack
  int strangers = 0;   ///< Flood: connections opened to the listener
};

/// `count` faults in rounds: each round is every kind once, in an order of the seed's.
std::vector<Fault> planFaults(uint64_t seed, int pairs, int commsPerPair, int timeoutMs, int count);

}  // namespace soak
