#include "pilot/metrics/in_flight.h"

#include <time.h>

#include <algorithm>

#include "memory_order.h"

namespace pilot::metrics {
namespace {

// An entry's `what`: the operation (8 bits) | its channels (8) | peer + 1 (32; 0 = none) | done
// at launch (bit 63: no kernel will report on it).
constexpr uint64_t kDoneAtLaunch = uint64_t{1} << 63;

uint64_t packWhat(Operation op, unsigned channels, int peer, bool doneAtLaunch) {
  const uint64_t p = peer >= 0 ? static_cast<uint64_t>(peer) + 1 : 0;
  return static_cast<uint64_t>(op) | uint64_t{std::min(channels, 255u)} << 8 |
         (p & 0xffffffff) << 16 | (doneAtLaunch ? kDoneAtLaunch : 0);
}

void fetchMax(std::atomic<uint64_t>& word, uint64_t value) {
  uint64_t seen = word.load(kRelaxed);
  while (seen < value && !word.compare_exchange_weak(seen, value, kRelease, kRelaxed)) {
  }
}

}  // namespace

uint64_t monotonicNs() {
  // The coarse clock (the last tick, a few ms): a stall is judged in seconds, and it costs a
  // few ns on the launch and completion paths where the precise one costs tens.
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

InFlightLog::InFlightLog(int nRanks) {
  if (nRanks > 1 && nRanks <= kMaxPeerRanks) {
    peerRanks_ = nRanks;
    peers_ = std::make_unique<std::atomic<uint64_t>[]>(2 * static_cast<size_t>(nRanks));
  }
}

/// Adds one to a counter only the launching thread writes (NCCL uses a communicator from one
/// thread at a time): a load and a store, no locked instruction on the launch path.
static uint64_t bump(std::atomic<uint64_t>& counter) {
  const uint64_t before = counter.load(kRelaxed);
  counter.store(before + 1, kRelaxed);
  return before;
}

uint64_t InFlightLog::launch(Operation op, uint64_t bytes, int peer, unsigned channels,
                             uint64_t nowNs) {
  uint64_t seq = bump(kinds_[static_cast<int>(op)]);
  if (isPointToPoint(op)) {
    // Numbered per peer, so a Send matches its peer's Recv whatever else either rank sends.
    seq = 0;
    if (peer >= 0 && peer < peerRanks_) {
      seq = bump(peers_[2 * static_cast<size_t>(peer) + (op == Operation::Recv ? 1 : 0)]);
    }
  } else {
    peer = -1;
  }
  const uint64_t ordinal = bump(launched_) + 1;
  Entry& e = ring_[ordinal % kRing];
  // A small seqlock: the ordinal goes to 0 first; each field is a release store, so none is
  // seen before that 0; the new ordinal last. (No fences: TSan does not model them.)
  e.ordinal.store(0, kRelaxed);
  e.what.store(packWhat(op, channels, peer, channels == 0), kRelease);
  e.seq.store(seq, kRelease);
  e.bytes.store(bytes, kRelease);
  e.launchNs.store(nowNs, kRelease);
  e.task.store(0, kRelease);
  e.ordinal.store(ordinal, kRelease);
  return ordinal;
}

void InFlightLog::attach(uint64_t ordinal, uint64_t task) {
  Entry& e = ring_[ordinal % kRing];
  if (e.ordinal.load(kAcquire) == ordinal) e.task.store(task, kRelease);
}

void InFlightLog::complete(uint64_t ordinal, uint64_t nowNs) {
  // The newest completion must not be lost (the operations before it would look in flight for
  // good): a compare-and-swap, taken only when it moves. Its time is a hint.
  fetchMax(completed_, ordinal);
  if (lastDoneNs_.load(kRelaxed) < nowNs) lastDoneNs_.store(nowNs, kRelaxed);
}

bool InFlightLog::read(uint64_t ordinal, OperationView* out) const {
  const Entry& e = ring_[ordinal % kRing];
  if (e.ordinal.load(kAcquire) != ordinal) return false;
  // Acquire loads: the second look at the ordinal comes after them.
  const uint64_t what = e.what.load(kAcquire);
  out->ordinal = ordinal;
  out->op = static_cast<Operation>(what & 0xff);
  out->channels = static_cast<unsigned>((what >> 8) & 0xff);
  out->peer = static_cast<int>((what >> 16) & 0xffffffff) - 1;
  out->seq = e.seq.load(kAcquire);
  out->bytes = e.bytes.load(kAcquire);
  out->launchNs = e.launchNs.load(kAcquire);
  out->task = e.task.load(kAcquire);
  // Rewritten meanwhile (kRing launches later): the fields may mix two operations.
  return e.ordinal.load(kRelaxed) == ordinal && static_cast<int>(out->op) < kNumOperations &&
         (what & kDoneAtLaunch) == 0;
}

InFlightView InFlightLog::view() const {
  InFlightView v;
  const uint64_t launched = launched_.load(kAcquire);
  const uint64_t completed = std::min(completed_.load(kAcquire), launched);
  v.lastDoneNs = lastDoneNs_.load(kRelaxed);
  for (int k = 0; k < kNumOperations; ++k) v.kinds[k].launched = kinds_[k].load(kRelaxed);
  if (launched > 0) {
    const Entry& e = ring_[launched % kRing];
    v.hasLast = e.ordinal.load(kAcquire) == launched;
    if (v.hasLast) {
      read(launched, &v.last);  // a last op done at launch is still the last
      const uint64_t what = e.what.load(kRelaxed);
      v.last.op = static_cast<Operation>(what & 0xff);
      v.hasLast = static_cast<int>(v.last.op) < kNumOperations;
    }
  }
  // In flight: every ordinal after the newest completed one, except those done at launch.
  uint64_t inFlightOf[kNumOperations] = {};
  std::vector<std::pair<int, uint64_t>> peerInFlight;  // (2 * peer + recv, count)
  const uint64_t first = completed + 1;
  const uint64_t kept = launched >= kRing ? launched - kRing + 1 : 1;
  v.overflow = first < kept;
  if (v.overflow) v.inFlight = kept - first;
  for (uint64_t o = std::max(first, kept); o <= launched; ++o) {
    OperationView op;
    if (!read(o, &op)) continue;
    ++v.inFlight;
    ++inFlightOf[static_cast<int>(op.op)];
    if (isPointToPoint(op.op) && op.peer >= 0) {
      peerInFlight.emplace_back(2 * op.peer + (op.op == Operation::Recv ? 1 : 0), 1);
    }
    if (!v.hasOldest) {
      v.hasOldest = true;
      v.oldest = op;
    }
  }
  for (int k = 0; k < kNumOperations; ++k) {
    v.kinds[k].done = v.kinds[k].launched - std::min(v.kinds[k].launched, inFlightOf[k]);
  }
  std::sort(peerInFlight.begin(), peerInFlight.end());
  auto open = peerInFlight.begin();
  for (int peer = 0; peer < peerRanks_; ++peer) {
    for (int recv = 0; recv < 2; ++recv) {
      const int word = 2 * peer + recv;
      uint64_t inFlight = 0;
      for (; open != peerInFlight.end() && open->first == word; ++open) inFlight += open->second;
      const uint64_t n = peers_[static_cast<size_t>(word)].load(kRelaxed);
      if (n == 0) continue;
      (recv ? v.recvs : v.sends).emplace_back(peer, LaunchCount{n, n - std::min(n, inFlight)});
    }
  }
  return v;
}

}  // namespace pilot::metrics
