// A rule's calibrated time as a function of size, from its `expect=SIZE:US|...` points
// (tuner::Rule::expected, written by `nccl-pilot fit`). Between two points the time is
// interpolated linearly in log(size)-log(time); below the first point the time holds (the
// latency floor), above the last one the bandwidth holds (time grows with size). Both ends err
// towards a longer expected time, so they can hide drift but never invent it.
#pragma once

#include <cstdint>
#include <vector>

#include "pilot/tuner/table.h"

namespace pilot::metrics {

class ExpectationCurve {
 public:
  ExpectationCurve() = default;
  /// Points with a positive size and time, ascending by size (others are dropped).
  explicit ExpectationCurve(const std::vector<tuner::ExpectedTime>& points);

  bool empty() const { return points_.empty(); }
  /// Expected nanoseconds at `bytes` (on the rule's size axis); 0 when empty. No allocation.
  double expectedNs(uint64_t bytes) const;

 private:
  struct Point {
    double log2Bytes, log2Ns;
    double bytes, ns;
  };
  std::vector<Point> points_;
};

}  // namespace pilot::metrics
