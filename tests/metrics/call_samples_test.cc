// CallSamples (metrics/call_samples.h): exact-size keys, 2% bins around the first call, the
// window's edges, the key limit, and concurrent recording.
#include "pilot/metrics/call_samples.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

namespace pilot::metrics {
namespace {

SampleKey key(uint64_t bytes, uint8_t algo = 1, uint8_t proto = 2, uint8_t channels = 4) {
  SampleKey k;
  k.op = Operation::AllReduce;
  k.messageBytes = bytes;
  k.algorithm = algo;
  k.protocol = proto;
  k.channels = channels;
  return k;
}

TEST(SampleBin, BinsAreTwoPercentWideWithExactEdges) {
  EXPECT_EQ(sampleBin(0), 0);
  EXPECT_EQ(sampleBin(1), 0);
  for (uint64_t ns : {1000ull, 49900ull, 123456789ull}) {
    const int k = sampleBin(ns);
    EXPECT_LE(std::pow(kSampleBinRatio, k), static_cast<double>(ns) * (1 + 1e-12)) << ns;
    EXPECT_GT(std::pow(kSampleBinRatio, k + 1), static_cast<double>(ns)) << ns;
  }
  // 1% apart may share a bin; 2.1% apart never do.
  EXPECT_NE(sampleBin(100000), sampleBin(102100));
}

TEST(CallSamples, ExactSizesAndConfigurationsAreKeysOfTheirOwn) {
  CallSamples s;
  const unsigned a = s.slotOf(key(1048576)), b = s.slotOf(key(1048580));
  const unsigned c = s.slotOf(key(1048576, 0)), d = s.slotOf(key(1048576, 1, 2, 8));
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  EXPECT_EQ(s.slotOf(key(1048576)), a);
  for (int i = 0; i < 10; ++i) s.record(a, 50000 + 100 * i);
  s.record(b, 7000);
  const auto views = s.snapshot();
  ASSERT_EQ(views.size(), 2u);  // keys without calls are left out
  for (const auto& v : views) {
    if (v.key.messageBytes != 1048576) continue;
    EXPECT_EQ(v.calls, 10u);
    EXPECT_EQ(v.minNs, 50000u);
    EXPECT_EQ(v.maxNs, 50900u);
    EXPECT_EQ(v.sumNs, 504500u);
    EXPECT_EQ(v.key.algorithm, 1);
    EXPECT_EQ(v.key.protocol, 2);
    EXPECT_EQ(v.key.channels, 4);
    uint64_t total = 0;
    for (size_t i = 0; i < v.counts.size(); ++i) {
      if (v.counts[i] == 0) continue;
      total += v.counts[i];
      const int bin = v.firstBin + static_cast<int>(i);
      EXPECT_GE(bin, sampleBin(50000));
      EXPECT_LE(bin, sampleBin(50900));
    }
    EXPECT_EQ(total, 10u);
  }
}

TEST(CallSamples, TimesBeyondTheWindowCountInItsEdgeBins) {
  CallSamples s;
  const unsigned a = s.slotOf(key(4096));
  s.record(a, 100000);    // centres the window
  s.record(a, 1000);      // 100x faster: past the lower edge
  s.record(a, 10000000);  // 100x slower: past the upper edge
  const auto v = s.snapshot().at(0);
  EXPECT_EQ(v.calls, 3u);
  EXPECT_EQ(v.counts.front(), 1u);
  EXPECT_EQ(v.counts.back(), 1u);
  EXPECT_EQ(v.minNs, 1000u);
  EXPECT_EQ(v.maxNs, 10000000u);
  EXPECT_EQ(v.firstBin + static_cast<int>(CallSamples::kWindowBins / 2), sampleBin(100000));
}

TEST(CallSamples, KeysPastTheLimitAreCountedAsOverflow) {
  CallSamples s;
  for (uint64_t i = 0; i < CallSamples::kMaxKeys; ++i) {
    ASSERT_NE(s.slotOf(key(1024 + i)), CallSamples::kNoKey) << i;
  }
  const unsigned none = s.slotOf(key(999999));
  EXPECT_EQ(none, CallSamples::kNoKey);
  s.record(none, 5000);
  EXPECT_EQ(s.overflow(), 1u);
  EXPECT_EQ(s.slotOf(key(uint64_t{1} << 45)), CallSamples::kNoKey) << "too large to pack";
}

TEST(CallSamples, ConcurrentRecordsAllCount) {
  CallSamples s;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&s, t] {
      for (int i = 0; i < 5000; ++i) s.record(s.slotOf(key(64 + (i % 3))), 20000 + t * 10 + i % 7);
    });
  }
  for (auto& th : threads) th.join();
  uint64_t calls = 0;
  for (const auto& v : s.snapshot()) calls += v.calls;
  EXPECT_EQ(calls, 20000u);
  EXPECT_EQ(s.snapshot().size(), 3u);
}

}  // namespace
}  // namespace pilot::metrics
