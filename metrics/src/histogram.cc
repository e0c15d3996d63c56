#include "pilot/metrics/histogram.h"

#include <cmath>
#include <limits>

namespace pilot::metrics {
namespace {

/// floor(1000 * 2^(k + 1/2)) ns: above it a time is in the upper half of octave k.
struct HalfEdges {
  uint64_t ns[kOctaves];
  HalfEdges() {
    for (unsigned k = 0; k < kOctaves; ++k) {
      ns[k] = static_cast<uint64_t>(std::floor(1000.0 * std::ldexp(std::sqrt(2.0), k)));
    }
  }
};

const HalfEdges& halfEdges() {
  static const HalfEdges edges;
  return edges;
}

}  // namespace

unsigned timeBin(uint64_t ns) {
  if (ns <= 1000) return 0;
  const uint64_t q = (ns - 1) / 1000;  // q >= 2^k exactly when ns > 1000 * 2^k
  const unsigned k = 63 - static_cast<unsigned>(__builtin_clzll(q));
  if (k >= kOctaves) return kBins - 1;
  return 1 + 2 * k + (ns > halfEdges().ns[k] ? 1 : 0);
}

double binUpperMicroseconds(unsigned bin) {
  if (bin >= kBins - 1) return std::numeric_limits<double>::infinity();
  return std::exp2(static_cast<double>(bin) / 2.0);
}

double binLowerMicroseconds(unsigned bin) {
  if (bin == 0) return 0.0;
  return std::exp2(static_cast<double>(bin - 1) / 2.0);
}

double binQuantile(const uint64_t* counts, double q, double minUs, double maxUs) {
  uint64_t total = 0;
  for (unsigned i = 0; i < kBins; ++i) total += counts[i];
  if (total == 0) return 0.0;
  const double rank = q * static_cast<double>(total);
  double seen = 0;
  double value = maxUs;
  for (unsigned i = 0; i < kBins; ++i) {
    if (counts[i] == 0) continue;
    const double next = seen + static_cast<double>(counts[i]);
    if (next >= rank) {
      double lo = binLowerMicroseconds(i), hi = binUpperMicroseconds(i);
      if (lo < minUs) lo = minUs;
      if (!(hi <= maxUs)) hi = maxUs;
      const double within = (rank - seen) / static_cast<double>(counts[i]);
      value = lo > 0 && hi > lo ? lo * std::pow(hi / lo, within) : lo + (hi - lo) * within;
      break;
    }
    seen = next;
  }
  if (value < minUs) value = minUs;
  if (value > maxUs) value = maxUs;
  return value;
}

}  // namespace pilot::metrics
