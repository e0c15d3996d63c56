#include "pilot/metrics/comm_monitor.h"

#include "pilot/core/mix.h"
#include "pilot/core/text.h"
#include "pilot/tuner/attribution.h"

namespace pilot::metrics {

uint64_t KeyFields::pack() const {
  return static_cast<uint64_t>(op) | static_cast<uint64_t>(bucket) << 4 |
         static_cast<uint64_t>(algorithm & 0xf) << 11 |
         static_cast<uint64_t>(protocol & 0x7) << 15 | static_cast<uint64_t>(channels) << 18 |
         static_cast<uint64_t>(decision) << 26;
}

KeyFields KeyFields::unpack(uint64_t key) {
  KeyFields f;
  f.op = static_cast<Operation>(key & 0xf);
  f.bucket = static_cast<uint8_t>((key >> 4) & 0x7f);
  f.algorithm = static_cast<uint8_t>((key >> 11) & 0xf);
  f.protocol = static_cast<uint8_t>((key >> 15) & 0x7);
  f.channels = static_cast<uint8_t>((key >> 18) & 0xff);
  f.decision = static_cast<uint16_t>((key >> 26) & 0xffff);
  return f;
}

const char* skipName(Skip s) {
  switch (s) {
    case Skip::SampledOut:
      return "sampled_out";
    case Skip::BelowMinBytes:
      return "below_min_bytes";
    case Skip::Unknown:
      return "unknown_operation";
    case Skip::NoChannels:
      return "no_kernel_channels";
    case Skip::NoSlot:
      return "no_free_slot";
    case Skip::Untimed:
      return "no_gpu_time";
    case Skip::IgnoredKernel:
      return "ignored_kernel_event";
    case Skip::Abandoned:
      return "finalized_in_flight";
    case Skip::Count:
      break;
  }
  return "other";
}

const char* groupOutcomeName(GroupOutcome o) {
  switch (o) {
    case GroupOutcome::AlltoAll:
      return "alltoall";
    case GroupOutcome::Partial:
      return "partial";
    case GroupOutcome::Untracked:
      return "untracked";
    case GroupOutcome::Count:
      break;
  }
  return "other";
}

uint64_t CommMonitor::peerHash(int peer) {
  return mix64(static_cast<uint64_t>(static_cast<uint32_t>(peer)) + 1);
}

CommMonitor::CommMonitor(CommIdentity identity, const MetricsSettings& settings,
                         tuner::TunerRuntime::Compiled table)
    : identity_(std::move(identity)),
      settings_(settings),
      table_(std::move(table)),
      inFlight_(identity_.nRanks) {
  const int ranks = identity_.nRanks > 0 ? identity_.nRanks : 0;
  peerWords_ = (static_cast<size_t>(ranks) + 63) / 64;
  // Value-initialized: every bit clear.
  sentTo_ = std::make_unique<std::atomic<uint64_t>[]>(peerWords_);
  receivedFrom_ = std::make_unique<std::atomic<uint64_t>[]>(peerWords_);
  for (int r = 0; r < ranks; ++r) {
    if (r != identity_.rank) peerHashOfOthers_ += peerHash(r);
  }
  if (!table_.compiled) return;
  const size_t n = table_.compiled->ruleCount();
  curves_.reserve(n);
  ordinals_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const tuner::Rule& r = table_.compiled->rule(static_cast<uint32_t>(i));
    curves_.emplace_back(r.expected);
    int ordinal = 0;
    if (table_.table) {
      for (size_t j = 0; j < table_.table->rules.size(); ++j) {
        if (table_.table->rules[j].line == r.line) ordinal = static_cast<int>(j) + 1;
      }
    }
    ordinals_.push_back(ordinal);
  }
}

void CommMonitor::notePeer(Operation op, int peer) {
  if (peer < 0 || peer >= identity_.nRanks || peer == identity_.rank) return;
  std::atomic<uint64_t>* words = op == Operation::Send ? sentTo_.get() : receivedFrom_.get();
  std::atomic<uint64_t>& word = words[static_cast<size_t>(peer) / 64];
  const uint64_t bit = uint64_t{1} << (peer % 64);
  // Loaded first: after the first exchanges every peer's bit is set, and a load shares the line.
  if ((word.load(std::memory_order_relaxed) & bit) == 0) {
    word.fetch_or(bit, std::memory_order_relaxed);
  }
}

unsigned CommMonitor::peers(Operation op) const {
  const std::atomic<uint64_t>* words = op == Operation::Send ? sentTo_.get() : receivedFrom_.get();
  unsigned n = 0;
  for (size_t i = 0; i < peerWords_; ++i) {
    n += static_cast<unsigned>(__builtin_popcountll(words[i].load(std::memory_order_relaxed)));
  }
  return n;
}

void CommMonitor::release() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

uint16_t CommMonitor::decide(Operation op, uint64_t messageBytes, uint8_t algorithm,
                             uint8_t protocol, int channels) const {
  tuner::Collective coll;
  if (!table_.compiled || !tunedCollective(op, &coll) || algorithm >= tuner::kNumAlgorithms ||
      protocol >= tuner::kNumProtocols) {
    return KeyFields::kNcclDecided;
  }
  const tuner::RanDecision ran{coll, tunerBytes(op, messageBytes, identity_.nRanks),
                               static_cast<tuner::Algorithm>(algorithm),
                               static_cast<tuner::Protocol>(protocol), channels};
  const tuner::Rule* r = tuner::attributeDecision(*table_.compiled, ran);
  if (r == nullptr) return KeyFields::kNcclDecided;
  const uint32_t index = table_.compiled->indexOf(r);
  return index < KeyFields::kNcclDecided ? static_cast<uint16_t>(index) : KeyFields::kNcclDecided;
}

double CommMonitor::expectedNs(uint16_t decision, Operation op, uint64_t messageBytes) const {
  if (decision >= curves_.size() || curves_[decision].empty()) return 0.0;
  const tuner::Rule& r = table_.compiled->rule(decision);
  const bool perRank =
      r.perRankSize && (op == Operation::AllGather || op == Operation::ReduceScatter);
  const uint64_t axis = perRank ? messageBytes : tunerBytes(op, messageBytes, identity_.nRanks);
  return curves_[decision].expectedNs(axis);
}

unsigned CommMonitor::keyIndex(uint64_t key) {
  static_assert(kSlots == 256 && kMaxKeys < 255,
                "the slot is the hash's top byte; index + 1 a byte");
  uint64_t h = (key + 1) * 0x9E3779B97F4A7C15ull;
  unsigned slot = static_cast<unsigned>(h >> 56);
  for (unsigned probe = 0; probe < kSlots; ++probe, slot = (slot + 1) % kSlots) {
    uint64_t word = slots_[slot].load(std::memory_order_acquire);
    if (word == 0) {
      // Reserve an aggregate first, then publish key and index in one word.
      unsigned index = nextIndex_.fetch_add(1, std::memory_order_relaxed);
      if (index >= kMaxKeys) {
        nextIndex_.store(kMaxKeys, std::memory_order_relaxed);
        return kOtherKey;  // full: the key is not stored, so it stays "other" every time
      }
      const uint64_t mine = key << 8 | (index + 1);
      if (slots_[slot].compare_exchange_strong(word, mine, std::memory_order_acq_rel)) {
        return index;
      }
      // Another thread took the slot (one aggregate index is lost, never reused).
    }
    if ((word >> 8) == key) return static_cast<unsigned>((word & 0xff) - 1);
  }
  return kOtherKey;
}

std::vector<CommMonitor::KeyView> CommMonitor::keys() const {
  std::vector<KeyView> out;
  for (unsigned slot = 0; slot < kSlots; ++slot) {
    const uint64_t word = slots_[slot].load(std::memory_order_acquire);
    if (word == 0) continue;
    KeyView v;
    v.fields = KeyFields::unpack(word >> 8);
    v.index = static_cast<unsigned>((word & 0xff) - 1);
    v.totals = aggregates_[v.index].totals();
    out.push_back(v);
  }
  KeyView other;
  other.other = true;
  other.index = kOtherKey;
  other.totals = aggregates_[kOtherKey].totals();
  if (other.totals.calls > 0) out.push_back(other);
  return out;
}

std::string CommMonitor::decisionLabel(uint16_t decision) const {
  if (decision == KeyFields::kNcclDecided || decision >= ordinals_.size()) return "NCCL";
  const tuner::Rule& r = table_.compiled->rule(decision);
  return "rule " + std::to_string(ordinals_[decision]) + " (line " + std::to_string(r.line) + ")";
}

std::string CommMonitor::decisionBand(uint16_t decision) const {
  if (decision == KeyFields::kNcclDecided || decision >= ordinals_.size()) return "";
  const tuner::Rule& r = table_.compiled->rule(decision);
  std::string band = text::formatBytes(r.size.lo) + "..";
  if (r.size.hi != UINT64_MAX) band += text::formatBytes(r.size.hi);
  return band + (r.perRankSize ? " per rank" : "");
}

}  // namespace pilot::metrics
