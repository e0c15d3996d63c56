// formatRule: parse -> format -> parse gives the same rule, and the text is the canonical form.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>

#include "pilot/tuner/table.h"
#include "test_support.h"

namespace pilot::tuner {
namespace {

using test::expectSameRule;
using test::parseOne;

TEST(TableFormatRoundTrip, ParsedRules) {
  const char* lines[] = {
      "allreduce",
      "any",
      "allreduce size=0..64K nodes=2 algo=tree proto=ll",
      "allreduce size=64K..8M nodes=2 proto=ll128",
      "allreduce size=8M.. nodes=2 algo=ring proto=simple",
      "allgather size=0..256K per-rank algo=ring proto=ll128",
      "allgather size=256K.. per-rank algo=ring proto=simple chunk=512K",
      "reducescatter,0,131071,ring,ll128,-1,2,-1",
      "reducescatter,131072,-1,ring,simple,16,2,-1",
      "allreduce,0,65536,tree,simple,2,1,-1,-1,1",
      "allreduce,65537,1048576,ring,simple,4,4,32,1,0",
      "allreduce,1048577,4294967295,ring,ll128,-1,-1,-1,4,-1",
      "allreduce,-1,-1,-1,-1,-1,-1,-1",
      "any,0,65536,ring,simple,-1,-1,-1",
      "broadcast|reduce size=1..1 algo=collnet_direct|collnet_chain|pat",
      "allreduce|allgather|reducescatter size=0 algo=nvls|nvls_tree proto=ll|ll128|simple",
      "allreduce size=..1535 ranks=8..16 rpn=4.. pipeops=..3 regbuff=0 channels=64 chunk=1",
      "allreduce size=18446744073709551615",
      "allreduce size=18446744073709551614..",
      "allreduce size=1T..2T nodes=1..1 ranks=1 rpn=1 pipeops=1 regbuff=1 chunk=1G",
      "allreduce size=1536K..1537K channels=1",
      "all_reduce SIZE=4KiB..16MiB ALGO=Ring|Tree",
      "reduce_scatter per-rank",
      "allreduce fabric=ib nccl=2.28",
      "allreduce fabric=ROCE|Ethernet nccl=2.28-2.30 algo=tree",
      "allreduce nccl=2.28.3-2.30.7 fabric=*",
      "allreduce nccl=2.29- fabric=infiniband",
      "allreduce nccl=-2.27",
      "allreduce nccl=2.28.9",
      "allreduce nccl=2.28.0",
      "allreduce size=64K..1M algo=tree expect=64K:12.5|128K:14.25|1M:0.1",
      "allgather size=..256K per-rank expect=4K:3.3333333333333335|256K:1e+11",
  };
  for (const char* line : lines) {
    Rule first = parseOne(line);
    std::string text = formatRule(first);
    Rule second = parseOne(text);
    expectSameRule(first, second, std::string(line) + "  ->  " + text);
    // Formatting is canonical: a second round gives the same text.
    EXPECT_EQ(formatRule(second), text);
  }
}

TEST(TableFormatRoundTrip, CanonicalTextOfFabricNcclAndExpect) {
  EXPECT_EQ(formatRule(parseOne("allreduce nccl=2.28 fabric=IB|infiniband")),
            "allreduce fabric=ib nccl=2.28");
  EXPECT_EQ(formatRule(parseOne("allreduce nccl=2.28-2.30.7")), "allreduce nccl=2.28-2.30.7");
  EXPECT_EQ(formatRule(parseOne("allreduce nccl=2.28.9")), "allreduce nccl=2.28.9");
  EXPECT_EQ(formatRule(parseOne("allreduce nccl=2.29-")), "allreduce nccl=2.29-");
  EXPECT_EQ(formatRule(parseOne("allreduce expect=65536:12.50|1048576:80")),
            "allreduce expect=64K:12.5|1M:80");
}

TEST(TableFormatRoundTrip, CanonicalText) {
  EXPECT_EQ(formatRule(parseOne("allreduce size=0..64K nodes=2 algo=tree proto=ll")),
            "allreduce size=..64K algo=tree proto=ll nodes=2");
  EXPECT_EQ(
      formatRule(parseOne("allgather size=256K.. per-rank algo=ring proto=simple chunk=512K")),
      "allgather size=256K.. per-rank algo=ring proto=simple chunk=512K");
  EXPECT_EQ(formatRule(parseOne("reducescatter,131072,-1,ring,simple,16,2,-1")),
            "reducescatter size=128K.. algo=ring proto=simple nodes=2 channels=16");
  EXPECT_EQ(formatRule(parseOne("allreduce,0,65536,tree,simple,2,1,-1,-1,1")),
            "allreduce size=..64K algo=tree proto=simple nodes=1 regbuff=1 channels=2");
  EXPECT_EQ(formatRule(parseOne("any")), "any");
  EXPECT_EQ(formatRule(parseOne("allgather|allreduce algo=tree|ring")),
            "allgather|allreduce algo=tree|ring");
  EXPECT_EQ(formatRule(parseOne("allreduce size=0")), "allreduce size=0");
}

/// Random valid rules, built directly (not through the parser), survive format -> parse.
TEST(TableFormatRoundTrip, RandomRules) {
  std::mt19937_64 rng(20240611);
  auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
  auto value = [&](bool bytes) -> uint64_t {
    switch (pick(5)) {
      case 0:
        return 0;
      case 1:
        return pick(100);
      case 2:
        return bytes ? pick(1u << 20) << (10 * pick(4)) : pick(1024);
      case 3:
        return kUnbounded - pick(3);
      default:
        return rng() >> pick(64);
    }
  };
  auto range = [&](bool bytes) {
    Range r;
    switch (pick(4)) {
      case 0:
        return r;  // any
      case 1:
        r.lo = r.hi = value(bytes);
        return r;
      default: {
        uint64_t a = value(bytes), b = value(bytes);
        r.lo = std::min(a, b);
        r.hi = std::max(a, b);
        if (pick(4) == 0) r.lo = 0;
        if (pick(4) == 0) r.hi = kUnbounded;
        return r;
      }
    }
  };
  for (int i = 0; i < 5000; ++i) {
    Rule r;
    r.collectives = static_cast<CollMask>(1 + pick(kAllCollectives));
    r.size = range(true);
    r.perRankSize = pick(3) == 0;
    r.nodes = range(false);
    r.ranks = range(false);
    r.ranksPerNode = range(false);
    r.pipeOps = range(false);
    r.regBuff = static_cast<int>(pick(3)) - 1;
    r.algorithms = static_cast<AlgoMask>(pick(1u << kNumAlgorithms));
    r.protocols = static_cast<ProtoMask>(pick(1u << kNumProtocols));
    r.channels = pick(2) ? 0 : static_cast<int>(1 + pick(kMaxChannels));
    r.chunkBytes = pick(2) ? 0 : 1 + pick(kMaxChunkBytes);
    std::string text = formatRule(r);
    expectSameRule(r, parseOne(text), text);
    if (HasFailure()) break;  // one bad case is enough to read
  }
}

}  // namespace
}  // namespace pilot::tuner
