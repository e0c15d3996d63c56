// What the profiler keeps and exports, through the built module (ABI v5): sampling and the
// minimum size, channels without GPU time, the key cap, the table's decisions and their drift,
// Inspector's per-interval series, the JSON-lines summary, HTTP /metrics, the GPU label,
// unload and reload, many threads at once (the TSan build runs this too), and the calibration
// lines `nccl-pilot fit` reads.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "child_process.h"
#include "host_test_support.h"

namespace fakeprof {
namespace {

using testsupport::runInChild;

constexpr uint64_t kExportClock = 1'800'000'000'000'000'000ull;

Collective collective(const char* func, size_t count, int channels, uint64_t ns, uint64_t seq,
                      const char* algo = "RING", const char* proto = "SIMPLE") {
  Collective c;
  c.func = func;
  c.count = count;
  c.algo = algo;
  c.proto = proto;
  c.seqNumber = seq;
  c.channels = channelsTaking(channels, ns, kExportClock + seq * 1'000'000);
  return c;
}

void run(Comm& comm, const Collective& c) {
  comm.kernels(comm.enqueue(c), c);
}

TEST(ProfilerExport, SamplingAndTheMinimumSizeSkipWhatTheySay) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir},
            {"NCCL_PILOT_METRICS_SAMPLE", "4"},
            {"NCCL_PILOT_METRICS_MIN_BYTES", "64K"}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, 0x42, "s", 1, 4, 0);
    for (uint64_t seq = 0; seq < 16; ++seq)
      run(comm, collective("AllReduce", 65536, 2, 9'000, seq));
    for (uint64_t seq = 16; seq < 24; ++seq)
      run(comm, collective("AllReduce", 1024, 2, 5'000, seq));
    run(comm, collective("AllReduce", 0, 2, 5'000, 100));
    comm.finalize();
    Exposition e = textfileIn(dir);
    auto outcome = [&](const char* o) {
      return e.at("nccl_pilot_profiler_events_total", {{"comm", "0x42"}, {"outcome", o}});
    };
    EXPECT_EQ(outcome("seen"), 25);
    EXPECT_EQ(outcome("measured"), 4);  // seq 0, 4, 8, 12
    EXPECT_EQ(outcome("sampled_out"), 12);
    EXPECT_EQ(outcome("below_min_bytes"), 9);  // eight 4 KiB and one of 0 bytes
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", {{"comm", "0x42"}}), 4);
    removeDir(dir);
  });
}

TEST(ProfilerExport, AChannelWithoutGpuTimeMakesTheCollectiveUntimed) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, 0x9, "u", 1, 2, 0);
    Collective c = collective("AllReduce", 4096, 3, 20'000, 0);
    c.channels[1].recordStop = false;  // stopped without the KernelChStop state
    run(comm, c);
    Collective d = collective("AllReduce", 4096, 3, 20'000, 1);
    d.channels[2].stopNs = d.channels[2].startNs;  // a GPU stop no later than the start
    run(comm, d);
    run(comm, collective("AllReduce", 4096, 3, 30'000, 2));
    comm.finalize();
    Exposition e = textfileIn(dir);
    EXPECT_EQ(e.at("nccl_pilot_profiler_events_total", {{"outcome", "no_gpu_time"}}), 2);
    EXPECT_DOUBLE_EQ(e.at("nccl_collective_exec_time_microseconds"), 30.0);
    removeDir(dir);
  });
}

TEST(ProfilerExport, TheTimeIsTheLongestChannelNotTheSpanOfAll) {
  // As NCCL's Inspector: channels start when the proxy sees them, so their starts are not one
  // instant; each channel's own stop - start is the kernel time it reports.
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, 0x5a, "span", 1, 2, 0);
    Collective c = collective("AllReduce", 4096, 2, 1, 0);
    c.channels[0] = {kExportClock, kExportClock + 100'000, true};
    c.channels[1] = {kExportClock + 30'000, kExportClock + 110'000, true};  // ends last, runs 80 us
    run(comm, c);
    comm.finalize();
    EXPECT_DOUBLE_EQ(textfileIn(dir).at("nccl_collective_exec_time_microseconds"), 100.0);
    removeDir(dir);
  });
}

TEST(ProfilerExport, KeysPastTheCapShareOneOtherSeries) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, 0xcafe, "k", 1, 8, 0);
    // 136 distinct keys: 34 sizes x 4 channel counts; 128 have their own series.
    for (int i = 0; i < 136; ++i) {
      run(comm, collective("AllReduce", size_t{1} << (i / 4), 1 + i % 4, 10'000, i));
    }
    comm.finalize();
    Exposition e = textfileIn(dir);
    EXPECT_EQ(e.find("nccl_pilot_collective_calls_total", {{"comm", "0xcafe"}}).size(), 129u);
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", {{"collective", "other"}}), 8);
    expectPromtoolAccepts(filesEnding(dir, ".prom")[0]);
    removeDir(dir);
  });
}

TEST(ProfilerExport, DecisionsAreCreditedToTheTableAndDriftWarnsOncePerBand) {
  runInChild([] {
    const std::string dir = scratchDir();
    const std::string table = dir + "/t.table";
    std::ofstream(table) << "allreduce size=0..64K algo=tree proto=ll expect=4K:20|64K:80\n"
                            "allreduce size=64K.. algo=ring proto=simple channels=4\n";
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}, {"NCCL_PILOT_TUNER_TABLE", table}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, 0xd1, "t", 1, 8, 0);
    // 16 KiB: halfway between 4K and 64K in log size, so 40 us expected; it takes 50 us.
    for (int i = 0; i < 4; ++i)
      run(comm, collective("AllReduce", 4096, 2, 50'000, i, "TREE", "LL"));
    // NCCL ran Ring/LL at 16 KiB: not the rule's choice.
    run(comm, collective("AllReduce", 4096, 2, 10'000, 9, "RING", "LL"));
    // 1 MiB on 4 channels: rule 2.
    run(comm, collective("AllReduce", 262144, 4, 100'000, 10));
    comm.finalize();
    Exposition e = textfileIn(dir);
    const std::map<std::string, std::string> tree = {{"algo_proto", "TREE_LL"},
                                                     {"decision", "rule 1 (line 1)"}};
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", tree), 4);
    EXPECT_NEAR(e.at("nccl_pilot_expected_time_seconds", tree), 40e-6, 1e-15);
    EXPECT_NEAR(e.at("nccl_pilot_drift_ratio", tree), 0.8, 1e-12);
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total",
                   {{"algo_proto", "RING_LL"}, {"decision", "NCCL"}}),
              1);
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total", {{"decision", "rule 2 (line 2)"}}), 1);
    EXPECT_TRUE(e.find("nccl_pilot_drift_ratio", {{"decision", "rule 2 (line 2)"}}).empty());
    removeDir(dir);
  });
}

TEST(ProfilerExport, DriftBelowTheThresholdWarnsOnce) {
  runInChild([] {
    const std::string dir = scratchDir();
    const std::string table = dir + "/t.table";
    std::ofstream(table) << "allgather size=0.. per-rank algo=ring proto=ll128 expect=1M:100\n";
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir},
            {"NCCL_PILOT_TUNER_TABLE", table},
            {"NCCL_PILOT_METRICS_DRIFT", "0.1"},
            {"NCCL_PILOT_METRICS_DRIFT_CALLS", "3"},
            {"NCCL_PILOT_METRICS_INTERVAL_S", "1"}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, 0xd2, "ag", 2, 8, 0);
    // 2 MiB per rank: above the last point the bandwidth holds, so 200 us expected.
    for (int i = 0; i < 3; ++i) {
      run(comm, collective("AllGather", 524288, 2, 250'000, i, "RING", "LL128"));
    }
    // Two or more exports every second, and the last one at finalize: one warning.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    comm.finalize();
    std::vector<std::string> warnings;
    for (const std::string& l : loggedLines()) {
      if (l.find("WARN PROFILER/Pilot: drift:") == 0) warnings.push_back(l);
    }
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("comm 0xd2 rank 0 AllGather under rule 1 (line 1) (0.. per rank): "
                               "live bus bandwidth is 80% of the calibrated one over 3 calls "
                               "(250 us per call, 200 us expected)"),
              std::string::npos)
        << warnings[0];
    EXPECT_NEAR(textfileIn(dir).at("nccl_pilot_drift_ratio"), 0.8, 1e-12);
    removeDir(dir);
  });
}

TEST(ProfilerExport, InspectorSeriesCoverTheLastIntervalOursTheWholeRun) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}, {"NCCL_PILOT_METRICS_INTERVAL_S", "1"}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 6, 0x1e, "iv", 1, 2, 0);
    for (int i = 0; i < 3; ++i) run(comm, collective("Broadcast", 1 << 20, 2, 100'000, i));
    // Wait for the exporter to write those, then run more, slower ones.
    Exposition first;
    for (int tries = 0; tries < 40; ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      first = textfileIn(dir);
      if (first.value("nccl_collective_exec_time_microseconds")) break;
    }
    ASSERT_TRUE(first.value("nccl_collective_exec_time_microseconds").has_value());
    EXPECT_DOUBLE_EQ(first.at("nccl_collective_exec_time_microseconds"), 100.0);
    for (int i = 3; i < 5; ++i) run(comm, collective("Broadcast", 1 << 20, 2, 400'000, i));
    comm.finalize();
    Exposition e = textfileIn(dir);
    EXPECT_DOUBLE_EQ(e.at("nccl_collective_exec_time_microseconds"), 400.0);
    EXPECT_NEAR(e.at("nccl_bus_bandwidth_gbs"), 4.0 * (1 << 20) / 400'000 * 1.0, 1e-12);
    EXPECT_EQ(e.at("nccl_pilot_collective_calls_total"), 5);
    EXPECT_DOUBLE_EQ(e.at("nccl_pilot_collective_time_seconds_sum"), 1100e-6);
    removeDir(dir);
  });
}

TEST(ProfilerExport, TheSummaryHoldsEveryCommunicatorWithItsFinalFigures) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    {
      Comm early(m, 5, 0xe1, "early", 1, 4, 2);
      run(early, collective("ReduceScatter", 1 << 16, 2, 30'000, 0));
    }  // finalized: gone from the textfile, kept in the summary
    Comm late(m, 5, 0xe2, "late \"quoted\"", 1, 4, 2);
    run(late, collective("AllReduce", 1 << 16, 2, 10'000, 0));
    late.finalize();
    auto files = filesEnding(dir, ".jsonl");
    ASSERT_EQ(files.size(), 1u);
    const std::string summary = readWholeFile(files[0]);
    EXPECT_NE(summary.find("\"kind\":\"process\""), std::string::npos);
    EXPECT_NE(summary.find("\"comm\":\"0xe1\",\"comm_name\":\"early\",\"rank\":2"),
              std::string::npos);
    EXPECT_NE(summary.find("\"comm_name\":\"late \\\"quoted\\\"\""), std::string::npos);
    EXPECT_NE(summary.find("\"collective\":\"ReduceScatter\",\"message_size\":\"256-512KB\""),
              std::string::npos);
    EXPECT_NE(summary.find("\"calls\":1,\"bytes\":262144,\"time_us\":{\"sum\":30,\"min\":30,"
                           "\"max\":30,\"p50\":30,\"p99\":30}"),
              std::string::npos)
        << summary;
    EXPECT_EQ(textfileIn(dir).find("nccl_pilot_collective_calls_total", {{"comm", "0xe1"}}).size(),
              0u);
    removeDir(dir);
  });
}

TEST(ProfilerExport, FinishedCommunicatorsFoldIntoOneRecordAndAnAbortGivesItsSlotsBack) {
  // A weight-sync group rebuilt at every sync: each one finalized, the third torn down with a
  // Broadcast whose kernels never report (an abort), which then report after the finalize.
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    Module m(PILOT_PROFILER_MODULE);
    Comm world(m, 5, 0x1, "world", 2, 8, 3);
    void* late = nullptr;
    Collective lateCall;
    for (uint64_t sync = 0; sync < 4; ++sync) {
      Comm c(m, 5, 0x500 + sync, "weight_sync", 2, 8, 3);
      for (uint64_t seq = 0; seq < 3; ++seq) {
        run(c, collective("Broadcast", 4 << 20, 4, 400'000 + 10'000 * sync, sync * 10 + seq));
      }
      if (sync == 2) {
        lateCall = collective("Broadcast", 4 << 20, 4, 500'000, 99);
        late = c.enqueue(lateCall);
      }
    }
    world.kernels(late, lateCall);  // after its communicator's finalize: stale, nothing counts
    world.finalize();
    Exposition e = textfileIn(dir);
    EXPECT_EQ(e.at("nccl_pilot_profiler_slots_in_use"), 0);
    EXPECT_EQ(e.at("nccl_pilot_profiler_orphan_events_total", {{"reason", "stale"}}),
              4);  // its channels
    EXPECT_EQ(e.at("nccl_pilot_profiler_communicators_finished_total"), 5);
    EXPECT_EQ(e.at("nccl_pilot_profiler_communicators"), 0);
    auto files = filesEnding(dir, ".jsonl");
    ASSERT_EQ(files.size(), 1u);
    const std::string summary = readWholeFile(files[0]);
    // One record for the four: 12 Broadcasts measured, the aborted one counted, times exact.
    EXPECT_NE(summary.find("\"comm_name\":\"weight_sync\",\"rank\":3,\"nranks\":8,\"n_nodes\":2,"),
              std::string::npos);
    EXPECT_NE(summary.find("\"folded\":4,\"first_comm\":\"0x500\",\"last_comm\":\"0x503\","
                           "\"seen\":13,\"measured\":12"),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find("\"finalized_in_flight\":1}"), std::string::npos);
    EXPECT_NE(summary.find("\"collective\":\"Broadcast\",\"message_size\":\"16-32MB\""),
              std::string::npos);
    EXPECT_NE(summary.find("\"calls\":12,\"bytes\":201326592,\"time_us\":{\"sum\":4980,"
                           "\"min\":400,\"max\":430,"),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find("\"communicators\":{\"live\":0,\"finished\":5,\"records\":2,"
                           "\"dropped\":0,\"dropped_calls\":0}"),
              std::string::npos)
        << summary;
    size_t records = 0;
    for (size_t at = summary.find("\"kind\":\"communicator\""); at != std::string::npos;
         at = summary.find("\"kind\":\"communicator\"", at + 1)) {
      ++records;
    }
    EXPECT_EQ(records, 2u);
    removeDir(dir);
  });
}

TEST(ProfilerExport, CalibrationLinesKeepExactSizesAndTwoPercentBinsPerConfiguration) {
  runInChild([] {
    const std::string dir = scratchDir();
    const std::string table = dir + "/t.table";
    std::ofstream(table) << "allreduce size=1M..1M algo=tree proto=ll128\n";
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}, {"NCCL_PILOT_TUNER_TABLE", table}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, 0xca1, "fit", 2, 8, 3);
    // Two sizes inside one power-of-two bucket, and a second algorithm at one of them: three
    // calibration keys where the collective series has two.
    uint64_t seq = 0;
    for (int i = 0; i < 40; ++i) {
      run(comm, collective("AllReduce", 262144, 2, 49'900 + 10 * (i % 5), seq++));
      run(comm, collective("AllReduce", 300000, 2, 60'000, seq++));
    }
    for (int i = 0; i < 4; ++i) {
      run(comm, collective("AllReduce", 262144, 2, 40'000, seq++, "TREE", "LL128"));
    }
    run(comm, collective("AllGather", 1000, 2, 9'000, seq++));
    comm.finalize();
    auto files = filesEnding(dir, ".jsonl");
    ASSERT_EQ(files.size(), 1u);
    const std::string summary = readWholeFile(files[0]);
    auto count = [&](const std::string& needle) {
      size_t n = 0;
      for (size_t at = summary.find(needle); at != std::string::npos;
           at = summary.find(needle, at + 1)) {
        ++n;
      }
      return n;
    };
    EXPECT_EQ(count("\"kind\":\"calibration\""), 4u) << summary;
    EXPECT_EQ(count("\"kind\":\"collective\",\"comm\":\"0xca1\""), 3u);
    // The size axis is NCCL's nBytes (AllGather: over the 8 ranks), the calls exact.
    EXPECT_NE(summary.find("\"collective\":\"AllReduce\",\"bytes\":1048576,\"message_bytes\":"
                           "1048576,\"algo\":\"RING\",\"proto\":\"SIMPLE\",\"channels\":2,"
                           "\"decision\":\"NCCL\",\"calls\":40"),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find("\"bytes\":1200000,\"message_bytes\":1200000"), std::string::npos);
    EXPECT_NE(summary.find("\"algo\":\"TREE\",\"proto\":\"LL128\",\"channels\":2,"
                           "\"decision\":\"rule 1 (line 1)\",\"calls\":4,"
                           "\"time_us\":{\"sum\":160,\"mean\":40,\"median\":40,"),
              std::string::npos)
        << summary;
    EXPECT_NE(summary.find("\"collective\":\"AllGather\",\"bytes\":32000,\"message_bytes\":4000"),
              std::string::npos);
    // 49.90 .. 49.94 us: one or two 2% bins, and the median within them.
    const size_t line =
        summary.find("\"bytes\":1048576,\"message_bytes\":1048576,\"algo\":\"RING\"");
    const std::string rest = summary.substr(line, summary.find('\n', line) - line);
    const size_t median = rest.find("\"median\":");
    ASSERT_NE(median, std::string::npos);
    const double us = std::stod(rest.substr(median + 9));
    EXPECT_GE(us, 49.9);
    EXPECT_LE(us, 49.94);
    EXPECT_NE(rest.find("\"bin_ratio\":1.02,\"bins\":[["), std::string::npos) << rest;
    EXPECT_NE(summary.find("\"calibration_overflow\":0"), std::string::npos);
    EXPECT_EQ(count("\"table_sha256\":\"\""), 0u) << "every line names the table";
    removeDir(dir);
  });
}

/// GET `target` from 127.0.0.1:port; the whole response.
std::string httpGet(int port, const std::string& target) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return "";
  }
  const std::string request = "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n";
  send(fd, request.data(), request.size(), 0);
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = recv(fd, buffer, sizeof buffer, 0)) > 0) response.append(buffer, n);
  close(fd);
  return response;
}

int freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t length = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length);
  close(fd);
  return ntohs(a.sin_port);
}

TEST(ProfilerExport, HttpServesTheTextfileOnLoopbackPlusTheLocalRank) {
  runInChild([] {
    const int base = freePort();
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS", "1"},
            {"NCCL_PILOT_METRICS_DIR", dir},
            {"NCCL_PILOT_METRICS_INTERVAL_S", "1"},
            {"NCCL_PILOT_METRICS_PORT", std::to_string(base - 1)},
            {"LOCAL_RANK", "1"}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, 0x4e7, "http", 1, 2, 1);
    ASSERT_NE(comm.context(), nullptr);
    run(comm, collective("AllReduce", 1 << 14, 1, 25'000, 0));
    std::string file;
    for (int tries = 0; tries < 40 && file.find("exec_time_microseconds{") == std::string::npos;
         ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      file = readWholeFile(filesEnding(dir, ".prom")[0]);
    }
    const std::string response = httpGet(base, "/metrics");
    EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
    EXPECT_NE(response.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
    const size_t body = response.find("\r\n\r\n");
    ASSERT_NE(body, std::string::npos);
    EXPECT_EQ(response.substr(body + 4), file);
    EXPECT_EQ(httpGet(base, "/other").rfind("HTTP/1.1 404", 0), 0u);
    comm.finalize();
    removeDir(dir);
  });
}

TEST(ProfilerExport, APortAloneDoesNotTurnMetricsOn) {
  runInChild([] {
    setEnv({{"NCCL_PILOT_METRICS_PORT", std::to_string(freePort())}});
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, 0x4e8, "p", 1, 2, 0);
    EXPECT_EQ(comm.mask(), 0);
  });
}

TEST(ProfilerExport, TheGpuLabelComesFromTheCudaDriverTheProcessLoaded) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}});
    // A stand-in driver with the soname libcuda.so.1 whose current context is on device 3.
    void* driver = dlopen(PILOT_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_GLOBAL);
    ASSERT_NE(driver, nullptr) << dlerror();
    Module m(PILOT_PROFILER_MODULE);
    Comm comm(m, 5, 0x6, "g", 1, 2, 0);
    run(comm, collective("AllReduce", 1 << 14, 1, 25'000, 0));
    comm.finalize();
    Exposition e = textfileIn(dir);
    EXPECT_EQ(e.find("nccl_collective_exec_time_microseconds", {{"gpu", "GPU3"}}).size(), 1u);
    removeDir(dir);
  });
}

TEST(ProfilerExport, UnloadedAndLoadedAgainLikeNcclDoes) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}, {"NCCL_PILOT_METRICS_INTERVAL_S", "1"}});
    for (int round = 0; round < 3; ++round) {
      Module m(PILOT_PROFILER_MODULE);
      {
        Comm comm(m, 5, 0x100 + round, "r", 1, 2, 0);
        run(comm, collective("AllReduce", 1 << 14, 1, 25'000, 0));
      }
      m.unload();  // the exporter thread must be gone by now
      Exposition e = textfileIn(dir);
      EXPECT_EQ(
          e.at("nccl_pilot_collective_calls_total", {{"comm", "0x10" + std::to_string(round)}}), 1);
    }
    removeDir(dir);
  });
}

TEST(ProfilerExport, ManyThreadsManyCommunicatorsAndTheExporterAtOnce) {
  runInChild([] {
    const std::string dir = scratchDir();
    setEnv({{"NCCL_PILOT_METRICS_DIR", dir}, {"NCCL_PILOT_METRICS_INTERVAL_S", "1"}});
    Module m(PILOT_PROFILER_MODULE);
    constexpr int kComms = 4, kCalls = 3000;
    std::vector<std::unique_ptr<Comm>> comms;
    for (int i = 0; i < kComms; ++i) {
      comms.push_back(std::make_unique<Comm>(m, 5, 0x700 + i, "c", 1, 8, i));
    }
    std::vector<std::thread> threads;
    for (int i = 0; i < kComms; ++i) {
      // Per communicator an application thread enqueues and a proxy thread reports kernels,
      // handed over through a queue as NCCL's proxy ops are.
      threads.emplace_back([&, i] {
        Comm& comm = *comms[i];
        std::mutex mutex;
        std::vector<std::pair<void*, Collective>> queue;
        std::atomic<bool> done{false};
        std::thread proxy([&] {
          for (;;) {
            std::vector<std::pair<void*, Collective>> batch;
            {
              std::lock_guard<std::mutex> lock(mutex);
              batch.swap(queue);
            }
            for (auto& [h, c] : batch) comm.kernels(h, c);
            if (batch.empty() && done.load()) return;
            if (batch.empty()) std::this_thread::yield();
          }
        });
        for (int k = 0; k < kCalls; ++k) {
          // NCCL's work queue bounds how far the host runs ahead of the GPU; so does this.
          for (;;) {
            {
              std::lock_guard<std::mutex> lock(mutex);
              if (queue.size() < 256) break;
            }
            std::this_thread::yield();
          }
          Collective c =
              collective("AllReduce", size_t{1} << (10 + k % 6), 1 + k % 4, 1000 * (1 + k % 7), k);
          void* h = comm.enqueue(c);
          std::lock_guard<std::mutex> lock(mutex);
          queue.push_back({h, c});
        }
        done.store(true);
        proxy.join();
      });
    }
    for (auto& t : threads) t.join();
    // The exporter has been writing all along; its next file holds every call.
    auto callsOf = [](const Exposition& e, const std::string& id) {
      double calls = 0;
      for (const Sample& s : e.find("nccl_pilot_collective_calls_total", {{"comm", id}})) {
        calls += s.value;
      }
      return calls;
    };
    Exposition e;
    for (int tries = 0; tries < 50; ++tries) {
      e = textfileIn(dir);
      bool all = true;
      for (int i = 0; i < kComms; ++i)
        all = all && callsOf(e, "0x70" + std::to_string(i)) == kCalls;
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (int i = 0; i < kComms; ++i) {
      const std::string id = "0x70" + std::to_string(i);
      EXPECT_EQ(callsOf(e, id), kCalls) << id;
      EXPECT_EQ(e.at("nccl_pilot_profiler_events_total", {{"comm", id}, {"outcome", "measured"}}),
                kCalls);
    }
    EXPECT_EQ(e.at("nccl_pilot_profiler_slots_in_use"), 0);
    for (auto& c : comms) c->finalize();
    removeDir(dir);
  });
}

}  // namespace
}  // namespace fakeprof
