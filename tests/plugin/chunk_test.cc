// getChunkSize (tuner ABI v6 and v7) as NCCL 2.30 and later call it: after its own chunk
// computation, with the algorithm and protocol it selected; an untouched value means "NCCL's
// chunk". Every scenario runs through every release that asks.
#include "test_support.h"

namespace fake {
namespace {

TEST(ChunkSize, FirstRuleAdmittingNcclsChoiceSetsTheChunk) {
  inChild([] {
    TempTable table(
        "allgather size=256K.. per-rank algo=ring proto=simple chunk=512K\n"
        "allreduce size=..1M algo=tree|ring channels=2 chunk=64K\n"
        "allreduce size=..1M chunk=32K\n"
        "broadcast algo=ring proto=simple\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : chunkReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2});
      ASSERT_EQ(comm.initResult(), ncclSuccess);
      const size_t ncclChunk = 128 * K;
      // 16 ranks x 1M per rank: the per-rank rule matches Ring/Simple only.
      EXPECT_EQ(comm.chunkSize(ncclFuncAllGather, 16 * M, kRing, kSimple, 8, ncclChunk), 512 * K);
      EXPECT_EQ(comm.chunkSize(ncclFuncAllGather, 16 * M, kNvls, kSimple, 8, ncclChunk), ncclChunk);
      EXPECT_EQ(comm.chunkSize(ncclFuncAllGather, 16 * 100 * K, kRing, kSimple, 8, ncclChunk),
                ncclChunk);
      // A restriction admitting Tree and Ring; anything else reaches the next rule.
      EXPECT_EQ(comm.chunkSize(ncclFuncAllReduce, 4 * K, kTree, kLL, 2, ncclChunk), 64 * K);
      EXPECT_EQ(comm.chunkSize(ncclFuncAllReduce, 4 * K, kNvls, kSimple, 2, ncclChunk), 32 * K);
      EXPECT_EQ(comm.chunkSize(ncclFuncAllReduce, 2 * M, kRing, kSimple, 2, ncclChunk), ncclChunk);
      // A matching rule without chunk= keeps NCCL's; so do out-of-range algorithm/protocol.
      EXPECT_EQ(comm.chunkSize(ncclFuncBroadcast, 4 * K, kRing, kSimple, 2, ncclChunk), ncclChunk);
      EXPECT_EQ(comm.chunkSize(ncclFuncAllReduce, 4 * K, 7, kSimple, 2, ncclChunk), ncclChunk);
      EXPECT_EQ(comm.chunkSize(ncclFuncAllReduce, 4 * K, kRing, 3, 2, ncclChunk), ncclChunk);
      EXPECT_EQ(comm.chunkSize(ncclFuncAllReduce, 4 * K, -1, -1, 2, ncclChunk), ncclChunk);
    }
  });
}

TEST(ChunkSize, DecisionAndChunkAgreeOnTheSameCall) {
  inChild([] {
    TempTable table("allreduce size=..1M algo=tree|ring channels=2 chunk=64K\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : chunkReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2});
      Decision d = comm.collInfo(allReduce(512 * K));
      ASSERT_TRUE(d.choice.algo == kTree || d.choice.algo == kRing) << toString(d.choice);
      EXPECT_EQ(d.nChannels, 2);
      EXPECT_EQ(comm.chunkSize(ncclFuncAllReduce, 512 * K, d.choice.algo, d.choice.proto,
                               d.nChannels, 1 * M),
                64 * K);
    }
  });
}

// NCCL calls getChunkSize right after getCollInfo for the same operation: the chunk must come
// from the rule that decided it, not from an earlier rule skipped for a per-call condition.
TEST(ChunkSize, FollowsTheRuleThatDecidedTheOperation) {
  inChild([] {
    TempTable table(
        "allreduce pipeops=2.. algo=ring proto=simple chunk=1M\n"
        "allreduce regbuff=1 algo=ring proto=simple chunk=512K\n"
        "allreduce algo=ring proto=simple chunk=64K\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : chunkReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2});
      struct Case {
        int pipeOps, regBuff;
        size_t chunk;
      };
      for (Case c :
           {Case{1, 0, 64 * K}, Case{2, 0, 1 * M}, Case{1, 1, 512 * K}, Case{1, 0, 64 * K}}) {
        Decision d = comm.collInfo(collCall(ncclFuncAllReduce, 8 * M, c.pipeOps, c.regBuff));
        ASSERT_EQ(d.choice, pick(kRing, kSimple));
        EXPECT_EQ(comm.chunkSize(ncclFuncAllReduce, 8 * M, d.choice.algo, d.choice.proto, 8, 4096),
                  c.chunk)
            << "pipeOps " << c.pipeOps << " regBuff " << c.regBuff;
      }
    }
  });
}

}  // namespace
}  // namespace fake
