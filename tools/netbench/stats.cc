#include "netbench/stats.h"

#include <cmath>

namespace pilot::cli {

int LatencyHistogram::bucketOf(uint64_t ns) {
  constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  if (ns < kSub) return static_cast<int>(ns);  // exact below 64 ns
  const int msb = 63 - __builtin_clzll(ns);
  const int shift = msb - kSubBits;
  const uint64_t mantissa = (ns >> shift) & (kSub - 1);
  return ((shift + 1) << kSubBits) + static_cast<int>(mantissa);
}

double LatencyHistogram::bucketMiddle(int bucket) {
  constexpr int kSub = 1 << kSubBits;
  if (bucket < kSub) return bucket;
  const int shift = (bucket >> kSubBits) - 1;
  const double low = std::ldexp(static_cast<double>(kSub + (bucket & (kSub - 1))), shift);
  return low + std::ldexp(0.5, shift);
}

void LatencyHistogram::add(int64_t ns) {
  ++buckets_[bucketOf(ns < 0 ? 0 : static_cast<uint64_t>(ns))];
  ++count_;
}

double LatencyHistogram::quantileNs(double q) const {
  if (count_ == 0) return 0;
  // The smallest value with at least ceil(q * n) samples at or below it.
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[b];
    if (seen >= rank) return bucketMiddle(b);
  }
  return bucketMiddle(kBuckets - 1);
}

}  // namespace pilot::cli
