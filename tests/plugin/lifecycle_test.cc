// Load, unload and reload, as NCCL does when its plugin refcount drops to zero and a later
// communicator loads the plugin again (NCCL <= 2.27 in particular, research/tuner.md §1.2).
#include <malloc.h>

#include <string>

#include "test_support.h"

// Sanitizer runtimes replace malloc (mallinfo2 then reports nothing) but count live bytes.
extern "C" size_t __sanitizer_get_current_allocated_bytes() __attribute__((weak));

namespace fake {
namespace {

size_t heapInUse() {
  if (__sanitizer_get_current_allocated_bytes) return __sanitizer_get_current_allocated_bytes();
  return mallinfo2().uordblks;
}

std::string thousandRules() {
  std::string text;
  for (int i = 0; i < 1000; ++i) {
    text += "allreduce," + std::to_string(i * 1000) + "," + std::to_string(i * 1000 + 999) +
            ",ring,simple,-1,-1,-1\n";
  }
  return text;
}

TEST(Lifecycle, UnloadAndReloadKeepWorking) {
  inChild([] {
    TempTable table("any algo=ring proto=simple channels=2\n");
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE("load " + std::to_string(round));
      FAKE_LOAD(m, kTunerModule);
      {
        FakeComm comm(m, release("2.28"), {16, 2});
        ASSERT_EQ(comm.initResult(), ncclSuccess);
        Decision d = comm.collInfo(collCall(ncclFuncBroadcast, 64 * K));
        EXPECT_EQ(d.choice, pick(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE));
        EXPECT_EQ(d.nChannels, 2);
      }
      m.unload();
    }
  });
}

// Each load builds a TunerRuntime with the parsed table and a compiled table per shape; an
// unload must not strand them (about 100 KB per cycle for this table when it does).
TEST(Lifecycle, UnloadReleasesTheTable) {
  inChild([] {
    TempTable table(thousandRules());
    setEnv("NCCL_PILOT_TUNER_TABLE", table.path());
    auto cycle = [] {
      FAKE_LOAD(m, kTunerModule);
      {
        FakeComm comm(m, release("2.28"), {16, 2}, /*logger=*/nullptr);
        ASSERT_EQ(comm.initResult(), ncclSuccess);
        EXPECT_TRUE(comm.collInfo(allReduce(4 * K)).changed);
      }
      m.unload();
    };
    cycle();  // first-use allocations of libc and libstdc++ are not the plugin's
    const size_t before = heapInUse();
    constexpr int kCycles = 10;
    for (int i = 0; i < kCycles; ++i) cycle();
    const long grown = static_cast<long>(heapInUse()) - static_cast<long>(before);
    EXPECT_LT(grown, 16 * 1024) << grown / kCycles << " bytes per load/unload cycle stay allocated";
  });
}

}  // namespace
}  // namespace fake
