// Per-message latency percentiles without storing every sample (a 1 GiB run of 4 KiB
// messages is 2^18 of them): a log-linear histogram, 64 buckets per power of two, so a
// percentile is exact to about 1.6 %.
#pragma once

#include <array>
#include <cstdint>

namespace pilot::cli {

class LatencyHistogram {
 public:
  void add(int64_t ns);
  uint64_t count() const { return count_; }
  /// The q-quantile (0..1) in nanoseconds: the middle of its bucket; 0 when empty.
  double quantileNs(double q) const;

 private:
  static constexpr int kSubBits = 6;
  static constexpr int kBuckets = (64 - kSubBits + 1) << kSubBits;
  static int bucketOf(uint64_t ns);
  static double bucketMiddle(int bucket);

  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
};

}  // namespace pilot::cli
