// init as each release calls it: warnings through NCCL's logger, strict mode, and v5+'s
// NVL-domain info and tuning constants (which a table-driven tuner must not edit).
#include <cstring>

#include "pilot/version.h"
#include "test_support.h"

namespace fake {
namespace {

const char* const kBroken =
    "allreduce size=..64K algo=ring proto=ll\n"
    "allreduce size=64K.. algo=warp-drive proto=simple\n";

TEST(Init, BrokenTableWarnsThroughNcclLoggerAndInitSucceeds) {
  inChild([] {
    TempTable table(kBroken);
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : allReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2});
      ASSERT_EQ(comm.initResult(), ncclSuccess);
      EXPECT_EQ(comm.collInfo(allReduce(4 * K)).choice, pick(NCCL_ALGO_RING, NCCL_PROTO_LL));
      EXPECT_FALSE(comm.collInfo(allReduce(1 * M)).changed) << "the bad line is skipped";
    }
    EXPECT_TRUE(logged(NCCL_LOG_WARN, {"TUNER/Pilot", table.path() + ":2:", "warp-drive"}))
        << dumpLogs();
    EXPECT_TRUE(logged(NCCL_LOG_INFO, {"TUNER/Pilot", "loaded 1 rules"})) << dumpLogs();
  });
}

TEST(Init, LogsTheLibraryVersionOncePerProcess) {
  inChild([] {
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : allReleases()) {
      FakeComm comm(m, rel, {16, 2});
      ASSERT_EQ(comm.initResult(), ncclSuccess);
    }
    EXPECT_EQ(
        countLogged(NCCL_LOG_INFO, {"TUNER/Pilot", std::string("nccl-pilot ") + pilot::kVersion}),
        1)
        << dumpLogs();
  });
}

TEST(Init, StrictModeWithBrokenTableFailsEveryInit) {
  inChild([] {
    TempTable table(kBroken);
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    setEnv("NCCL_PILOT_TUNER_STRICT", "1");
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : allReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2});  // also checks that no context is left behind
      EXPECT_NE(comm.initResult(), ncclSuccess);
    }
    EXPECT_TRUE(logged(NCCL_LOG_WARN, {"TUNER/Pilot", "NCCL_PILOT_TUNER_STRICT"})) << dumpLogs();
  });
}

TEST(Init, StrictModeWithUnreadableTableFailsInit) {
  inChild([] {
    setEnv("NCCL_PILOT_TUNER_TABLE", "/nonexistent/strict.table");
    setEnv("NCCL_PILOT_TUNER_STRICT", "1");
    FAKE_LOAD(m, kTunerModule);
    EXPECT_NE(FakeComm(m, release("2.28"), {16, 2}).initResult(), ncclSuccess);
  });
}

TEST(Init, StrictModeWithGoodTableSucceeds) {
  inChild([] {
    TempTable table("allreduce algo=ring proto=ll\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    setEnv("NCCL_PILOT_TUNER_STRICT", "1");
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : allReleases()) {
      FakeComm comm(m, rel, {16, 2});
      ASSERT_EQ(comm.initResult(), ncclSuccess) << rel.name;
      EXPECT_EQ(comm.collInfo(allReduce(8 * M)).choice, pick(NCCL_ALGO_RING, NCCL_PROTO_LL));
    }
  });
}

void expectConstantsUntouched(const Module& m) {
  ncclTunerConstants_v5_t constants, pattern;
  unsigned char* bytes = reinterpret_cast<unsigned char*>(&constants);
  for (size_t i = 0; i < sizeof(constants); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 3);
  std::memcpy(&pattern, &constants, sizeof(constants));
  ncclNvlDomainInfo_v5_t nvl{2, 8, 8};
  void* ctx = nullptr;
  ASSERT_EQ(m.v5->init(&ctx, kCommId, 16, 2, captureLog, &nvl, &constants), ncclSuccess);
  EXPECT_EQ(std::memcmp(&constants, &pattern, sizeof(constants)), 0) << "v5 init";
  EXPECT_EQ(m.v5->finalize(ctx), ncclSuccess);
  ctx = nullptr;
  ASSERT_EQ(m.v6->init(&ctx, kCommId + 1, 16, 2, captureLog, &nvl, &constants), ncclSuccess);
  EXPECT_EQ(std::memcmp(&constants, &pattern, sizeof(constants)), 0) << "v6 init";
  EXPECT_EQ(m.v6->finalize(ctx), ncclSuccess);
  EXPECT_EQ(std::memcmp(&constants, &pattern, sizeof(constants)), 0) << "finalize";
  // v7's constants are larger (5 compute capabilities): all of it stays as NCCL wrote it.
  ncclTunerConstants_v7_t constants7, pattern7;
  bytes = reinterpret_cast<unsigned char*>(&constants7);
  for (size_t i = 0; i < sizeof(constants7); ++i) bytes[i] = static_cast<unsigned char>(i * 5 + 1);
  std::memcpy(&pattern7, &constants7, sizeof(constants7));
  ctx = nullptr;
  ASSERT_EQ(m.v7->init(&ctx, kCommId + 2, 16, 2, captureLog, &nvl, &constants7), ncclSuccess);
  EXPECT_EQ(std::memcmp(&constants7, &pattern7, sizeof(constants7)), 0) << "v7 init";
  EXPECT_EQ(m.v7->finalize(ctx), ncclSuccess);
  EXPECT_EQ(nvl.nNvlDomains, 2);
  EXPECT_EQ(nvl.minRanksPerNvlDomain, 8);
  EXPECT_EQ(nvl.maxRanksPerNvlDomain, 8);
}

TEST(Init, TuningConstantsAreNeverWritten) {
  EXPECT_EQ(sizeof(ncclTunerConstants_v5_t), (21 + 63 + 5 * 12) * sizeof(double));
  EXPECT_EQ(sizeof(ncclTunerConstants_v7_t), (21 + 63 + 5 * 15) * sizeof(double));
  inChild([] {
    TempTable table("allreduce algo=ring proto=ll channels=2 chunk=1M\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    expectConstantsUntouched(m);
  });
  inChild([] {
    FAKE_LOAD(m, kTunerModule);
    expectConstantsUntouched(m);
  });
}

TEST(Init, NullNvlDomainInfoAndConstantsAreAccepted) {
  inChild([] {
    TempTable table("allreduce algo=ring proto=ll\nallreduce rpn=8 algo=tree proto=simple\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    void* ctx = nullptr;
    ASSERT_EQ(m.v6->init(&ctx, kCommId, 16, 2, captureLog, nullptr, nullptr), ncclSuccess);
    float cells[21];
    for (float& c : cells) c = 5.0f;
    int nCh = 0;
    ASSERT_EQ(m.v6->getCollInfo(ctx, ncclFuncAllReduce, 4096, 1, reinterpret_cast<float**>(cells),
                                7, 3, 0, &nCh),
              ncclSuccess);
    EXPECT_EQ(cells[NCCL_ALGO_RING * 3 + NCCL_PROTO_LL], 0.0f);
    EXPECT_EQ(m.v6->finalize(ctx), ncclSuccess);
    ctx = nullptr;
    ASSERT_EQ(m.v7->init(&ctx, kCommId, 16, 2, captureLog, nullptr, nullptr), ncclSuccess);
    for (float& c : cells) c = 5.0f;
    ASSERT_EQ(m.v7->getCollInfo(ctx, ncclFuncAllReduce, 4096, 1, reinterpret_cast<float**>(cells),
                                7, 3, 0, &nCh),
              ncclSuccess);
    EXPECT_EQ(cells[NCCL_ALGO_RING * 3 + NCCL_PROTO_LL], 0.0f);
    EXPECT_EQ(m.v7->finalize(ctx), ncclSuccess);
  });
}

}  // namespace
}  // namespace fake
