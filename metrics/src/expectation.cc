#include "pilot/metrics/expectation.h"

#include <cmath>

namespace pilot::metrics {

ExpectationCurve::ExpectationCurve(const std::vector<tuner::ExpectedTime>& points) {
  for (const tuner::ExpectedTime& p : points) {
    if (p.bytes == 0 || !(p.microseconds > 0) || !std::isfinite(p.microseconds)) continue;
    const double bytes = static_cast<double>(p.bytes), ns = p.microseconds * 1000.0;
    if (!points_.empty() && bytes <= points_.back().bytes) continue;  // keep ascending sizes
    points_.push_back({std::log2(bytes), std::log2(ns), bytes, ns});
  }
}

double ExpectationCurve::expectedNs(uint64_t bytes) const {
  if (points_.empty()) return 0.0;
  const double b = static_cast<double>(bytes);
  if (b <= points_.front().bytes) return points_.front().ns;
  if (b >= points_.back().bytes) return points_.back().ns * (b / points_.back().bytes);
  size_t lo = 0, hi = points_.size() - 1;  // points_[lo].bytes < b < points_[hi].bytes
  while (hi - lo > 1) {
    const size_t mid = (lo + hi) / 2;
    if (points_[mid].bytes <= b)
      lo = mid;
    else
      hi = mid;
  }
  const Point& p = points_[lo];
  const Point& q = points_[hi];
  const double x = std::log2(b);
  const double t = (x - p.log2Bytes) / (q.log2Bytes - p.log2Bytes);
  return std::exp2(p.log2Ns + t * (q.log2Ns - p.log2Ns));
}

}  // namespace pilot::metrics
