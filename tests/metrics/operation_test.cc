// The facts metrics/ reads from NCCL's strings and derives per collective: names, element
// sizes, size buckets and their labels, nccl-tests' bus bytes, the tuner's size.
#include "pilot/metrics/operation.h"

#include <gtest/gtest.h>

namespace pilot::metrics {
namespace {

TEST(Operation, ParsesNcclsNames) {
  Operation op;
  ASSERT_TRUE(parseOperation("AllReduce", &op));
  EXPECT_EQ(op, Operation::AllReduce);
  ASSERT_TRUE(parseOperation("AlltoAll", &op));
  EXPECT_EQ(op, Operation::AlltoAll);
  EXPECT_FALSE(parseOperation("allreduce", &op));  // NCCL's exact spelling only
  EXPECT_FALSE(parseOperation("SendRecv", &op));
  EXPECT_FALSE(parseOperation(nullptr, &op));
  tuner::Collective c;
  EXPECT_TRUE(tunedCollective(Operation::ReduceScatter, &c));
  EXPECT_EQ(c, tuner::Collective::ReduceScatter);
  EXPECT_FALSE(tunedCollective(Operation::Gather, &c));
}

TEST(Operation, ElementSizesOfNcclsDatatypeNames) {
  EXPECT_EQ(datatypeBytes("ncclFloat32"), 4u);
  EXPECT_EQ(datatypeBytes("ncclBfloat16"), 2u);
  EXPECT_EQ(datatypeBytes("ncclFloat8e5m2"), 1u);
  EXPECT_EQ(datatypeBytes("ncclUint64"), 8u);
  EXPECT_EQ(datatypeBytes("Unknown"), 0u);
  EXPECT_EQ(datatypeBytes(nullptr), 0u);
}

TEST(Operation, AlgorithmAndProtocolNames) {
  EXPECT_EQ(parseAlgorithmIndex("NVLS_TREE"), 5);
  EXPECT_EQ(parseAlgorithmIndex("COLLNET_DIRECT"), 2);
  EXPECT_EQ(parseAlgorithmIndex("Unknown"), kUnknownAlgorithm);
  EXPECT_EQ(parseProtocolIndex("SIMPLE"), 2);
  EXPECT_STREQ(algorithmLabel(6), "PAT");
  EXPECT_STREQ(algorithmLabel(kUnknownAlgorithm), "unknown");
  EXPECT_STREQ(protocolLabel(1), "LL128");
}

TEST(Operation, PowerOfTwoBucketsAndTheirLabels) {
  EXPECT_EQ(sizeBucket(1), 0u);
  EXPECT_EQ(sizeBucket(4095), 11u);
  EXPECT_EQ(sizeBucket(4096), 12u);
  EXPECT_EQ(sizeBucketLabel(0), "1-2B");
  EXPECT_EQ(sizeBucketLabel(9), "512B-1KB");
  EXPECT_EQ(sizeBucketLabel(12), "4-8KB");
  EXPECT_EQ(sizeBucketLabel(19), "512KB-1MB");
  EXPECT_EQ(sizeBucketLabel(22), "4-8MB");
  EXPECT_EQ(sizeBucketLabel(32), "4-8GB");
  EXPECT_EQ(sizeBucketLabel(63), "8EB-16EB");
}

TEST(Operation, BusBytesAreNcclTestsFactors) {
  EXPECT_DOUBLE_EQ(busBytes(Operation::AllReduce, 1000, 8), 1750.0);  // 2(n-1)/n
  EXPECT_DOUBLE_EQ(busBytes(Operation::AllGather, 1000, 8), 7000.0);  // B n (n-1)/n
  EXPECT_DOUBLE_EQ(busBytes(Operation::ReduceScatter, 1000, 4), 3000.0);
  EXPECT_DOUBLE_EQ(busBytes(Operation::AlltoAll, 1000, 4), 3000.0);
  EXPECT_DOUBLE_EQ(busBytes(Operation::Broadcast, 1000, 8), 1000.0);
  EXPECT_DOUBLE_EQ(busBytes(Operation::Reduce, 1000, 8), 1000.0);
  EXPECT_DOUBLE_EQ(busBytes(Operation::AllReduce, 1000, 1), 0.0);
}

TEST(Operation, TheTunerSeesTotalsForAllGatherAndReduceScatter) {
  EXPECT_EQ(tunerBytes(Operation::AllGather, 1024, 16), 16384u);
  EXPECT_EQ(tunerBytes(Operation::ReduceScatter, 1024, 16), 16384u);
  EXPECT_EQ(tunerBytes(Operation::AllReduce, 1024, 16), 1024u);
  EXPECT_EQ(tunerBytes(Operation::AllGather, UINT64_MAX / 2, 16), UINT64_MAX);
}

}  // namespace
}  // namespace pilot::metrics
