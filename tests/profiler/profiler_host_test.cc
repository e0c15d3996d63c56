// The built profiler module driven through ncclProfiler_v4, _v5 and _v6 in NCCL's event order:
// off unless asked, exact figures from known GPU timestamps (kernel events on another thread,
// after the Coll stopped), either order of the last stops, several communicators, parents that
// are not ours (PXN, stale, garbage).
#include <gtest/gtest.h>

#include <thread>

#include "child_process.h"
#include "host_test_support.h"

namespace fakeprof {
namespace {

using testsupport::runInChild;

constexpr uint64_t kBase = 1'700'000'000'000'000'000ull;  // a GPU globaltimer value, ns

class ProfilerAbi : public ::testing::TestWithParam<int> {};

TEST_P(ProfilerAbi, ExportsTheStruct) {
  Module m(PILOT_PROFILER_MODULE);
  ASSERT_TRUE(m.ok()) << m.error();
  const int abi = GetParam();
  const char* name = abi == 4 ? m.v4->name : abi == 5 ? m.v5->name : m.v6->name;
  EXPECT_STREQ(name, "Pilot");
}

TEST_P(ProfilerAbi, OffUnlessAskedForAndThenNcclSendsNothing) {
  const int abi = GetParam();
  runInChild([abi] {
    setEnv({});
    Module m(PILOT_PROFILER_MODULE);
    ASSERT_TRUE(m.ok()) << m.error();
    Comm comm(m, abi, 0x11, "off", 1, 8, 0);
    EXPECT_EQ(comm.initResult(), ncclSuccess);
    EXPECT_EQ(comm.mask(), 0);
    EXPECT_EQ(comm.context(), nullptr);
    bool saidOff = false;
    for (const std::string& l : loggedLines()) {
      saidOff = saidOff || l.find("PROFILER/Pilot: metrics off") != std::string::npos;
    }
    EXPECT_TRUE(saidOff);
  });
  runInChild([abi] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS", "0"}, {"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, abi, 0x11, "off", 1, 8, 0);
    EXPECT_EQ(comm.mask(), 0);
    comm.finalize();
    EXPECT_TRUE(filesEnding(dir, ".prom").empty());
    removeDir(dir);
  });
}

/// The GPU times of one call: channel c takes ns * (1 - 0.02 c).
Collective allReduce(size_t count, int channels, uint64_t ns, uint64_t seq) {
  Collective c;
  c.count = count;
  c.seqNumber = seq;
  c.channels = channelsTaking(channels, ns, kBase + seq * 10'000'000);
  return c;
}

TEST_P(ProfilerAbi, FiguresAreWhatTheGpuTimestampsImply) {
  const int abi = GetParam();
  runInChild([abi] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}, {"SLURM_JOB_ID", "4242"}});
    Module m(PILOT_PROFILER_MODULE);
    ASSERT_TRUE(m.ok()) << m.error();
    Comm comm(m, abi, 0xc0ffee, "dp group 0", 1, 8, 3);
    ASSERT_EQ(comm.mask(),
              ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh);
    ASSERT_NE(comm.context(), nullptr);

    // 1 MiB all-reduces on 4 channels and 256 KiB-per-rank all-gathers on 2, with known times.
    const std::vector<uint64_t> arNs = {120'000, 150'000, 90'000};
    const std::vector<uint64_t> agNs = {40'000, 60'000};
    std::vector<Collective> colls;
    for (size_t i = 0; i < arNs.size(); ++i) colls.push_back(allReduce(262144, 4, arNs[i], i));
    for (size_t i = 0; i < agNs.size(); ++i) {
      Collective c;
      c.func = "AllGather";
      c.count = 65536;
      c.proto = "LL128";
      c.seqNumber = i;
      c.channels = channelsTaking(2, agNs[i], kBase + 100'000'000 + i * 1'000'000);
      colls.push_back(c);
    }
    // NCCL's order: every Coll is enqueued (and stopped) on this thread first; the proxy
    // thread reports the kernels afterwards.
    std::vector<void*> handles;
    for (const Collective& c : colls) handles.push_back(comm.enqueue(c));
    for (void* h : handles) ASSERT_NE(h, nullptr);
    std::thread proxy([&] {
      for (size_t i = 0; i < colls.size(); ++i) comm.kernels(handles[i], colls[i]);
    });
    proxy.join();
    comm.finalize();

    Exposition e = textfileIn(dir);
    const std::map<std::string, std::string> ar = {{"version", "v" + std::to_string(abi) + ".1"},
                                                   {"slurm_job_id", "4242"},
                                                   {"node", hostName()},
                                                   {"gpu", "unknown"},
                                                   {"comm_name", "dp group 0"},
                                                   {"n_nodes", "1"},
                                                   {"nranks", "8"},
                                                   {"collective", "AllReduce"},
                                                   {"message_size", "1-2MB"},
                                                   {"algo_proto", "RING_SIMPLE"}};
    std::vector<double> arBus;
    double arSum = 0;
    for (uint64_t ns : arNs) {
      arBus.push_back(busGbs("AllReduce", 1 << 20, 8, static_cast<double>(ns)));
      arSum += static_cast<double>(ns);
    }
    auto arTime = e.value("nccl_collective_exec_time_microseconds", ar);
    ASSERT_TRUE(arTime.has_value());
    EXPECT_DOUBLE_EQ(*arTime, arSum / 3 / 1000.0);  // 120 us
    auto arBw = e.value("nccl_bus_bandwidth_gbs", ar);
    ASSERT_TRUE(arBw.has_value());
    EXPECT_NEAR(*arBw, geometricMean(arBus), 1e-12 * *arBw);

    std::map<std::string, std::string> ag = ar;
    ag["collective"] = "AllGather";
    ag["message_size"] = "256-512KB";
    ag["algo_proto"] = "RING_LL128";
    EXPECT_DOUBLE_EQ(e.at("nccl_collective_exec_time_microseconds", ag), 50.0);
    EXPECT_NEAR(e.at("nccl_bus_bandwidth_gbs", ag),
                geometricMean({busGbs("AllGather", 262144, 8, 40'000),
                               busGbs("AllGather", 262144, 8, 60'000)}),
                1e-12);

    // Our series: cumulative, with communicator, rank, channels and decision.
    const std::map<std::string, std::string> ours = {{"comm", "0xc0ffee"},
                                                     {"rank", "3"},
                                                     {"collective", "AllReduce"},
                                                     {"channels", "4"},
                                                     {"decision", "NCCL"}};
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", ours), 3);
    EXPECT_EQ(e.at("nccl_pilot_collective_bytes_total", ours), 3 << 20);
    EXPECT_DOUBLE_EQ(e.at("nccl_pilot_collective_time_seconds_sum", ours), arSum * 1e-9);
    // 90 us and 120 us are at most 128 us, 150 us is not.
    auto le = [&](const char* bound) {
      auto labels = ours;
      labels["le"] = bound;
      return e.at("nccl_pilot_collective_time_seconds_bucket", labels);
    };
    EXPECT_EQ(le("6.4e-05"), 0);
    EXPECT_EQ(le("0.000128"), 2);
    EXPECT_EQ(le("0.000256"), 3);
    EXPECT_EQ(le("+Inf"), 3);
    EXPECT_NEAR(e.at("nccl_pilot_bus_bandwidth_bytes_per_second", ours),
                3.0 * (1 << 20) * 2 * 7 / 8 / arSum * 1e9, 1e-3);
    EXPECT_EQ(
        e.at("nccl_pilot_profiler_events_total", {{"comm", "0xc0ffee"}, {"outcome", "measured"}}),
        5);
    EXPECT_EQ(e.at("nccl_pilot_profiler_events_total", {{"comm", "0xc0ffee"}, {"outcome", "seen"}}),
              5);
    EXPECT_EQ(e.types["nccl_pilot_collective_time_seconds"], "histogram");
    EXPECT_EQ(e.types["nccl_bus_bandwidth_gbs"], "gauge");
    expectPromtoolAccepts(filesEnding(dir, ".prom")[0]);
    removeDir(dir);
  });
}

TEST_P(ProfilerAbi, TheCollStoppingLastIsAsExactAsTheKernelsStoppingLast) {
  const int abi = GetParam();
  runInChild([abi] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, abi, 0x5, "", 2, 16, 0);
    Collective c = allReduce(1 << 20, 8, 200'000, 0);
    void* h = comm.startColl(c);
    ASSERT_NE(h, nullptr);
    comm.kernels(h, c);  // all channels done while the Coll is still open
    comm.stopColl(h);
    Collective d = allReduce(1 << 20, 8, 300'000, 1);
    void* g = comm.startColl(d);
    // Interleaved: half the channels, the Coll's stop, the other half on another thread.
    for (int ch = 0; ch < 4; ++ch) comm.kernelChannel(g, ch, d.channels[ch]);
    comm.stopColl(g);
    std::thread proxy([&] {
      for (int ch = 4; ch < 8; ++ch) comm.kernelChannel(g, ch, d.channels[ch]);
    });
    proxy.join();
    comm.finalize();
    Exposition e = textfileIn(dir);
    EXPECT_DOUBLE_EQ(e.at("nccl_collective_exec_time_microseconds",
                          {{"comm_name", "unknown"}, {"message_size", "4-8MB"}}),
                     250.0);
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", {{"comm", "0x5"}}), 2);
    removeDir(dir);
  });
}

TEST_P(ProfilerAbi, KernelEventsWithoutALocalParentAreIgnored) {
  const int abi = GetParam();
  runInChild([abi] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, abi, 0x77, "pxn", 2, 16, 1);
    Collective c = allReduce(1 << 18, 2, 50'000, 0);
    void* h = comm.enqueue(c);
    comm.kernels(h, c);
    // The same handle again after its collective completed (a reused slot): stale.
    comm.kernelChannel(h, 0, c.channels[0]);
    // PXN: a proxy op of another process, whose parent lives in that process's memory, and a
    // kernel event pointing at such memory; a parent that is a pointer of the host's own.
    int foreignObject = 0;
    void* op = comm.startRaw(ncclProfileProxyOp, reinterpret_cast<void*>(0x7f0012345678ull), 0, 0,
                             getpid() + 1);
    EXPECT_EQ(op, nullptr);
    EXPECT_EQ(comm.startRaw(ncclProfileKernelCh, &foreignObject, 0, kBase), nullptr);
    EXPECT_EQ(comm.startRaw(ncclProfileKernelCh, reinterpret_cast<void*>(~uintptr_t{0}), 0, kBase),
              nullptr);
    // Stops and states for handles that are not ours are ignored too.
    comm.stopRaw(&foreignObject);
    comm.recordRaw(&foreignObject, ncclProfilerKernelChStop, kBase);
    // A second start for a channel it already reported.
    Collective d = allReduce(1 << 18, 2, 70'000, 1);
    void* g = comm.enqueue(d);
    void* k0 = comm.startRaw(ncclProfileKernelCh, g, 0, d.channels[0].startNs);
    EXPECT_EQ(comm.startRaw(ncclProfileKernelCh, g, 0, kBase), nullptr);
    comm.recordRaw(k0, ncclProfilerKernelChStop, d.channels[0].stopNs);
    comm.stopRaw(k0);
    comm.kernelChannel(g, 1, d.channels[1]);
    comm.finalize();
    Exposition e = textfileIn(dir);
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", {{"comm", "0x77"}}), 2);
    EXPECT_DOUBLE_EQ(e.at("nccl_collective_exec_time_microseconds", {{"comm_name", "pxn"}}), 60.0);
    EXPECT_EQ(e.at("nccl_pilot_profiler_orphan_events_total", {{"reason", "stale"}}), 1);
    // &foreignObject three times (start, stop, state) and the all-ones pointer.
    EXPECT_EQ(e.at("nccl_pilot_profiler_orphan_events_total", {{"reason", "foreign"}}), 4);
    EXPECT_EQ(e.at("nccl_pilot_profiler_events_total",
                   {{"comm", "0x77"}, {"outcome", "ignored_kernel_event"}}),
              1);
    removeDir(dir);
  });
}

INSTANTIATE_TEST_SUITE_P(V4toV6, ProfilerAbi, ::testing::Values(4, 5, 6),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "v" + std::to_string(i.param);
                         });

TEST(Profiler, SeveralCommunicatorsKeepTheirOwnFigures) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    // Two communicators with the same name (merged in Inspector's series, as Inspector does)
    // and a third; the same commId twice (two ranks of one process) stays apart by rank.
    Comm a(m, 5, 0xa, "tp", 1, 8, 0);
    Comm b(m, 5, 0xa, "tp", 1, 8, 1);
    Comm c(m, 5, 0xc, "dp", 2, 16, 0);
    std::vector<std::pair<Comm*, Collective>> work;
    for (int i = 0; i < 4; ++i) {
      work.push_back({&a, allReduce(1 << 16, 2, 10'000, i)});
      work.push_back({&b, allReduce(1 << 16, 2, 30'000, i)});
      work.push_back({&c, allReduce(1 << 16, 2, 50'000 + 1000 * i, i)});
    }
    std::vector<void*> handles;
    for (auto& [comm, coll] : work) handles.push_back(comm->enqueue(coll));
    std::thread proxyA([&] {
      for (size_t i = 0; i < work.size(); ++i)
        if (work[i].first != &c) work[i].first->kernels(handles[i], work[i].second);
    });
    std::thread proxyC([&] {
      for (size_t i = 0; i < work.size(); ++i)
        if (work[i].first == &c) c.kernels(handles[i], work[i].second);
    });
    proxyA.join();
    proxyC.join();
    // The export after a finalize holds every communicator still open and the closed one's
    // last figures; later ones have them in the summary only.
    const std::string before = textfileText(dir);
    a.finalize();
    waitForExport(dir, before);
    Exposition e = textfileIn(dir);
    EXPECT_DOUBLE_EQ(e.at("nccl_collective_exec_time_microseconds", {{"comm_name", "tp"}}), 20.0);
    EXPECT_DOUBLE_EQ(e.at("nccl_collective_exec_time_microseconds", {{"comm_name", "dp"}}), 51.5);
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", {{"comm", "0xa"}, {"rank", "0"}}), 4);
    EXPECT_DOUBLE_EQ(
        e.at("nccl_pilot_collective_time_seconds_sum", {{"comm", "0xa"}, {"rank", "1"}}), 120e-6);
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", {{"comm", "0xc"}}), 4);
    expectPromtoolAccepts(filesEnding(dir, ".prom")[0]);
    const std::string beforeB = textfileText(dir);
    b.finalize();
    waitForExport(dir, beforeB);
    c.finalize();
    // The last file: what the last communicator to close had; nothing of the others.
    Exposition after = textfileIn(dir);
    EXPECT_TRUE(after.find("nccl_pilot_collective_calls_total", {{"comm", "0xa"}}).empty());
    EXPECT_EQ(after.at("nccl_pilot_collective_calls_total", {{"comm", "0xc"}}), 4);
    EXPECT_TRUE(after.find("nccl_collective_exec_time_microseconds").empty());  // a quiet interval
    removeDir(dir);
  });
}

TEST(Profiler, TheNetPluginLibraryProfilesToo) {
  // NCCL takes the profiler from the net plugin's library when NCCL_PROFILER_PLUGIN is unset.
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS", "1"}, {"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_NET_MODULE);
    ASSERT_NE(m.v6, nullptr);
    Comm comm(m, 6, 0x1, "net", 1, 2, 0);
    Collective c = allReduce(1024, 1, 8'000, 0);
    comm.kernels(comm.enqueue(c), c);
    comm.finalize();
    EXPECT_DOUBLE_EQ(textfileIn(dir).at("nccl_collective_exec_time_microseconds"), 8.0);
    removeDir(dir);
  });
}

}  // namespace
}  // namespace fakeprof
