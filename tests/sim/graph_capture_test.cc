// A collective captured into a CUDA graph stops its communicator's exploration, through the
// built library as NCCL loads it by default: one file serving as tuner and profiler (the net
// plugin's library), the profiler told by NCCL's CollApi event (graphCaptured, ABI v5+) and
// the tuner reading it at its next call (tuner/graph_capture.h).
#include <gtest/gtest.h>

#include "fake_nccl.h"
#include "isolation.h"
#include "profiler_host.h"

namespace sim {
namespace {

/// Calls of 64 KiB all-reduce that ran something else than NCCL's pick, out of `calls`.
int explorations(const fake::FakeComm& comm, int calls) {
  int n = 0;
  for (int i = 0; i < calls; ++i) {
    fake::Call call;
    call.coll = ncclFuncAllReduce;
    call.nBytes = 64 << 10;
    n += comm.collInfo(call).choice != comm.ncclDefault(call) ? 1 : 0;
  }
  return n;
}

TEST(GraphCapture, ACapturedCollectiveStopsTheCommunicatorsExploration) {
  fake::inChild([] {
    char dir[] = "/tmp/pilot-graph-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    fake::setEnv("NCCL_PILOT_TUNER_EXPLORE", "0.25");
    fake::setEnv("NCCL_PILOT_METRICS_DIR", dir);
    // The same path twice: one loaded copy, as when NCCL takes the tuner and the profiler from
    // the net plugin's library.
    fake::Module tuner(PILOT_NET_MODULE);
    ASSERT_TRUE(tuner.ok()) << tuner.error();
    fakeprof::Module profiler(PILOT_NET_MODULE);
    ASSERT_TRUE(profiler.ok()) << profiler.error();
    fake::FakeComm comm(tuner, fake::release("2.28"), {2, 2});
    ASSERT_EQ(comm.initResult(), ncclSuccess);
    fakeprof::Comm events(profiler, 5, fake::kCommId, "graphs", 2, 2, 0);
    ASSERT_NE(events.mask(), 0);

    // A single size funds its own explorations within the budget: a few in a hundred calls.
    EXPECT_GT(explorations(comm, 200), 2) << "eager collectives explore";
    fakeprof::Collective eager;
    eager.count = 16384;
    eager.channels = fakeprof::channelsTaking(2, 10'000, 1'000'000);
    events.kernels(events.enqueue(eager), eager);
    EXPECT_GT(explorations(comm, 200), 2) << "an eager collective changes nothing";

    fakeprof::Collective captured = eager;
    captured.graphCaptured = true;
    captured.seqNumber = 1;
    events.kernels(events.enqueue(captured), captured);
    EXPECT_EQ(explorations(comm, 400), 0) << "an alternative would replay with the graph";
    events.finalize();
    std::system((std::string("rm -rf ") + dir).c_str());
  });
}

}  // namespace
}  // namespace sim
