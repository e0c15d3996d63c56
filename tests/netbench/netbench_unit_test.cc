// netbench's pure logic: NCCL's buffer and slot sizes, how a size becomes messages, the
// payload pattern, latency percentiles, HOST:PORT parsing and NCCL's plugin name rules.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "netbench/loader.h"
#include "netbench/pattern.h"
#include "netbench/plan.h"
#include "netbench/stats.h"
#include "netbench/wire.h"

namespace pilot::cli {
namespace {

TEST(NetbenchPlan, DefaultBuffersAreNcclsAndSlotsAreAnEighth) {
  const ProtoBufferSizes b = defaultBufferSizes();
  EXPECT_EQ(b[0], 524288u);
  EXPECT_EQ(b[1], 4915200u);
  EXPECT_EQ(b[2], 4194304u);
  EXPECT_EQ(stepShape(b, Proto::LL, 1, 2).messageBytes(), 65536u);
  EXPECT_EQ(stepShape(b, Proto::LL128, 1, 2).messageBytes(), 614400u);
  EXPECT_EQ(stepShape(b, Proto::Simple, 1, 2).messageBytes(), 524288u);
  EXPECT_EQ(stepShape(b, Proto::Simple, 2, 2).messageBytes(), 1048576u);
  EXPECT_EQ(stepShape(b, Proto::LL, 2, 2).sliceSteps, 1);  // only Simple spans slots
}

TEST(NetbenchPlan, DepthIsNcclsSharedBudgetPerChannel) {
  const ProtoBufferSizes b = defaultBufferSizes();
  EXPECT_EQ(stepShape(b, Proto::Simple, 1, 1).maxDepth, 8);
  EXPECT_EQ(stepShape(b, Proto::Simple, 1, 2).maxDepth, 8);
  EXPECT_EQ(stepShape(b, Proto::Simple, 1, 4).maxDepth, 4);
  EXPECT_EQ(stepShape(b, Proto::Simple, 1, 64).maxDepth, 1);
  EXPECT_EQ(stepShape(b, Proto::Simple, 2, 2).messagesInFlight(), 4);
  EXPECT_EQ(stepShape(b, Proto::Simple, 1, 3).messagesInFlight(), 5);
}

TEST(NetbenchPlan, EnvironmentOverridesLikeNccl) {
  ::setenv("NCCL_BUFFSIZE", "8388608", 1);
  ::setenv("NCCL_LL_BUFFSIZE", "-2", 1);
  auto b = bufferSizesFromEnvironment();
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ((*b)[2], 8388608u);
  EXPECT_EQ((*b)[0], 524288u);
  ::setenv("NCCL_BUFFSIZE", "1000", 1);
  EXPECT_FALSE(bufferSizesFromEnvironment().ok());
  ::unsetenv("NCCL_BUFFSIZE");
  ::unsetenv("NCCL_LL_BUFFSIZE");
}

TEST(NetbenchPlan, SizeSplitsOverChannelsThenIntoSlots) {
  const SizePlan plan(1048576 * 3 + 1, 2, 524288, 1, 2);
  EXPECT_EQ(plan.partBytes(0), 1572865u);
  EXPECT_EQ(plan.partBytes(1), 1572864u);
  EXPECT_EQ(plan.messagesPerIteration(0), 4u);  // 3 x 512K + 1 byte
  EXPECT_EQ(plan.messagesPerIteration(1), 3u);
  EXPECT_EQ(plan.totalMessages(0), 12u);
  const SizePlan::Message last = plan.message(0, 3);
  EXPECT_EQ(last.bytes, 1u);
  EXPECT_EQ(last.offset, 1572864u);
  EXPECT_FALSE(last.timed);  // iteration 0 is the warmup
  const SizePlan::Message timed = plan.message(1, 3);
  EXPECT_EQ(timed.iteration, 1u);
  EXPECT_TRUE(timed.timed);
  EXPECT_EQ(plan.timedMessages(), 14u);
  EXPECT_EQ(plan.timedBytes(), 2u * (1048576 * 3 + 1));
}

TEST(NetbenchPlan, EmptyPartsSendZeroByteMessages) {
  const SizePlan plan(1, 3, 65536, 0, 1);
  EXPECT_EQ(plan.messagesPerIteration(2), 1u);
  EXPECT_EQ(plan.message(2, 0).bytes, 0u);
  EXPECT_EQ(plan.message(0, 0).bytes, 1u);
  const SizePlan zero(0, 2, 65536, 0, 4);
  EXPECT_EQ(zero.timedMessages(), 8u);
  EXPECT_EQ(zero.timedBytes(), 0u);
}

TEST(NetbenchPlan, MinBytesRaisesIterations) {
  EXPECT_EQ(iterationsFor(4096, 20, 0), 20u);
  EXPECT_EQ(iterationsFor(4096, 20, uint64_t{1} << 30), 262144u);
  EXPECT_EQ(iterationsFor(3, 1, 10), 4u);
  EXPECT_EQ(iterationsFor(0, 7, uint64_t{1} << 30), 7u);
  EXPECT_EQ(iterationsFor(uint64_t{1} << 30, 20, 1), 20u);
}

TEST(NetbenchPattern, RoundTripsAndNamesTheFirstBadByte) {
  std::vector<unsigned char> buffer(70001);
  const uint64_t seed = patternSeed(1, 2, 3);
  fillPattern(buffer.data() + 1, 70000, seed, 524288);  // unaligned data, offset in the part
  EXPECT_FALSE(checkPattern(buffer.data() + 1, 70000, seed, 524288).found);
  buffer[1 + 4242] ^= 0x10;
  buffer[1 + 5000] ^= 0x01;
  const PatternMismatch bad = checkPattern(buffer.data() + 1, 70000, seed, 524288);
  ASSERT_TRUE(bad.found);
  EXPECT_EQ(bad.offset, 4242u);
  EXPECT_EQ(bad.expected ^ bad.actual, 0x10);
}

TEST(NetbenchPattern, TailBytesAndStaleDataAreCaught) {
  std::vector<unsigned char> buffer(13);
  fillPattern(buffer.data(), 13, patternSeed(0, 0, 0), 0);
  buffer[12] ^= 0xff;
  EXPECT_EQ(checkPattern(buffer.data(), 13, patternSeed(0, 0, 0), 0).offset, 12u);
  fillPattern(buffer.data(), 13, patternSeed(0, 0, 0), 0);
  EXPECT_TRUE(checkPattern(buffer.data(), 13, patternSeed(0, 0, 1), 0).found);  // iteration
  EXPECT_TRUE(checkPattern(buffer.data(), 13, patternSeed(0, 1, 0), 0).found);  // channel
  EXPECT_TRUE(checkPattern(buffer.data(), 13, patternSeed(1, 0, 0), 0).found);  // size
  EXPECT_TRUE(checkPattern(buffer.data(), 13, patternSeed(0, 0, 0), 8).found);  // offset
  EXPECT_FALSE(checkPattern(buffer.data(), 0, patternSeed(0, 0, 0), 0).found);
}

TEST(NetbenchStats, PercentilesWithinABucket) {
  LatencyHistogram h;
  EXPECT_EQ(h.quantileNs(0.5), 0);
  for (int i = 1; i <= 1000; ++i) h.add(i * 1000);  // 1..1000 us
  EXPECT_EQ(h.count(), 1000u);
  EXPECT_NEAR(h.quantileNs(0.50), 500000, 500000 * 0.02);
  EXPECT_NEAR(h.quantileNs(0.99), 990000, 990000 * 0.02);
  LatencyHistogram small;
  small.add(7);
  EXPECT_EQ(small.quantileNs(0.99), 7);
}

TEST(NetbenchWire, HostPort) {
  auto a = parseHostPort("node1:5000");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "node1");
  EXPECT_EQ(a->second, 5000);
  auto v6 = parseHostPort("[::1]:7");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->first, "::1");
  EXPECT_FALSE(parseHostPort("node1").ok());
  EXPECT_FALSE(parseHostPort("node1:0").ok());
  EXPECT_FALSE(parseHostPort("node1:70000").ok());
}

TEST(NetbenchLoader, NcclNameRules) {
  const std::string dir = PILOT_NETBENCH_PLUGIN_DIR;
  auto byPath = loadNetPlugin(dir + "/libnccl-net-loopback-v6.so");
  ASSERT_TRUE(byPath.ok()) << byPath.error();
  EXPECT_EQ(byPath->abis, std::vector<int>{6});
  EXPECT_EQ(byPath->newestAbi(), 6);
  // A comma list: the first name that loads wins, "none" is skipped.
  auto list = loadNetPlugin("none, /nonexistent/libx.so, " + dir + "/libnccl-net-loopback-v12.so");
  ASSERT_TRUE(list.ok()) << list.error();
  EXPECT_EQ(list->newestAbi(), 12);
  EXPECT_NE(list->symbol(12), nullptr);
  EXPECT_EQ(list->symbol(11), nullptr);
  auto missing = loadNetPlugin("surely-not-there");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("libnccl-net-surely-not-there.so"), std::string::npos);
  EXPECT_EQ(missing.error().find('\n'), std::string::npos);  // one line
}

}  // namespace
}  // namespace pilot::cli
