// Point-to-point traffic through the built module, in NCCL's event order for ABI v4, v5 and v6:
// Send and Recv operations in Inspector's P2P series and ours, an exchange with every other
// rank (one NCCL group of Send/Recv operations, as PyTorch's all_to_all_single runs) measured as
// one AlltoAll, groups that are no such exchange, NCCL's own AlltoAll collective, and the
// channel ids NCCL really reports (a task's channels need not start at 0). Expected figures are
// computed here from the GPU timestamps the test hands NCCL's events.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "child_process.h"
#include "host_test_support.h"
#include "text_file.h"

namespace fakeprof {
namespace {

using testsupport::runInChild;

constexpr uint64_t kP2pClock = 1'900'000'000'000'000'000ull;
constexpr size_t kMiB = 1 << 20;

P2p op(const char* func, int peer, size_t bytes, std::vector<ChannelTimes> channels,
       int firstChannel) {
  P2p p;
  p.func = func;
  p.peer = peer;
  p.count = bytes;  // ncclInt8, as PyTorch's all_to_all_single sends
  p.channels = std::move(channels);
  p.firstChannel = firstChannel;
  return p;
}

/// Rank `rank`'s Send and Recv with each peer in `peers`, 1 MiB each on one channel: operation
/// i starts at `start` + i us and takes 40 us + i x 0.5 us.
std::vector<P2p> exchange(const std::vector<int>& peers, uint64_t start) {
  std::vector<P2p> ops;
  for (const char* func : {"Send", "Recv"}) {
    for (int peer : peers) {
      const uint64_t i = ops.size();
      const uint64_t begin = start + i * 1'000;
      ops.push_back(op(func, peer, kMiB, {{begin, begin + 40'000 + i * 500, true}},
                       static_cast<int>(8 + i % 16)));
    }
  }
  return ops;
}

/// The span of `ops`: first kernel start to last kernel stop, as the AlltoAll's time.
double spanNs(const std::vector<P2p>& ops) {
  uint64_t first = UINT64_MAX, last = 0;
  for (const P2p& p : ops) {
    for (const ChannelTimes& t : p.channels) {
      first = std::min(first, t.startNs);
      last = std::max(last, t.stopNs);
    }
  }
  return static_cast<double>(last - first);
}

void runGroup(Comm& comm, const std::vector<P2p>& ops) {
  const std::vector<void*> handles = comm.enqueueGroup(ops);
  for (size_t i = 0; i < ops.size(); ++i) comm.kernels(handles[i], ops[i]);
}

using testsupport::slurp;

class P2pAbi : public ::testing::TestWithParam<int> {};

TEST_P(P2pAbi, SendAndRecvGetInspectorsSeriesAndOurs) {
  const int abi = GetParam();
  runInChild([abi] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, abi, 0x9a, "pp", 2, 8, 3);
    ASSERT_TRUE(comm.mask() & ncclProfileP2p);
    // Pipeline parallelism: activations to the next stage, gradients from it. The slowest
    // channel takes 49.9 us (channelsTaking: channel 0), on NCCL's P2P channels 8 and 9.
    runGroup(comm, {op("Send", 4, kMiB, channelsTaking(2, 49'900, kP2pClock), 8),
                    op("Recv", 2, kMiB, channelsTaking(2, 49'900, kP2pClock + 100'000), 8)});
    comm.finalize();
    Exposition e = textfileIn(dir);
    const double gbs = static_cast<double>(kMiB) / 49'900.0;  // bus factor 1: 21.01 GB/s
    for (const char* operation : {"Send", "Recv"}) {
      SCOPED_TRACE(operation);
      EXPECT_NEAR(e.at("nccl_p2p_bus_bandwidth_gbs",
                       {{"p2p_operation", operation}, {"comm_name", "pp"}, {"nranks", "8"}}),
                  gbs, gbs * 1e-9);
      EXPECT_NEAR(e.at("nccl_p2p_exec_time_microseconds",
                       {{"p2p_operation", operation}, {"message_size", "1-2MB"}}),
                  49.9, 1e-9);
      EXPECT_EQ(
          e.at("nccl_pilot_p2p_calls_total", {{"p2p_operation", operation}, {"channels", "2"}}), 1);
      EXPECT_EQ(e.at("nccl_pilot_p2p_bytes_total", {{"p2p_operation", operation}}), kMiB);
      EXPECT_NEAR(
          e.at("nccl_pilot_p2p_bus_bandwidth_bytes_per_second", {{"p2p_operation", operation}}),
          gbs * 1e9, gbs);
      EXPECT_EQ(e.at("nccl_pilot_p2p_time_seconds_count", {{"p2p_operation", operation}}), 1);
      EXPECT_EQ(e.at("nccl_pilot_p2p_peers", {{"comm", "0x9a"}, {"p2p_operation", operation}}), 1);
    }
    // Not collectives: neither Inspector's collective series nor ours hold them.
    EXPECT_TRUE(e.find("nccl_bus_bandwidth_gbs").empty());
    EXPECT_TRUE(e.find("nccl_pilot_collective_calls_total").empty());
    EXPECT_EQ(e.at("nccl_pilot_profiler_p2p_events_total", {{"outcome", "measured"}}), 2);
    EXPECT_EQ(e.at("nccl_pilot_profiler_p2p_events_total", {{"outcome", "seen"}}), 2);
    EXPECT_EQ(e.at("nccl_pilot_profiler_events_total", {{"outcome", "seen"}}), 0);
    EXPECT_EQ(e.at("nccl_pilot_p2p_groups_total", {{"outcome", "partial"}}), 1);
    EXPECT_EQ(e.at("nccl_pilot_profiler_slots_in_use"), 0);
    EXPECT_EQ(e.at("nccl_pilot_profiler_groups_in_use"), 0);
    removeDir(dir);
  });
}

TEST_P(P2pAbi, AGroupReachingEveryOtherRankIsOneAlltoAll) {
  const int abi = GetParam();
  runInChild([abi] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, abi, 0xa2a, "ep", 1, 8, 3);
    // Rank 3 of 8 exchanges 1 MiB with each of its 7 peers; then again with its own copy too,
    // which crosses no link: the same bytes, one more operation in the span.
    const std::vector<P2p> first = exchange({0, 1, 2, 4, 5, 6, 7}, kP2pClock);
    const std::vector<P2p> second = exchange({0, 1, 2, 3, 4, 5, 6, 7}, kP2pClock + 10'000'000);
    runGroup(comm, first);
    runGroup(comm, second);
    comm.finalize();
    Exposition e = textfileIn(dir);
    const std::map<std::string, std::string> alltoall = {
        {"comm", "0xa2a"}, {"collective", "AlltoAll"}, {"algo_proto", "P2P"}};
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", alltoall), 2);
    // Per peer, as ncclAlltoAll's count means: 1 MiB each call.
    EXPECT_EQ(e.at("nccl_pilot_collective_bytes_total", alltoall), 2.0 * kMiB);
    EXPECT_NEAR(e.at("nccl_pilot_collective_time_seconds_sum", alltoall),
                (spanNs(first) + spanNs(second)) * 1e-9, 1e-15);
    // Bus bytes: the 7 MiB sent to the others, over each exchange's span.
    const double gbs1 = 7.0 * kMiB / spanNs(first), gbs2 = 7.0 * kMiB / spanNs(second);
    const double inspector = std::sqrt(gbs1 * gbs2);  // Inspector's geometric mean
    EXPECT_NEAR(e.at("nccl_bus_bandwidth_gbs",
                     {{"collective", "AlltoAll"}, {"algo_proto", "P2P"}, {"nranks", "8"}}),
                inspector, inspector * 1e-9);
    EXPECT_NEAR(e.at("nccl_collective_exec_time_microseconds", {{"collective", "AlltoAll"}}),
                (spanNs(first) + spanNs(second)) / 2 / 1000, 1e-9);
    EXPECT_EQ(e.at("nccl_pilot_p2p_groups_total", {{"outcome", "alltoall"}}), 2);
    EXPECT_EQ(e.at("nccl_pilot_p2p_groups_total", {{"outcome", "partial"}}), 0);
    // Each operation is in the Send/Recv series too, as Inspector records it.
    EXPECT_EQ(e.at("nccl_pilot_p2p_calls_total", {{"p2p_operation", "Send"}}), 15);
    EXPECT_EQ(e.at("nccl_pilot_p2p_peers", {{"p2p_operation", "Send"}}), 7);
    EXPECT_EQ(e.at("nccl_pilot_p2p_peers", {{"p2p_operation", "Recv"}}), 7);
    EXPECT_EQ(e.at("nccl_pilot_profiler_groups_in_use"), 0);

    // The summary: an AlltoAll collective line, Send/Recv lines, the communicator's P2P counts.
    auto summaries = filesEnding(dir, ".jsonl");
    ASSERT_EQ(summaries.size(), 1u);
    const std::string text = slurp(summaries[0]);
    EXPECT_NE(text.find("\"kind\":\"collective\",\"comm\":\"0xa2a\""), std::string::npos);
    EXPECT_NE(text.find("\"collective\":\"AlltoAll\",\"message_size\":\"1-2MB\","
                        "\"size_bucket_bytes\":1048576,\"algo\":\"P2P\""),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("\"kind\":\"p2p\""), std::string::npos);
    EXPECT_NE(text.find("\"p2p_operation\":\"Recv\",\"message_size\":\"1-2MB\""),
              std::string::npos);
    EXPECT_NE(text.find("\"peers\":{\"Send\":7,\"Recv\":7},\"groups\":{\"alltoall\":2,"
                        "\"partial\":0,\"untracked\":0}"),
              std::string::npos)
        << text;
    removeDir(dir);
  });
}

TEST_P(P2pAbi, GroupsThatMissAPeerAreNoAlltoAll) {
  const int abi = GetParam();
  runInChild([abi] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, abi, 0xb3, "ep", 1, 8, 3);
    // Three peers only.
    runGroup(comm, exchange({1, 2, 4}, kP2pClock));
    // Seven operations each way, but peer 5 twice and peer 6 never.
    runGroup(comm, exchange({0, 1, 2, 4, 5, 5, 7}, kP2pClock + 10'000'000));
    // Every peer, but one Recv's channel stopped without a GPU time: the span is unknown.
    std::vector<P2p> untimed = exchange({0, 1, 2, 4, 5, 6, 7}, kP2pClock + 20'000'000);
    untimed.back().channels[0].recordStop = false;
    runGroup(comm, untimed);
    comm.finalize();
    Exposition e = textfileIn(dir);
    EXPECT_TRUE(e.find("nccl_pilot_collective_calls_total", {{"collective", "AlltoAll"}}).empty());
    EXPECT_EQ(e.at("nccl_pilot_p2p_groups_total", {{"outcome", "partial"}}), 3);
    EXPECT_EQ(e.at("nccl_pilot_p2p_groups_total", {{"outcome", "alltoall"}}), 0);
    EXPECT_EQ(e.at("nccl_pilot_profiler_p2p_events_total", {{"outcome", "no_gpu_time"}}), 1);
    EXPECT_EQ(e.at("nccl_pilot_profiler_p2p_events_total", {{"outcome", "measured"}}), 6 + 14 + 13);
    removeDir(dir);
  });
}

TEST_P(P2pAbi, AnExchangeNcclCutIntoPlansIsOneAlltoAllFromV5) {
  // Too much work for one plan (NCCL: about 254 work batches of up to 8 operations each), so
  // NCCL launches the group as three plans, each with its own Group event; from v5 the
  // GroupApi event and each operation's P2pApi tie them together. v4 (NCCL 2.27) sends nothing
  // that does: each plan is judged on its own, and none reaches every peer.
  const int abi = GetParam();
  runInChild([abi] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, abi, 0xc07, "ep", 1, 8, 3);
    const std::vector<P2p> ops = exchange({0, 1, 2, 4, 5, 6, 7}, kP2pClock);
    const std::vector<void*> handles = comm.enqueueGroup(ops, 3);
    for (size_t i = 0; i < ops.size(); ++i) comm.kernels(handles[i], ops[i]);
    comm.finalize();
    Exposition e = textfileIn(dir);
    const std::map<std::string, std::string> alltoall = {{"collective", "AlltoAll"},
                                                         {"algo_proto", "P2P"}};
    if (abi >= 5) {
      EXPECT_EQ(e.at("nccl_pilot_p2p_groups_total", {{"outcome", "alltoall"}}), 1);
      EXPECT_EQ(e.at("nccl_pilot_p2p_groups_total", {{"outcome", "partial"}}), 0);
      EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", alltoall), 1);
      EXPECT_NEAR(e.at("nccl_pilot_collective_time_seconds_sum", alltoall), spanNs(ops) * 1e-9,
                  1e-15);
    } else {
      EXPECT_EQ(e.at("nccl_pilot_p2p_groups_total", {{"outcome", "alltoall"}}), 0);
      EXPECT_EQ(e.at("nccl_pilot_p2p_groups_total", {{"outcome", "partial"}}), 3);
    }
    EXPECT_EQ(e.at("nccl_pilot_profiler_p2p_events_total", {{"outcome", "measured"}}), 14);
    EXPECT_EQ(e.at("nccl_pilot_profiler_groups_in_use"), 0);
    removeDir(dir);
  });
}

INSTANTIATE_TEST_SUITE_P(V4toV6, P2pAbi, ::testing::Values(4, 5, 6),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "v" + std::to_string(i.param);
                         });

TEST(P2p, NcclsOwnAlltoAllIsACollectiveOfItsAlgorithm) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 6, 0xc4, "ep", 1, 8, 3);
    Collective c;
    c.func = "AlltoAll";  // ncclAlltoAll (NCCL 2.28+): count is per peer
    c.count = kMiB / 4;
    c.channels = channelsTaking(4, 100'000, kP2pClock);
    comm.kernels(comm.enqueue(c), c);
    comm.finalize();
    Exposition e = textfileIn(dir);
    const std::map<std::string, std::string> key = {{"collective", "AlltoAll"},
                                                    {"algo_proto", "RING_SIMPLE"}};
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", key), 1);
    EXPECT_EQ(e.at("nccl_pilot_collective_bytes_total", key), kMiB);
    const double gbs = 7.0 * kMiB / 100'000.0;
    EXPECT_NEAR(e.at("nccl_bus_bandwidth_gbs", key), gbs, gbs * 1e-9);
    removeDir(dir);
  });
}

TEST(P2p, ATasksChannelsAreTheIdsNcclRanThemOn) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, 0xd5, "dp", 1, 8, 0);
    // A collective sharing its plan runs on channels 6 and 7 (enqueue.cc: channelLo moves on
    // with each collective of the plan).
    Collective c;
    c.func = "AllReduce";
    c.count = 1 << 18;
    c.channels = channelsTaking(2, 30'000, kP2pClock);
    c.firstChannel = 6;
    comm.kernels(comm.enqueue(c), c);
    // Another announces 2 channels and reports 3: the third is one too many, a repeat of a
    // channel is one too.
    Collective d = c;
    d.channels = channelsTaking(2, 20'000, kP2pClock + 1'000'000);
    void* h = comm.enqueue(d);
    void* first = comm.startRaw(ncclProfileKernelCh, h, 2, d.channels[0].startNs);
    EXPECT_EQ(comm.startRaw(ncclProfileKernelCh, h, 2, d.channels[0].startNs), nullptr);
    void* second = comm.startRaw(ncclProfileKernelCh, h, 5, d.channels[1].startNs);
    EXPECT_EQ(comm.startRaw(ncclProfileKernelCh, h, 9, d.channels[1].startNs), nullptr);
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    comm.recordRaw(first, ncclProfilerKernelChStop, d.channels[0].stopNs);
    comm.recordRaw(second, ncclProfilerKernelChStop, d.channels[1].stopNs);
    comm.stopRaw(first);
    comm.stopRaw(second);
    comm.finalize();
    Exposition e = textfileIn(dir);
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", {{"collective", "AllReduce"}}), 2);
    EXPECT_NEAR(e.at("nccl_pilot_collective_time_seconds_sum"), 50e-6, 1e-15);
    EXPECT_EQ(e.at("nccl_pilot_profiler_events_total", {{"outcome", "ignored_kernel_event"}}), 2);
    EXPECT_EQ(e.at("nccl_pilot_profiler_slots_in_use"), 0);
    removeDir(dir);
  });
}

TEST(P2p, SamplingTakesWholeGroupsAndTheMinimumSizeEachOperation) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir},
            {"NCCL_PILOT_METRICS_SAMPLE", "2"},
            {"NCCL_PILOT_METRICS_MIN_BYTES", "64K"}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, 0xe6, "ep", 1, 4, 0);
    // This thread's groups 1..5 are exchanges; the even ones are measured.
    for (uint64_t i = 0; i < 5; ++i)
      runGroup(comm, exchange({1, 2, 3}, kP2pClock + i * 10'000'000));
    // Group 6 exchanges 4 KiB messages: each operation is below the minimum size.
    std::vector<P2p> small = exchange({1, 2, 3}, kP2pClock + 60'000'000);
    for (P2p& p : small) p.count = 4096;
    runGroup(comm, small);
    comm.finalize();
    Exposition e = textfileIn(dir);
    EXPECT_EQ(e.at("nccl_pilot_p2p_groups_total", {{"outcome", "alltoall"}}), 2);
    EXPECT_EQ(e.at("nccl_pilot_p2p_groups_total", {{"outcome", "partial"}}), 1);
    EXPECT_EQ(e.at("nccl_pilot_profiler_p2p_events_total", {{"outcome", "sampled_out"}}), 3 * 6);
    EXPECT_EQ(e.at("nccl_pilot_profiler_p2p_events_total", {{"outcome", "below_min_bytes"}}), 6);
    EXPECT_EQ(e.at("nccl_pilot_profiler_p2p_events_total", {{"outcome", "measured"}}), 2 * 6);
    EXPECT_EQ(e.at("nccl_pilot_profiler_p2p_events_total", {{"outcome", "seen"}}), 6 * 6);
    EXPECT_EQ(e.at("nccl_pilot_p2p_peers", {{"p2p_operation", "Send"}}), 3);
    removeDir(dir);
  });
}

}  // namespace
}  // namespace fakeprof
