// The module's surface as every NCCL release sees it: symbols, names, and the calls that must
// leave NCCL's decision alone (no table, disabled tuner, NULL context, collectives not tuned).
#include <cstring>

#include "test_support.h"

namespace fake {
namespace {

const char* const kAnyRule = "any algo=ring proto=simple channels=2 chunk=64K\n";

void expectSurface(const char* path) {
  FAKE_LOAD(m, path);
  ASSERT_NE(m.v2, nullptr);
  ASSERT_NE(m.v3, nullptr);
  ASSERT_NE(m.v4, nullptr);
  ASSERT_NE(m.v5, nullptr);
  ASSERT_NE(m.v6, nullptr);
  ASSERT_NE(m.v7, nullptr);
  for (const char* name :
       {m.v2->name, m.v3->name, m.v4->name, m.v5->name, m.v6->name, m.v7->name}) {
    ASSERT_NE(name, nullptr);
    EXPECT_STREQ(name, "Pilot");
  }
  EXPECT_TRUE(m.v2->init && m.v2->getCollInfo && m.v2->destroy);
  EXPECT_TRUE(m.v3->init && m.v3->getCollInfo && m.v3->destroy);
  EXPECT_TRUE(m.v4->init && m.v4->getCollInfo && m.v4->destroy);
  EXPECT_TRUE(m.v5->init && m.v5->getCollInfo && m.v5->finalize);
  EXPECT_TRUE(m.v6->init && m.v6->getCollInfo && m.v6->finalize && m.v6->getChunkSize);
  EXPECT_TRUE(m.v7->init && m.v7->getCollInfo && m.v7->finalize && m.v7->getChunkSize);
}

/// Every release, two shapes, all collectives and a spread of sizes: nothing may change.
void expectUntouchedEverywhere(const Module& m) {
  for (const Release& rel : allReleases()) {
    for (Shape shape : {Shape{16, 2}, Shape{8, 1}}) {
      SCOPED_TRACE(std::string(rel.name) + " nRanks " + std::to_string(shape.nRanks));
      FakeComm comm(m, rel, shape);
      ASSERT_EQ(comm.initResult(), ncclSuccess);
      for (int coll = 0; coll <= ncclFuncAllReduce; ++coll) {
        for (size_t bytes : {size_t{0}, size_t{1}, 4 * K, 64 * K + 1, 8 * M, 4096 * M}) {
          Call call = collCall(coll, bytes);
          Decision d = comm.collInfo(call);
          EXPECT_FALSE(d.changed) << "coll " << coll << " bytes " << bytes;
          EXPECT_EQ(d.choice, comm.ncclDefault(call));
          EXPECT_EQ(comm.chunkSize(coll, bytes, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 8, 131072),
                    131072u);
        }
      }
    }
  }
}

TEST(Surface, EveryVersionIsNamedPilotInBothModules) {
  inChild([] { expectSurface(kTunerModule); });
  inChild([] { expectSurface(kNetModule); });
}

TEST(Surface, NoTableLeavesEverythingUntouched) {
  inChild([] {
    FAKE_LOAD(m, kTunerModule);
    expectUntouchedEverywhere(m);
    EXPECT_TRUE(logged(NCCL_LOG_INFO, {"TUNER/Pilot", "no tuning table"})) << dumpLogs();
  });
}

TEST(Surface, DisabledTunerLeavesEverythingUntouched) {
  inChild([] {
    TempTable table(kAnyRule);
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    setEnv("NCCL_PILOT_TUNER", "0");
    FAKE_LOAD(m, kTunerModule);
    expectUntouchedEverywhere(m);
  });
}

TEST(Surface, MissingTableFileWarnsAndLeavesEverythingUntouched) {
  inChild([] {
    setEnv("NCCL_PILOT_TUNER_TABLE", "/nonexistent/pilot.table");
    FAKE_LOAD(m, kTunerModule);
    expectUntouchedEverywhere(m);
    EXPECT_TRUE(logged(NCCL_LOG_WARN, {"/nonexistent/pilot.table", "cannot open"})) << dumpLogs();
  });
}

TEST(Surface, NullContextIsHarmless) {
  inChild([] {
    TempTable table(kAnyRule);
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    float cells[7 * 3];
    for (int i = 0; i < 21; ++i) cells[i] = 10.0f + static_cast<float>(i);
    float** t = reinterpret_cast<float**>(cells);
    int algo = -1, proto = -1, nCh = 0;
    const auto ar = ncclFuncAllReduce;
    EXPECT_EQ(m.v2->getCollInfo(nullptr, ar, 4096, 0, 0, 1, &algo, &proto, &nCh), ncclSuccess);
    EXPECT_EQ(m.v3->getCollInfo(nullptr, ar, 4096, 1, t, 6, 3, &nCh), ncclSuccess);
    EXPECT_EQ(m.v4->getCollInfo(nullptr, ar, 4096, 1, t, 7, 3, 0, &nCh), ncclSuccess);
    EXPECT_EQ(m.v5->getCollInfo(nullptr, ar, 4096, 1, t, 7, 3, 0, &nCh), ncclSuccess);
    EXPECT_EQ(m.v6->getCollInfo(nullptr, ar, 4096, 1, t, 7, 3, 0, &nCh), ncclSuccess);
    EXPECT_EQ(m.v7->getCollInfo(nullptr, ar, 4096, 1, t, 7, 3, 0, &nCh), ncclSuccess);
    size_t chunk = 12345;
    EXPECT_EQ(m.v6->getChunkSize(nullptr, ar, 4096, 1, 2, 8, &chunk), ncclSuccess);
    EXPECT_EQ(m.v7->getChunkSize(nullptr, ar, 4096, 1, 2, 8, &chunk), ncclSuccess);
    EXPECT_EQ(chunk, 12345u);
    EXPECT_EQ(algo, -1);
    EXPECT_EQ(proto, -1);
    EXPECT_EQ(nCh, 0);
    for (int i = 0; i < 21; ++i) EXPECT_EQ(cells[i], 10.0f + static_cast<float>(i));
    EXPECT_EQ(m.v2->destroy(nullptr), ncclSuccess);
    EXPECT_EQ(m.v6->finalize(nullptr), ncclSuccess);
    EXPECT_EQ(m.v7->finalize(nullptr), ncclSuccess);
  });
}

TEST(Surface, CollectivesOutsideTheTunedRangeAreHarmless) {
  inChild([] {
    TempTable table(kAnyRule);
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : allReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2});
      ASSERT_EQ(comm.initResult(), ncclSuccess);
      // The rule matches every tuned collective...
      EXPECT_EQ(comm.collInfo(allReduce(1 * M)).choice, pick(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE));
      // ...but not SendRecv (5) or the later, release-specific values (6, 7).
      for (int coll : {static_cast<int>(ncclFuncSendRecv), 6, 7}) {
        Decision d = comm.collInfo(collCall(coll, 1 * M));
        EXPECT_FALSE(d.changed) << "collType " << coll;
        EXPECT_EQ(comm.chunkSize(coll, 1 * M, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 4, 4096), 4096u);
      }
    }
  });
}

TEST(Surface, NullLoggerIsAccepted) {
  inChild([] {
    // A bad line (the plugin warns) and NCCL_DEBUG=TRACE (it traces every call): all of it
    // goes to a NULL logger.
    TempTable table("allreduce algo=ring proto=ll128 channels=3\nallreduce algo=nope\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    setEnv("NCCL_DEBUG", "TRACE");
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : allReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2}, /*logger=*/nullptr);
      ASSERT_EQ(comm.initResult(), ncclSuccess);
      Decision d = comm.collInfo(allReduce(4 * K));
      EXPECT_EQ(d.choice, pick(NCCL_ALGO_RING, NCCL_PROTO_LL128));
      EXPECT_EQ(d.nChannels, 3);
      EXPECT_EQ(comm.chunkSize(ncclFuncAllReduce, 4 * K, 1, 1, 3, 4096), 4096u);
    }
  });
}

}  // namespace
}  // namespace fake
