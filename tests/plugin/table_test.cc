// Table semantics through the ABI, asserted on the algorithm/protocol NCCL finally runs:
// select / restrict / channels-only rules, the NCCL example-tuner CSV lines, the shipped
// example table, and ranks-per-node from v5+'s NVL-domain info.
#include "test_support.h"

namespace fake {
namespace {

const char* const kNative =
    "allreduce size=0..64K algo=ring proto=ll\n"  // select
    "allreduce size=64K..8M proto=ll128\n"        // restrict: NCCL picks the algorithm
    "allreduce size=8M.. algo=ring proto=simple channels=16\n"
    "allgather size=..1M channels=4\n";  // channels only

TEST(TableSemantics, SelectRestrictAndChannelsOnlyOnCostTableReleases) {
  inChild([] {
    TempTable table(kNative);
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : costTableReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2});
      ASSERT_EQ(comm.initResult(), ncclSuccess);
      for (size_t bytes : {size_t{0}, 1 * K, 64 * K}) {
        Decision d = comm.collInfo(allReduce(bytes));
        EXPECT_EQ(d.choice, pick(kRing, kLL)) << bytes;
        EXPECT_EQ(d.nChannels, 0) << "channels stay NCCL's unless the rule sets them";
      }
      for (size_t bytes : {64 * K + 1, 1 * M, 8 * M}) {
        Call call = allReduce(bytes);
        Decision d = comm.collInfo(call);
        Choice within = selectWithin(d.before, rel.startMin, kAllAlgos, 1u << kLL128);
        EXPECT_EQ(d.choice, within) << bytes;
        EXPECT_EQ(d.choice.proto, kLL128);
        if (bytes >= 1 * M) {
          EXPECT_NE(comm.ncclDefault(call).proto, kLL128) << "the restriction must matter";
        }
        EXPECT_EQ(d.nChannels, 0);
      }
      Decision big = comm.collInfo(allReduce(8 * M + 1));
      EXPECT_EQ(big.choice, pick(kRing, kSimple));
      EXPECT_EQ(big.nChannels, 16);
      Call ag = collCall(ncclFuncAllGather, 4 * K);
      Decision agd = comm.collInfo(ag);
      EXPECT_EQ(agd.choice, comm.ncclDefault(ag));
      EXPECT_EQ(agd.nChannels, 4);
      for (int i = 0; i < agd.before.size(); ++i)
        EXPECT_EQ(agd.after.cells[i], agd.before.cells[i]);
      EXPECT_FALSE(comm.collInfo(collCall(ncclFuncAllGather, 2 * M)).changed);
      EXPECT_FALSE(comm.collInfo(collCall(ncclFuncBroadcast, 4 * K)).changed);
    }
  });
}

TEST(TableSemantics, V2SelectsDirectlyAndLeavesRestrictionsToNccl) {
  inChild([] {
    TempTable table(kNative);
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    FakeComm comm(m, release("2.21"), {16, 2});
    ASSERT_EQ(comm.initResult(), ncclSuccess);
    EXPECT_EQ(comm.collInfo(allReduce(1 * K)).choice, pick(kRing, kLL));
    // v2 cannot say "LL128, your choice of algorithm": NCCL 2.21 keeps its own pick.
    Decision mid = comm.collInfo(allReduce(1 * M));
    EXPECT_FALSE(mid.changed);
    EXPECT_EQ(mid.choice, comm.ncclDefault(allReduce(1 * M)));
    Decision big = comm.collInfo(allReduce(16 * M));
    EXPECT_EQ(big.choice, pick(kRing, kSimple));
    EXPECT_EQ(big.nChannels, 16);
    Decision ag = comm.collInfo(collCall(ncclFuncAllGather, 4 * K));
    EXPECT_EQ(ag.choice, comm.ncclDefault(collCall(ncclFuncAllGather, 4 * K)));
    EXPECT_EQ(ag.nChannels, 4);
  });
}

// Lines in the form of NCCL's example nccl_tuner.conf, read through NCCL_TUNER_CONFIG_FILE as an
// example-tuner user would.
const char* const kExampleCsv =
    "# collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,"
    "regBuff\n"
    "allreduce,0,65536,tree,ll,-1,2,-1\n"
    "allreduce,65537,1048576,ring,ll128,-1,2,16\n"
    "allreduce,65537,1048576,tree,simple,4,2,-1\n"
    "allreduce,1048577,-1,ring,simple,24,-1,-1\n"
    "allgather,0,32768,ring,ll,-1,-1,-1,1\n"
    "allgather,0,-1,ring,simple,-1,-1,-1\n"
    "reducescatter,0,-1,tree,simple,-1,-1,-1\n"  // Tree is IGNORE for ReduceScatter
    "reducescatter,0,-1,ring,ll128,8,-1,-1\n"
    "broadcast,0,-1,ring,simple,-1,1,-1\n"
    "allreduce,0,65536,ring,ll,-1,1,8,-1,1\n";

TEST(TableSemantics, ExampleTunerCsvLines) {
  inChild([] {
    TempTable table(kExampleCsv);
    setEnv("NCCL_TUNER_CONFIG_FILE", table.path());
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : allReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm two(m, rel, {16, 2});
      ASSERT_EQ(two.initResult(), ncclSuccess);
      // max_bytes is inclusive; Tree/LL differs from NCCL's own Tree/LL128 at 64K.
      EXPECT_EQ(two.collInfo(allReduce(65536)).choice, pick(kTree, kLL));
      EXPECT_EQ(two.collInfo(allReduce(65537)).choice, pick(kRing, kLL128));
      EXPECT_EQ(two.collInfo(allReduce(1048576)).choice, pick(kRing, kLL128));
      Decision big = two.collInfo(allReduce(1048577));
      EXPECT_EQ(big.choice, pick(kRing, kSimple));
      EXPECT_EQ(big.nChannels, 24);
      EXPECT_EQ(two.collInfo(collCall(ncclFuncAllGather, 4096, 1)).choice, pick(kRing, kLL));
      EXPECT_EQ(two.collInfo(collCall(ncclFuncAllGather, 4096, 2)).choice, pick(kRing, kSimple));
      EXPECT_EQ(two.collInfo(collCall(ncclFuncAllGather, 32769, 1)).choice, pick(kRing, kSimple));
      Decision rs = two.collInfo(collCall(ncclFuncReduceScatter, 1 * M));
      EXPECT_EQ(rs.choice, pick(kRing, kLL128)) << "the Tree line must fall through";
      EXPECT_EQ(rs.nChannels, 8);
      EXPECT_FALSE(two.collInfo(collCall(ncclFuncBroadcast, 1 * K)).changed) << "nNodes=1 line";

      FakeComm eight(m, rel, {8, 2});  // nRanks=16 lines do not apply
      Decision d = eight.collInfo(allReduce(65537));
      EXPECT_EQ(d.choice, pick(kTree, kSimple));
      EXPECT_EQ(d.nChannels, 4);

      FakeComm one(m, rel, {8, 1});
      EXPECT_EQ(one.collInfo(collCall(ncclFuncBroadcast, 1 * K)).choice, pick(kRing, kSimple));
      // regBuff=1 lines need an ABI that passes regBuff (v4+) and a registered buffer.
      Decision reg = one.collInfo(collCall(ncclFuncAllReduce, 1 * K, 1, /*regBuff=*/1));
      EXPECT_EQ(reg.choice, rel.abi >= 4 ? pick(kRing, kLL) : one.ncclDefault(allReduce(1 * K)));
      EXPECT_FALSE(one.collInfo(collCall(ncclFuncAllReduce, 1 * K, 1, 0)).changed);
    }
  });
}

TEST(TableSemantics, ShippedExampleTableDoesWhatItsCommentsSay) {
  inChild([] {
    setEnv("NCCL_PILOT_TUNER_TABLE", PILOT_EXAMPLE_TABLE);
    FAKE_LOAD(m, kTunerModule);
    for (const char* name : {"2.28", "2.30", "2.32"}) {
      SCOPED_TRACE(name);
      FakeComm comm(m, release(name), {16, 2});
      ASSERT_EQ(comm.initResult(), ncclSuccess);
      EXPECT_EQ(comm.collInfo(allReduce(64 * K)).choice, pick(kTree, kLL));
      EXPECT_EQ(comm.collInfo(allReduce(1 * M)).choice.proto, kLL128);
      EXPECT_EQ(comm.collInfo(allReduce(64 * M)).choice, pick(kRing, kSimple));
      // allgather rules are per rank: 16 ranks x 64K and 16 ranks x 1M.
      EXPECT_EQ(comm.collInfo(collCall(ncclFuncAllGather, 16 * 64 * K)).choice,
                pick(kRing, kLL128));
      EXPECT_EQ(comm.collInfo(collCall(ncclFuncAllGather, 16 * M)).choice, pick(kRing, kSimple));
      EXPECT_EQ(comm.chunkSize(ncclFuncAllGather, 16 * M, kRing, kSimple, 8, 128 * K),
                release(name).abi >= 6 ? 512 * K : 128 * K);
      EXPECT_EQ(comm.collInfo(collCall(ncclFuncReduceScatter, 64 * K)).choice, pick(kRing, kLL128));
      Decision rs = comm.collInfo(collCall(ncclFuncReduceScatter, 1 * M));
      EXPECT_EQ(rs.choice, pick(kRing, kSimple));
      EXPECT_EQ(rs.nChannels, 16);
    }
  });
}

TEST(TableSemantics, RanksPerNodeFromNvlDomainInfoOrEvenSplit) {
  inChild([] {
    TempTable table("allreduce rpn=8 algo=ring proto=simple\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    const Choice ringSimple = pick(kRing, kSimple);
    EXPECT_EQ(FakeComm(m, release("2.28"), {16, 2}).collInfo(allReduce(4 * K)).choice, ringSimple);
    EXPECT_EQ(FakeComm(m, release("2.30"), {16, 2}).collInfo(allReduce(4 * K)).choice, ringSimple);
    EXPECT_EQ(FakeComm(m, release("2.32"), {16, 2}).collInfo(allReduce(4 * K)).choice, ringSimple);
    EXPECT_EQ(FakeComm(m, release("2.24"), {16, 2}).collInfo(allReduce(4 * K)).choice, ringSimple);
    // Uneven nodes (4 + 12 ranks, as NCCL's min/max local ranks say): rpn rules never match.
    EXPECT_FALSE(FakeComm(m, release("2.28"), {16, 2, 4, 12}).collInfo(allReduce(4 * K)).changed);
    EXPECT_FALSE(FakeComm(m, release("2.32"), {16, 2, 4, 12}).collInfo(allReduce(4 * K)).changed);
    EXPECT_FALSE(FakeComm(m, release("2.24"), {12, 2}).collInfo(allReduce(4 * K)).changed);
    EXPECT_FALSE(FakeComm(m, release("2.24"), {15, 2}).collInfo(allReduce(4 * K)).changed);
    // A multi-node NVL domain (one domain over 2 nodes) says nothing about ranks per node:
    // 16 ranks on 2 nodes still have 8 per node.
    Shape mnnvl{16, 2, 16, 16, /*nvlDomains=*/1};
    EXPECT_EQ(FakeComm(m, release("2.28"), mnnvl).collInfo(allReduce(4 * K)).choice, ringSimple);
    EXPECT_EQ(FakeComm(m, release("2.32"), mnnvl).collInfo(allReduce(4 * K)).choice, ringSimple);
  });
}

}  // namespace
}  // namespace fake
