// Half-octave bins with exact integer edges (a Prometheus le bound counts exactly the calls at
// or below it), and quantiles from them.
#include "pilot/metrics/histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace pilot::metrics {
namespace {

TEST(Histogram, EdgesAreInclusiveAbove) {
  EXPECT_EQ(timeBin(0), 0u);
  EXPECT_EQ(timeBin(1000), 0u);  // 1 us is <= 1 us
  EXPECT_EQ(timeBin(1001), 1u);
  EXPECT_EQ(timeBin(1414), 1u);  // <= sqrt(2) us
  EXPECT_EQ(timeBin(1415), 2u);
  EXPECT_EQ(timeBin(2000), 2u);  // <= 2 us
  EXPECT_EQ(timeBin(2001), 3u);
  EXPECT_EQ(timeBin(128'000), 14u);
  EXPECT_EQ(timeBin(128'001), 15u);
  EXPECT_EQ(timeBin(1000ull << kOctaves), kBins - 2);
  EXPECT_EQ(timeBin((1000ull << kOctaves) + 1), kBins - 1);
  EXPECT_EQ(timeBin(UINT64_MAX), kBins - 1);
}

TEST(Histogram, HalfOctaveEdgesAreOneThousandTimesPowersOfRootTwo) {
  for (unsigned k = 0; k < kOctaves; ++k) {
    const auto edge = static_cast<uint64_t>(std::floor(1000.0 * std::ldexp(std::sqrt(2.0), k)));
    const uint64_t octave = 1000ull << k;
    EXPECT_EQ(timeBin(edge), 1 + 2 * k) << k;  // the edge itself is the lower half's
    EXPECT_EQ(timeBin(edge + 1), 2 + 2 * k) << k;
    EXPECT_EQ(timeBin(octave + 1), 1 + 2 * k) << k;
  }
}

TEST(Histogram, EveryTimeLiesWithinItsBinsEdges) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t ns = rng() >> (rng() % 64);
    const unsigned b = timeBin(ns);
    const double us = static_cast<double>(ns) / 1000.0;
    ASSERT_LE(us, binUpperMicroseconds(b) * (1 + 1e-12)) << ns;
    if (b > 0) {
      ASSERT_GT(us, binLowerMicroseconds(b) * (1 - 1e-12)) << ns;
    }
  }
}

TEST(Histogram, QuantilesInterpolateAndClamp) {
  uint64_t counts[kBins] = {};
  EXPECT_EQ(binQuantile(counts, 0.5, 0, 0), 0.0);
  counts[timeBin(100'000)] = 1;
  EXPECT_DOUBLE_EQ(binQuantile(counts, 0.5, 100, 100), 100.0);  // min == max: exact
  for (int i = 0; i < 99; ++i) ++counts[timeBin(10'000)];
  const double p50 = binQuantile(counts, 0.5, 10, 100);
  EXPECT_GT(p50, 10.0 / std::sqrt(std::sqrt(2.0)) * 0.999);
  EXPECT_LE(p50, 11.32);
  EXPECT_GT(binQuantile(counts, 0.999, 10, 100), 90.0);
}

}  // namespace
}  // namespace pilot::metrics
