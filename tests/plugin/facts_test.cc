// The table's fabric= and nccl= keys end to end: the plugin detects the fabric from recorded
// machines (NCCL_PILOT_SYSFS_ROOT) as the net plugin's transport choice does, reads the running
// NCCL's version from the ncclGetVersion of its caller (or of an RTLD_LOCAL libnccl, or infers
// it from the tuner ABI), and drops the rules whose keys do not hold, through every release.
// And a pinned table digest that does not match leaves NCCL's own choice on every release.
#include <dlfcn.h>

#include "test_support.h"

namespace fake {
namespace {

const std::string kData = PILOT_TOPOLOGY_DATA;

const char* const kFabricTable =
    "allreduce fabric=ib algo=ring proto=ll\n"
    "allreduce fabric=roce algo=tree proto=ll\n"
    "allreduce fabric=ethernet algo=ring proto=simple\n";

bool warnsNone() {
  for (const LogLine& l : capturedLogs()) {
    if (l.level == NCCL_LOG_WARN) return false;
  }
  return true;
}

/// What every release runs for a 4K AllReduce with kFabricTable on the machine under `root`.
void expectFabric(const std::string& root, Choice want, const char* fabricName) {
  TempTable table(kFabricTable);
  setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
  setEnv("NCCL_PILOT_SYSFS_ROOT", root);
  FAKE_LOAD(m, kTunerModule);
  for (const Release& rel : allReleases()) {
    SCOPED_TRACE(rel.name);
    FakeComm comm(m, rel, {16, 2});
    ASSERT_EQ(comm.initResult(), ncclSuccess);
    EXPECT_EQ(comm.collInfo(allReduce(4 * K)).choice, want);
  }
  EXPECT_TRUE(logged(NCCL_LOG_INFO, {std::string("fabric ") + fabricName, "1 hold"})) << dumpLogs();
}

TEST(Facts, InfiniBandFromTheRecordedBareMetalMachine) {
  inChild([] {
    expectFabric(kData + "/baremetal-2gpu-2nic-switch", pick(kRing, kLL), "ib");
    EXPECT_TRUE(logged(NCCL_LOG_INFO, {"fabric ib (mlx5_0 port 1 ACTIVE, InfiniBand)"}))
        << dumpLogs();
  });
}

TEST(Facts, RoceFromTheRecordedVm) {
  inChild([] { expectFabric(kData + "/kvm-flat-2gpu-2nic", pick(kTree, kLL), "roce"); });
}

TEST(Facts, EthernetWithoutRdma) {
  inChild([] {
    expectFabric(kData + "/hwloc", pick(kRing, kSimple), "ethernet");
    EXPECT_TRUE(logged(NCCL_LOG_INFO, {"no RDMA device"})) << dumpLogs();
  });
}

TEST(Facts, EthernetWhenNcclIsToldToLeaveIbAlone) {
  inChild([] {
    setEnv("NCCL_IB_DISABLE", "1");
    expectFabric(kData + "/baremetal-2gpu-2nic-switch", pick(kRing, kSimple), "ethernet");
  });
}

TEST(Facts, EthernetWhenEveryPortIsDown) {
  inChild([] {
    // The broken tree's one ACTIVE port (mlx5_9 port 2) is left out by NCCL_IB_HCA; port 1 is
    // DOWN.
    setEnv("NCCL_IB_HCA", "mlx5_9:1");
    expectFabric(kData + "/broken", pick(kRing, kSimple), "ethernet");
  });
}

TEST(Facts, TheFabricCanBeNamed) {
  inChild([] {
    setEnv("NCCL_PILOT_TUNER_FABRIC", "RoCE");
    expectFabric(kData + "/baremetal-2gpu-2nic-switch", pick(kTree, kLL), "roce");
    EXPECT_TRUE(logged(NCCL_LOG_INFO, {"NCCL_PILOT_TUNER_FABRIC=roce"})) << dumpLogs();
  });
}

TEST(Facts, AMalformedFabricSettingWarnsOnceAndDetectionHolds) {
  inChild([] {
    setEnv("NCCL_PILOT_TUNER_FABRIC", "omnipath");
    expectFabric(kData + "/baremetal-2gpu-2nic-switch", pick(kRing, kLL), "ib");
    int warns = 0;
    for (const LogLine& l : capturedLogs()) {
      warns += l.level == NCCL_LOG_WARN && l.text.find("omnipath") != std::string::npos ? 1 : 0;
    }
    EXPECT_EQ(warns, 1) << dumpLogs();
  });
}

const char* const kVersionTable =
    "allreduce nccl=2.32.6- algo=ring proto=ll\n"
    "allreduce nccl=2.28-2.29 algo=tree proto=ll\n"
    "allreduce nccl=2.21.5 algo=ring proto=simple\n";

/// kVersionTable's choice for a release whose exact version the plugin knows.
Choice byVersion(const FakeComm& comm, const Release& rel) {
  const std::string name = rel.name;
  if (name == "2.32") return pick(kRing, kLL);
  if (name == "2.28" || name == "2.29") return pick(kTree, kLL);
  if (name == "2.21") return pick(kRing, kSimple);
  return comm.ncclDefault(allReduce(4 * K));
}

TEST(Facts, NcclVersionFromTheCallersNcclGetVersion) {
  inChild([] {
    TempTable table(kVersionTable);
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : allReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2});
      ASSERT_EQ(comm.initResult(), ncclSuccess);
      EXPECT_EQ(comm.collInfo(allReduce(4 * K)).choice, byVersion(comm, rel));
    }
    EXPECT_TRUE(logged(NCCL_LOG_INFO, {"tuner ABI v7", "NCCL 2.32.6 (ncclGetVersion in"}))
        << dumpLogs();
  });
}

TEST(Facts, TheNcclThatCallsInitIsTheOneThatCounts) {
  inChild([] {
    // This host's global ncclGetVersion says 2.28.9; the library that calls init (an NCCL
    // loaded RTLD_LOCAL, with its own ncclGetVersion) is 2.32.7, and it is the one running.
    pinNcclVersion(22809);
    TempTable table(kVersionTable);
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    void* lib = dlopen(PILOT_FAKE_NCCL_CALLER, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    using CallInit =
        ncclResult_t (*)(const ncclTuner_v7_t*, void**, size_t, size_t, ncclDebugLogger_t);
    auto callInit = reinterpret_cast<CallInit>(dlsym(lib, "fakeCallerInitV7"));
    ASSERT_NE(callInit, nullptr);
    void* ctx = nullptr;
    ASSERT_EQ(callInit(m.v7, &ctx, 16, 2, captureLog), ncclSuccess);
    float cells[7 * 3];
    for (float& c : cells) c = 10.0f;
    int nChannels = 0;
    ASSERT_EQ(m.v7->getCollInfo(ctx, ncclFuncAllReduce, 4 * K, 1, reinterpret_cast<float**>(cells),
                                7, 3, 0, &nChannels),
              ncclSuccess);
    EXPECT_EQ(cells[kRing * 3 + kLL], 0.0f) << "the nccl=2.32.6- rule applies";
    EXPECT_EQ(cells[kTree * 3 + kLL], 10.0f) << "the nccl=2.28-2.29 rule does not";
    EXPECT_EQ(m.v7->finalize(ctx), ncclSuccess);
    EXPECT_TRUE(logged(NCCL_LOG_INFO, {"NCCL 2.32.7 (ncclGetVersion in", "pilot-fake-nccl-caller",
                                       "(the caller of init)"}))
        << dumpLogs();
  });
}

TEST(Facts, WithoutNcclGetVersionTheTunerAbiDecides) {
  inChild([] {
    pinNcclVersion(0);  // ncclGetVersion fails everywhere
    TempTable table(kVersionTable);
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : allReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2});
      ASSERT_EQ(comm.initResult(), ncclSuccess);
      // v7 implies 2.32.6 and later, v5 2.28-2.29: inside those rules. v2 implies any 2.21,
      // not just 2.21.5: that rule cannot be shown to hold.
      const int abi = rel.abi;
      const Choice want = abi == 7   ? pick(kRing, kLL)
                          : abi == 5 ? pick(kTree, kLL)
                                     : comm.ncclDefault(allReduce(4 * K));
      EXPECT_EQ(comm.collInfo(allReduce(4 * K)).choice, want);
    }
    EXPECT_TRUE(logged(NCCL_LOG_INFO, {"NCCL 2.32.6 and later", "tuner ABI v7 implies it"}))
        << dumpLogs();
  });
}

TEST(Facts, AnNcclLoadedRtldLocalIsFound) {
  inChild([] {
    // A real libnccl (the CUDA toolkit's), loaded the way a framework's extension module pulls
    // it in: not in the global scope. The host's own ncclGetVersion fails.
    void* nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (nccl == nullptr) GTEST_SKIP() << "no libnccl.so.2 here: " << dlerror();
    using GetVersion = int (*)(int*);
    int real = 0;
    ASSERT_EQ(reinterpret_cast<GetVersion>(dlsym(nccl, "ncclGetVersion"))(&real), 0);
    pinNcclVersion(0);
    const int minor = real / 100 % 100, patch = real % 100;
    TempTable table("allreduce nccl=2." + std::to_string(minor) + "." + std::to_string(patch) +
                    " algo=ring proto=ll\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    FAKE_LOAD(m, kTunerModule);
    // The release of that version's line drives its ABI; another release's ABI does not fit.
    const Release* same = nullptr;
    for (const Release& rel : allReleases()) {
      if (rel.version / 100 == real / 100) same = &rel;
    }
    if (same == nullptr) GTEST_SKIP() << "libnccl " << real << " is no release the fake knows";
    EXPECT_EQ(FakeComm(m, *same, {16, 2}).collInfo(allReduce(4 * K)).choice, pick(kRing, kLL));
    EXPECT_TRUE(logged(NCCL_LOG_INFO, {"ncclGetVersion in libnccl.so.2"})) << dumpLogs();
    const Release& other = same->abi == 7 ? release("2.28") : release("2.32");
    FakeComm comm(m, other, {16, 2});
    EXPECT_FALSE(comm.collInfo(allReduce(4 * K)).changed);
    EXPECT_TRUE(
        logged(NCCL_LOG_INFO, {"which does not load tuner ABI v" + std::to_string(other.abi)}))
        << dumpLogs();
  });
}

/// The shipped fleet table on the machine under `root`, acting as release `name`.
void expectFleet(const std::string& root, const char* name, Choice small, Choice large,
                 int largeChannels) {
  setEnv("NCCL_PILOT_TUNER_TABLE", PILOT_FLEET_TABLE);
  setEnv("NCCL_PILOT_SYSFS_ROOT", root);
  FAKE_LOAD(m, kTunerModule);
  FakeComm comm(m, release(name), {16, 2});
  ASSERT_EQ(comm.initResult(), ncclSuccess);
  EXPECT_EQ(comm.collInfo(allReduce(64 * K)).choice, small);
  Decision big = comm.collInfo(allReduce(16 * M));
  EXPECT_EQ(big.choice, large.algo < 0 ? comm.ncclDefault(allReduce(16 * M)) : large);
  EXPECT_EQ(big.nChannels, largeChannels);
  EXPECT_TRUE(warnsNone()) << dumpLogs();
}

TEST(Facts, ShippedFleetTableDoesWhatItsCommentsSay) {
  const Choice ncclOwn{-1, -1};
  inChild([] {
    expectFleet(kData + "/baremetal-2gpu-2nic-switch", "2.32", pick(kTree, kLL),
                pick(kRing, kSimple), 0);
  });
  inChild([] {
    expectFleet(kData + "/kvm-flat-2gpu-2nic", "2.30", pick(kRing, NCCL_PROTO_LL128),
                pick(kRing, kSimple), 0);
  });
  inChild([&] {
    expectFleet(kData + "/kvm-flat-2gpu-2nic", "2.32", pick(kRing, NCCL_PROTO_LL128), ncclOwn, 0);
  });
  inChild([] {
    expectFleet(kData + "/hwloc", "2.28", pick(kRing, NCCL_PROTO_LL128), pick(kRing, kSimple), 8);
  });
}

TEST(Facts, APinnedDigestOfAnotherTableLeavesNcclsChoiceOnEveryRelease) {
  inChild([] {
    TempTable table("allreduce algo=ring proto=ll\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    setEnv("NCCL_PILOT_TUNER_TABLE_SHA256", "00000000deadbeef");
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : allReleases()) {
      SCOPED_TRACE(rel.name);
      FakeComm comm(m, rel, {16, 2});
      ASSERT_EQ(comm.initResult(), ncclSuccess);
      for (size_t bytes : {size_t{0}, 4 * K, 16 * M}) {
        Decision d = comm.collInfo(allReduce(bytes));
        EXPECT_FALSE(d.changed) << bytes;
        EXPECT_EQ(d.choice, comm.ncclDefault(allReduce(bytes)));
      }
    }
    int warns = 0;
    for (const LogLine& l : capturedLogs()) warns += l.level == NCCL_LOG_WARN ? 1 : 0;
    EXPECT_EQ(warns, 1) << dumpLogs();
    EXPECT_TRUE(logged(NCCL_LOG_WARN, {"00000000deadbeef", "NCCL keeps its own decisions"}))
        << dumpLogs();
  });
}

TEST(Facts, APinnedDigestOfAnotherTableFailsInitInStrictMode) {
  inChild([] {
    TempTable table("allreduce algo=ring proto=ll\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    setEnv("NCCL_PILOT_TUNER_TABLE_SHA256", "00000000deadbeef");
    setEnv("NCCL_PILOT_TUNER_STRICT", "1");
    FAKE_LOAD(m, kTunerModule);
    for (const Release& rel : allReleases()) {
      SCOPED_TRACE(rel.name);
      EXPECT_NE(FakeComm(m, rel, {16, 2}).initResult(), ncclSuccess);
    }
    EXPECT_TRUE(logged(NCCL_LOG_WARN, {"00000000deadbeef", "communicator init fails"}))
        << dumpLogs();
  });
}

}  // namespace
}  // namespace fake
