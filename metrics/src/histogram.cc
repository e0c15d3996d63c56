#include "pilot/metrics/histogram.h"

#include <cmath>
#include <limits>

namespace pilot::metrics {
namespace {

/// floor(1000 * 2^(k + 1/2)) ns: above it a time is in the upper half of octave k. A constant
/// table, so the first collective pays no initialization (histogram_test checks the formula).
constexpr uint64_t kHalfEdgeNs[kOctaves] = {
    1414,       2828,       5656,        11313,       22627,       45254,     90509,
    181019,     362038,     724077,      1448154,     2896309,     5792618,   11585237,
    23170475,   46340950,   92681900,    185363800,   370727600,   741455200, 1482910400,
    2965820800, 5931641601, 11863283203, 23726566406, 47453132812,
};

}  // namespace

unsigned timeBin(uint64_t ns) {
  if (ns <= 1000) return 0;
  const uint64_t q = (ns - 1) / 1000;  // q >= 2^k exactly when ns > 1000 * 2^k
  const unsigned k = 63 - static_cast<unsigned>(__builtin_clzll(q));
  if (k >= kOctaves) return kBins - 1;
  return 1 + 2 * k + (ns > kHalfEdgeNs[k] ? 1 : 0);
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
