// What is kept per (communicator, aggregation key): counters NCCL's proxy thread adds to when a
// collective's last kernel channel stops, and the exporter reads while it runs. Relaxed
// atomics only (lock-free, no allocation); the exporter's totals are a snapshot field by field,
// so a collective completing meanwhile may show in one field and not yet in another.
#pragma once

#include <atomic>
#include <cstdint>

#include "pilot/metrics/histogram.h"

namespace pilot::metrics {

/// One completed, GPU-timed collective.
struct Completion {
  uint64_t timeNs = 0;        ///< max over channels of (kernel stop - start)
  uint64_t messageBytes = 0;  ///< count x element size
  double busBytes = 0;        ///< operation.h busBytes()
  double expectedNs = 0;      ///< the rule's calibrated time at this size; 0 = none
};

/// Plain totals (a snapshot, or a difference of two).
struct KeyTotals {
  uint64_t calls = 0;
  uint64_t timeNs = 0;
  uint64_t messageBytes = 0;
  double busBytes = 0;
  /// Inspector's geometric mean of bus bandwidth: sum of ln(GB/s) over calls with bandwidth.
  double logBusGbs = 0;
  uint64_t busCalls = 0;
  uint64_t minNs = 0, maxNs = 0;  ///< 0/0 when calls == 0
  /// Calls that had a calibrated expectation, their expected and their live time.
  uint64_t expectedCalls = 0;
  double expectedNs = 0;
  uint64_t expectedLiveNs = 0;
  uint64_t bins[kBins] = {};

  /// this - earlier (min/max are kept from this: they are not differences).
  KeyTotals since(const KeyTotals& earlier) const;
  void add(const KeyTotals& other);
};

class KeyAggregate {
 public:
  void record(const Completion& c);
  KeyTotals totals() const;

 private:
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> timeNs_{0};
  std::atomic<uint64_t> messageBytes_{0};
  std::atomic<double> busBytes_{0};
  std::atomic<double> logBusGbs_{0};
  std::atomic<uint64_t> busCalls_{0};
  std::atomic<uint64_t> minNs_{UINT64_MAX};
  std::atomic<uint64_t> maxNs_{0};
  std::atomic<uint64_t> expectedCalls_{0};
  std::atomic<double> expectedNs_{0};
  std::atomic<uint64_t> expectedLiveNs_{0};
  std::atomic<uint64_t> bins_[kBins] = {};
};

}  // namespace pilot::metrics
