// Kernel times in half-octave bins, with exact integer edges so a Prometheus bucket
// (le = 2^k microseconds, "value <= le") counts exactly the calls at or below its bound:
//   bin 0            t <= 1 us
//   bin 2k+1         2^k us < t <= 2^(k+1/2) us      (k = 0 .. kOctaves-1)
//   bin 2k+2         2^(k+1/2) us < t <= 2^(k+1) us
//   bin kBins-1      t > 2^kOctaves us  (about 67 s)
// Quantiles interpolate geometrically inside a bin, so p50/p99 are within a factor 2^(1/4)
// (19%) of the truth at worst, and clamped to the exact minimum and maximum.
#pragma once

#include <cstdint>

namespace pilot::metrics {

constexpr unsigned kOctaves = 26;
constexpr unsigned kBins = 2 * kOctaves + 2;

/// The bin of a time in nanoseconds (integer arithmetic only: it runs per collective).
unsigned timeBin(uint64_t ns);

/// The upper edge of bin i in microseconds (2^(i/2)); infinity for the last bin.
double binUpperMicroseconds(unsigned bin);
/// Its lower edge (0 for bin 0).
double binLowerMicroseconds(unsigned bin);

/// The q-quantile (0 < q <= 1) in microseconds of counts[kBins], clamped to [minUs, maxUs];
/// 0 when the histogram is empty.
double binQuantile(const uint64_t* counts, double q, double minUs, double maxUs);

}  // namespace pilot::metrics
