// Per-call times at 2% resolution, per (collective, exact size, algorithm, protocol, channels),
// for `nccl-pilot fit` to learn from a job (docs/calibration.md, "Calibrate from your jobs").
// The aggregates of comm_monitor.h keep power-of-two size buckets and half-octave bins: right
// for dashboards, 2x too coarse to tell two configurations 5% apart. These keep every exact
// size and bins 2% wide, and are written to the summary only ("kind":"calibration" lines).
//
// A key's bins are a window of kWindowBins around its first call's time (x/3.6 .. x3.6); times
// outside it count in the window's edge bins (the exact minimum and maximum are kept apart).
// Lock-free and allocation-free after construction: the proxy thread records, the exporter
// reads. The windows of all slots are one calloc'ed block (256 KiB), whose pages the kernel
// maps only when a key first lands in them: a communicator with ten keys costs ten pages.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "pilot/metrics/operation.h"

namespace pilot::metrics {

/// Bin k holds the times t in nanoseconds with kSampleBinRatio^k <= t < kSampleBinRatio^(k+1).
constexpr double kSampleBinRatio = 1.02;
/// The bin of a time in nanoseconds (>= 1).
int sampleBin(uint64_t ns);

struct SampleKey {
  Operation op = Operation::AllReduce;
  uint64_t messageBytes = 0;  ///< count x element size, < 2^44
  uint8_t algorithm = 0, protocol = 0, channels = 0;
};

class CallSamples {
 public:
  /// A job sweeping 25 sizes with 5 alternatives each needs 150 keys.
  static constexpr unsigned kSlots = 512;
  static constexpr unsigned kMaxKeys = 384;  ///< more keys are counted in overflow() only
  static constexpr unsigned kWindowBins = 128;
  static constexpr unsigned kNoKey = ~0u;

  CallSamples();
  ~CallSamples();
  CallSamples(const CallSamples&) = delete;
  CallSamples& operator=(const CallSamples&) = delete;

  /// The slot of `key`, inserting it; kNoKey once kMaxKeys are taken (or the size is too large).
  unsigned slotOf(const SampleKey& key);
  /// Adds one call's GPU time to a slot (kNoKey: counted as overflow).
  void record(unsigned slot, uint64_t ns);
  uint64_t overflow() const { return overflow_.load(std::memory_order_relaxed); }

  struct View {
    SampleKey key;
    uint64_t calls = 0, sumNs = 0, minNs = 0, maxNs = 0;
    int firstBin = 0;              ///< the absolute bin of counts[0]
    std::vector<uint64_t> counts;  ///< kWindowBins counts
  };
  /// Every key with at least one call, in slot order.
  std::vector<View> snapshot() const;

  /// A key as one word (its size below 2^44, as slotOf() admits), distinct per key.
  static uint64_t pack(const SampleKey& key);

 private:
  struct Slot {
    std::atomic<uint64_t> key{0};  ///< packed key + 1; 0 = free
    std::atomic<int> firstBin{kUnset};
    std::atomic<uint64_t> calls{0}, sumNs{0}, minNs{UINT64_MAX}, maxNs{0};
  };
  static constexpr int kUnset = -1;
  static SampleKey unpack(uint64_t packed);

  std::unique_ptr<Slot[]> slots_;
  uint32_t* windows_ = nullptr;  ///< kSlots x kWindowBins counts (atomic builtins); null: none
  std::atomic<unsigned> keys_{0};
  std::atomic<uint64_t> overflow_{0};
};

}  // namespace pilot::metrics
