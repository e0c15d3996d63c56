// Cells NCCL marked IGNORE, the 6-algorithm tables of 2.21/2.22, the v2 step-aside when the
// user forces NCCL_ALGO/NCCL_PROTO, and NCCL's starting minimum.
#include "test_support.h"

namespace fake {
namespace {

const char* const kTreeFirst =
    "allreduce size=..1M algo=tree proto=ll\n"
    "allreduce size=..1M algo=ring proto=ll128 channels=2\n"
    "allreduce size=1M.. algo=tree|collnet_direct\n"  // restrict
    "allreduce size=1M.. proto=ll\n";

TEST(IgnoreCells, RuleWhoseCellNcclIgnoresFallsThroughToTheNextRule) {
  inChild([] {
    TempTable table(kTreeFirst);
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : costTableReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2});
      ASSERT_EQ(comm.initResult(), ncclSuccess);
      // As if NCCL_ALGO=ring: NCCL hands over Tree (and CollNet) cells as IGNORE.
      Call small = allReduce(4 * K), big = allReduce(64 * M);
      small.platform.algoMask = big.platform.algoMask = 1u << kRing;
      Decision s = comm.collInfo(small);
      EXPECT_EQ(s.choice, pick(kRing, kLL128));
      EXPECT_EQ(s.nChannels, 2) << "the skipped Tree rule must not leave channels behind";
      Decision b = comm.collInfo(big);
      EXPECT_EQ(b.choice, pick(kRing, kLL)) << "a restriction to unusable cells falls through";
      // Without NCCL_ALGO the first rules apply (collInfo also checks no IGNORE cell revived).
      EXPECT_EQ(comm.collInfo(allReduce(4 * K)).choice, pick(kTree, kLL));
      Decision t = comm.collInfo(allReduce(64 * M));
      EXPECT_EQ(t.choice, selectWithin(t.before, rel.startMin, 1u << kTree, kAllProtos));
      EXPECT_EQ(t.choice.algo, kTree);
    }
  });
}

TEST(IgnoreCells, V2ChecksSupportItselfAndFallsThrough) {
  inChild([] {
    TempTable table(
        "reducescatter algo=tree proto=ll\nreducescatter algo=nvls proto=simple\n"
        "reducescatter algo=ring proto=ll128 channels=6\n"
        "allgather algo=nvls proto=ll\n"            // NVLS runs Simple only; 2.21 would not check
        "allgather proto=ll|simple channels=5\n");  // restrict: NCCL's pick, the rule's channels
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    FakeComm comm(m, release("2.21"), {16, 2});
    // NCCL 2.21 would run whatever v2 returns: Tree and (multi-node) NVLS must be skipped.
    Call call = collCall(ncclFuncReduceScatter, 1 * M);
    call.platform.nvls = true;
    Decision d = comm.collInfo(call);
    EXPECT_EQ(d.choice, pick(kRing, kLL128));
    EXPECT_EQ(d.nChannels, 6);
    FakeComm single(m, release("2.21"), {8, 1});
    Call ag = collCall(ncclFuncAllGather, 1 * M);
    ag.platform.nvls = true;
    Decision a = single.collInfo(ag);
    EXPECT_EQ(a.choice, single.ncclDefault(ag));
    EXPECT_EQ(a.nChannels, 5);
  });
}

TEST(IgnoreCells, SixAlgorithmTablesAreNeverWrittenPast) {
  inChild([] {
    TempTable table(
        "allgather algo=pat proto=simple\nallgather algo=ring proto=ll\n"
        "reducescatter algo=pat|ring proto=simple\nallreduce proto=simple\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : allReleases()) {
      SCOPED_TRACE(rel.name);
      // One rank per node: NCCL 2.23+ offers PAT for AllGather/ReduceScatter.
      FakeComm comm(m, rel, {4, 4});
      ASSERT_EQ(comm.initResult(), ncclSuccess);
      // collInfo fails the test on any write into the guard row after numAlgo=6.
      Decision ag = comm.collInfo(collCall(ncclFuncAllGather, 4 * K));
      EXPECT_EQ(ag.choice, rel.numAlgo == 7 ? pick(kPat, kSimple) : pick(kRing, kLL));
      for (size_t bytes : {1 * K, 256 * M}) {
        Decision rs = comm.collInfo(collCall(ncclFuncReduceScatter, bytes));
        if (rel.abi >= 3) {  // v2 cannot restrict: NCCL 2.21 keeps its own pick
          EXPECT_EQ(rs.choice.proto, kSimple);
          EXPECT_EQ(rs.choice, selectWithin(rs.before, rel.startMin, (1u << kPat) | (1u << kRing),
                                            1u << kSimple));
        }
      }
      EXPECT_EQ(comm.collInfo(allReduce(4 * K)).choice.proto, rel.abi >= 3 ? kSimple : kLL);
    }
  });
}

void expectV2StepsAside(const char* variable, const char* value, const Platform& platform) {
  TempTable table("allreduce algo=ring proto=ll128 channels=4\n");
  setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
  setEnv(variable, value);
  FAKE_LOAD(m, kTunerModule);
  {
    FakeComm v2(m, release("2.21"), {16, 2});
    ASSERT_EQ(v2.initResult(), ncclSuccess);
    Call call = allReduce(4 * K);
    call.platform = platform;
    EXPECT_FALSE(v2.collInfo(call).changed)
        << "2.21 runs v2's pair unchecked, so with " << variable << " set the table steps aside";
  }
  for (const Release& rel : costTableReleases()) {
    // 2.22+ re-check through the cost table: the rule applies where its cell is usable.
    FakeComm comm(m, rel, {16, 2});
    Call call = allReduce(4 * K);
    call.platform = platform;
    Decision d = comm.collInfo(call);
    EXPECT_EQ(d.choice, pick(kRing, kLL128)) << rel.name;
    EXPECT_EQ(d.nChannels, 4) << rel.name;
  }
}

TEST(IgnoreCells, V2StepsAsideWhenNcclAlgoIsSet) {
  Platform ringOnly;
  ringOnly.algoMask = 1u << kRing;
  inChild([&] { expectV2StepsAside("NCCL_ALGO", "ring", ringOnly); });
}

TEST(IgnoreCells, V2StepsAsideWhenNcclProtoIsSet) {
  Platform ll128Only;
  ll128Only.protoMask = 1u << kLL128;
  inChild([&] { expectV2StepsAside("NCCL_PROTO", "LL128", ll128Only); });
}

TEST(IgnoreCells, SelectedCellWinsWhateverNcclsStartingMinimum) {
  inChild([] {
    TempTable table("allreduce size=..1M algo=ring proto=ll128\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : costTableReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2});
      Call call = allReduce(4 * K);
      call.platform.scale = 1e9f;  // every model time above 3.6e9 us
      // Without the plugin 2.22-2.28 find nothing below their 3.6e9 start; 2.29+ do.
      EXPECT_EQ(comm.ncclDefault(call).algo == -1, rel.startMin < 1e10f);
      EXPECT_EQ(comm.collInfo(call).choice, pick(kRing, kLL128));
      Call outside = call;
      outside.nBytes = 2 * M;
      EXPECT_FALSE(comm.collInfo(outside).changed);
    }
  });
}

}  // namespace
}  // namespace fake
