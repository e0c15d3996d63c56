// The text parser against the hazards real logs have (docs/research/tuner.md §6.1): launcher
// tags (even mid-row), repeated headers, NCCL lines in between, column variants, N/A,
// exponents, truncation, launch failures, wrong results, interleaved processes.
#include <gtest/gtest.h>

#include <cstdio>

#include "pilot/calibration/dataset_loader.h"
#include "pilot/calibration/nccl_tests_parser.h"
#include "sweep_test_support.h"

namespace pilot::calibration {
namespace {

using test::joined;
using test::mentions;
using test::rows;

std::string preamble(const std::string& prog, int ranks, int nodes = 1) {
  std::string s =
      "# nccl-tests version 2.17.9 nccl-headers=22902 nccl-library=22902\n"
      "# Collective test starting: " +
      prog +
      "\n"
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 32 step: 2(factor) warmup iters: 5 "
      "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n";
  for (int r = 0; r < ranks; ++r) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0000:10:00] NVIDIA H100\n", r,
                  100 + r, ("host" + std::to_string(r * nodes / ranks)).c_str(), r % 8);
    s += line;
  }
  return s;
}

const char* kHeader =
    "#\n"
    "#                                                              out-of-place                 "
    "      in-place          \n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
    "(us)  (GB/s)  (GB/s)       \n";

std::string row(uint64_t size, double t1, double t2, const char* wrong = "0") {
  char line[200];
  std::snprintf(
      line, sizeof line,
      "%12llu  %12llu  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f  %6s  %7.2f  %6.2f  %6.2f  %6s\n",
      static_cast<unsigned long long>(size), static_cast<unsigned long long>(size / 4), "float",
      "sum", -1, t1, size / t1 / 1e3, size / t1 / 1e3, wrong, t2, size / t2 / 1e3, size / t2 / 1e3,
      wrong);
  return line;
}

std::string footer(const std::string& prog, int wrong = 0) {
  return std::string("# Out of bounds values : ") + std::to_string(wrong) +
         (wrong ? " FAILED" : " OK") + "\n# Avg bus bandwidth    : 1.5 \n#\n" +
         "# Collective test concluded: " + prog + "\n#\n";
}

std::string wholeRun(const std::string& prog = "all_reduce_perf", int ranks = 8, int nodes = 1) {
  return preamble(prog, ranks, nodes) + kHeader + row(8, 10, 11) + row(16, 12, 13) +
         row(32, 14, 15) + footer(prog);
}

ParsedOutput parse(const std::string& text, const std::string& name = "log.txt") {
  return parseNcclTestsText(text, name);
}

TEST(ParseHazards, CleanRunIsReadWhole) {
  const ParsedOutput out = parse(wholeRun());
  ASSERT_EQ(out.runs.size(), 1u);
  const calibration::Run& run = out.runs[0].run;
  EXPECT_FALSE(run.failed) << joined(run.problems);
  EXPECT_TRUE(run.problems.empty()) << joined(run.problems);
  EXPECT_EQ(rows(run), 3u);
  EXPECT_EQ(run.collective, "allreduce");
  EXPECT_EQ(run.ranks, 8);
  EXPECT_EQ(run.nodes, 1);
  EXPECT_EQ(run.ncclVersion, "2.29.2");
  EXPECT_TRUE(out.runs[0].evidence.endedCleanly);
  EXPECT_FALSE(out.runs[0].evidence.config.has_value());
  EXPECT_EQ(run.samples[2].size, 16u);
  EXPECT_EQ(run.samples[2].count, 4u);
  EXPECT_DOUBLE_EQ(run.samples[2].timeUs, 12.0);
  EXPECT_DOUBLE_EQ(run.samples[3].timeUs, 13.0);
  EXPECT_EQ(run.samples[0].type, "float");
  EXPECT_EQ(run.samples[0].redop, "sum");
}

TEST(ParseHazards, MpirunTagsEvenMidRow) {
  std::string text;
  for (const std::string& line :
       {std::string("# nccl-tests version 2.17.9 nccl-headers=22902 "
                    "nccl-library=22902"),
        std::string("# Collective test starting: all_reduce_perf"), std::string("# Using devices"),
        std::string("#  Rank  0 Group  0 Pid  1 on h1 device 0 [0x53] X"),
        std::string("#  Rank  1 Group  0 Pid  2 on h2 device 0 [0x53] X")}) {
    text += "[1,0]<stdout>:" + line + "\n";
  }
  text += "[1,1]<stdout>:h2:2:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n";
  std::string header = kHeader;
  for (size_t at = 0; (at = header.find('#', at)) != std::string::npos;
       at = header.find('\n', at)) {
    header.insert(at, "[1,0]<stdout>:");
  }
  text += header;
  // The row is written in pieces; the tag of each piece lands mid-row.
  text +=
      "[1,0]<stdout>:           8             2     float     sum      -1[1,0]<stdout>:    "
      "10.00    0.00    0.00      0[1,0]<stdout>:    11.00    0.00    0.00      0\n";
  text += "[1,0]<stdout>:" + row(16, 12, 13);
  text += "[1,0]<stderr>:" + footer("all_reduce_perf");
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  const calibration::Run& run = out.runs[0].run;
  EXPECT_FALSE(run.failed) << joined(run.problems);
  EXPECT_EQ(rows(run), 2u);
  EXPECT_DOUBLE_EQ(run.samples[0].timeUs, 10.0);
  EXPECT_DOUBLE_EQ(run.samples[1].timeUs, 11.0);
  EXPECT_EQ(run.ranks, 2);
  EXPECT_EQ(run.nodes, 2);
  EXPECT_TRUE(out.problems.empty()) << joined(out.problems);
}

TEST(ParseHazards, SrunLabelPrefixes) {
  std::string text;
  std::string whole = wholeRun();
  for (size_t pos = 0; pos < whole.size();) {
    size_t nl = whole.find('\n', pos);
    text += "0: " + whole.substr(pos, nl - pos) + "\n";
    pos = nl + 1;
  }
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  EXPECT_EQ(rows(out.runs[0].run), 3u);
  EXPECT_FALSE(out.runs[0].run.failed) << joined(out.runs[0].run.problems);
}

TEST(ParseHazards, ConcatenatedRunsAndRepeatedHeaders) {
  // Two whole runs, then a bare header and rows (a second table pasted without its preamble).
  const std::string text = wholeRun() + wholeRun("all_gather_perf") + kHeader + row(8, 20, 21) +
                           row(16, 22, 23) + footer("all_gather_perf");
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 3u);
  EXPECT_EQ(out.runs[0].run.collective, "allreduce");
  EXPECT_EQ(out.runs[1].run.collective, "allgather");
  EXPECT_EQ(rows(out.runs[0].run), 3u);
  EXPECT_EQ(rows(out.runs[1].run), 3u);
  EXPECT_EQ(rows(out.runs[2].run), 2u);
  EXPECT_DOUBLE_EQ(out.runs[2].run.samples[0].timeUs, 20.0);
  // The headerless third table names its program only in its footer.
  EXPECT_EQ(out.runs[2].run.collective, "allgather");
}

TEST(ParseHazards, NcclLinesInBetweenGiveConfigurationAndChoices) {
  const std::string info = "node1:123:123 [0] NCCL INFO ";
  const std::string text =
      preamble("all_reduce_perf", 8) + "NCCL version 2.24.3+cuda12.4\n" + info +
      "NCCL_PROTO set by environment to ll128\n" + info +
      "NCCL_MIN_NCHANNELS set by environment to 4.\n" + info + "Channel 00/16 : 0 1 2 3\n" +
      kHeader + info + "AllReduce: 8 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..0}\n" +
      info + "AllReduce: 8 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..0}\n" +
      row(8, 10, 11) + info +
      "AllReduce: 16 Bytes -> Algo Tree proto LL128 channel{Lo..Hi}={0..1} comm 0x5599\n" +
      "node1:123:130 [0] misc/socket.cc:50 NCCL WARN socket timeout, retrying\n" + row(16, 12, 13) +
      footer("all_reduce_perf");
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  const ParsedRun& p = out.runs[0];
  EXPECT_FALSE(p.run.failed) << joined(p.run.problems);
  EXPECT_EQ(rows(p.run), 2u);
  EXPECT_EQ(p.run.ncclVersion, "2.24.3");
  ASSERT_TRUE(p.evidence.config.has_value());
  EXPECT_EQ(p.evidence.configSource, "nccl-log");
  EXPECT_EQ(p.evidence.config->proto, "LL128");
  EXPECT_EQ(p.evidence.config->algo, "");
  EXPECT_EQ(p.evidence.config->minChannels, 4);
  ASSERT_EQ(p.run.ncclChoices.size(), 2u);  // the repeated 8-byte line counted once
  EXPECT_EQ(p.run.ncclChoices[0].bytes, 8u);
  EXPECT_EQ(p.run.ncclChoices[0].algo, "Ring");
  EXPECT_EQ(p.run.ncclChoices[0].proto, "LL128");
  EXPECT_EQ(p.run.ncclChoices[1].algo, "Tree");
  EXPECT_EQ(p.run.ncclChoices[1].channelHi, 1);
  EXPECT_TRUE(mentions(p.run.problems, "1 NCCL WARN line(s)")) << joined(p.run.problems);

  // Through the loader the logged environment beats a disagreeing --label.
  Dataset data;
  LoadOptions options;
  options.labels.push_back(*parseLabelRule("*=default"));
  addOutput(data, text, "log.txt", "log.txt", options);
  finishDataset(data);
  ASSERT_EQ(data.runs.size(), 1u);
  EXPECT_EQ(data.runs[0].configSource, "nccl-log");
  EXPECT_EQ(data.runs[0].config.label, "ll128+chmin4");
  EXPECT_TRUE(mentions(data.runs[0].problems, "the output wins"));
}

TEST(ParseHazards, PerIterationCpuTimeAndTimestampColumns) {
  const std::string text =
      preamble("all_reduce_perf", 2) +
      "#                                                              out-of-place (+ "
      "per-iteration)\n"
      "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong    "
      "i_min    i_max    i_p99    i_cv%  cputime   algbw   busbw  #wrong    i_min    i_max    "
      "i_p99    i_cv% timestamp\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             "
      "(us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)"
      "      (%) %Y-%m-%d %H:%M:%S\n"
      "        1024           256     float     sum      -1    20.00    0.05    0.05       0    "
      "18.50    25.00    24.90     3.25    21.00    0.05    0.05       0    19.00    26.00    "
      "25.50     4.00  2026-01-02 03:04:05\n" +
      footer("all_reduce_perf");
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  const calibration::Run& run = out.runs[0].run;
  EXPECT_FALSE(run.failed) << joined(run.problems);
  ASSERT_EQ(run.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(run.samples[0].timeUs, 20.0);
  EXPECT_DOUBLE_EQ(run.samples[0].iterMinUs, 18.5);
  EXPECT_DOUBLE_EQ(run.samples[0].iterP99Us, 24.9);
  EXPECT_DOUBLE_EQ(run.samples[0].iterCvPct, 3.25);
  EXPECT_DOUBLE_EQ(run.samples[1].timeUs, 21.0);
  EXPECT_DOUBLE_EQ(run.samples[1].iterMaxUs, 26.0);
  EXPECT_TRUE(mentions(run.problems, "CPU times"));
}

TEST(ParseHazards, NotAvailableWrongAndExponents) {
  const std::string text = preamble("all_reduce_perf", 2) + kHeader +
                           "           8             2     float     sum      -1    10.00    0.00 "
                           "   0.00    N/A    11.00    0.00    0.00    N/A\n"
                           "  8589934592    2147483648     float     sum      -1  2.1e+06    4.09 "
                           "   4.09    N/A  2e+06    4.29    4.29    N/A\n" +
                           footer("all_reduce_perf");
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  const calibration::Run& run = out.runs[0].run;
  EXPECT_FALSE(run.failed) << joined(run.problems);
  ASSERT_EQ(run.samples.size(), 4u);
  EXPECT_EQ(run.samples[0].wrong, -1);
  EXPECT_DOUBLE_EQ(run.samples[2].timeUs, 2.1e6);
  EXPECT_DOUBLE_EQ(run.samples[3].timeUs, 2e6);
}

TEST(ParseHazards, WrongResultsFailTheRun) {
  const std::string text = preamble("all_reduce_perf", 2) + kHeader + row(8, 10, 11) +
                           row(16, 10, 11, "1e+06") + footer("all_reduce_perf", 1000000);
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  const calibration::Run& run = out.runs[0].run;
  EXPECT_TRUE(run.failed);
  EXPECT_EQ(run.samples[2].wrong, 1000000);
  EXPECT_TRUE(mentions(run.problems, "#wrong = 1000000 at 16 bytes")) << joined(run.problems);
  EXPECT_TRUE(mentions(run.problems, "out-of-bounds values (FAILED)"));
}

TEST(ParseHazards, TruncatedFileKeepsTheRowsReadSoFar) {
  std::string text = preamble("all_reduce_perf", 2) + kHeader + row(8, 10, 11) + row(16, 12, 13);
  text += row(32, 14, 15).substr(0, 60);  // cut mid-row, no newline
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  const calibration::Run& run = out.runs[0].run;
  EXPECT_FALSE(run.failed) << joined(run.problems);
  EXPECT_EQ(rows(run), 2u);
  EXPECT_FALSE(out.runs[0].evidence.endedCleanly);
  EXPECT_TRUE(mentions(run.problems, "the last row is cut off")) << joined(run.problems);
  EXPECT_TRUE(mentions(run.problems, "truncated: 2 sizes and no footer"));
}

TEST(ParseHazards, CrashAfterSomeRowsFailsTheRun) {
  const std::string text = preamble("all_reduce_perf", 2) + kHeader + row(8, 10, 11) +
                           "host0: Test NCCL failure common.cu:392 'unhandled cuda error'\n"
                           " .. host0 pid 100: Test failure common.cu:894\n";
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  EXPECT_TRUE(out.runs[0].run.failed);
  EXPECT_TRUE(mentions(out.runs[0].run.problems, "stopped after 1 sizes"));
}

TEST(ParseHazards, LaunchFailureOnlyIsOneFailedRun) {
  const ParsedOutput out = parse(
      "srun: error: Unable to create step for job 42: Requested node configuration is not "
      "available\n",
      "all_reduce_perf.log");
  ASSERT_EQ(out.runs.size(), 1u);
  const calibration::Run& run = out.runs[0].run;
  EXPECT_TRUE(run.failed);
  EXPECT_EQ(run.collective, "allreduce");
  EXPECT_TRUE(mentions(run.problems, "no results; the output says 'line 1: srun: error"))
      << joined(run.problems);
}

TEST(ParseHazards, LaunchFailureAfterThePreamble) {
  const std::string text = preamble("all_gather_perf", 2) +
                           "host0: Test NCCL failure common.cu:1005 'unhandled system error'\n";
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  EXPECT_TRUE(out.runs[0].run.failed);
  EXPECT_EQ(out.runs[0].run.collective, "allgather");
  EXPECT_TRUE(mentions(out.runs[0].run.problems, "Test NCCL failure"));
}

TEST(ParseHazards, NonMpiBuildPerRankRunsAreFailed) {
  // Each process prints a whole 1-rank run of its own.
  const std::string text = wholeRun("all_reduce_perf", 1) + wholeRun("all_reduce_perf", 1);
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 2u);
  for (const ParsedRun& p : out.runs) {
    EXPECT_TRUE(p.run.failed);
    EXPECT_TRUE(mentions(p.run.problems, "one rank"));
  }
}

TEST(ParseHazards, InterleavedProcessesAreFailed) {
  const std::string text = preamble("all_reduce_perf", 1) + kHeader + row(8, 10, 11) +
                           row(8, 10, 11) + row(16, 12, 13) + row(16, 12, 13) +
                           footer("all_reduce_perf");
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  EXPECT_TRUE(out.runs[0].run.failed);
  EXPECT_TRUE(mentions(out.runs[0].run.problems, "interleaved"));
}

TEST(ParseHazards, MpirunTablesFromSeveralRanksReadOnlyTheFirst) {
  std::string text;
  for (const char* tag : {"[1,0]", "[1,1]"}) {
    std::string whole = wholeRun("all_reduce_perf", 1);
    for (size_t pos = 0; pos < whole.size();) {
      size_t nl = whole.find('\n', pos);
      text += std::string(tag) + "<stdout>:" + whole.substr(pos, nl - pos) + "\n";
      pos = nl + 1;
    }
  }
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  EXPECT_TRUE(mentions(out.problems, "lines tagged [1,1] print nccl-tests tables too"));
}

TEST(ParseHazards, RunCyclesBecomeSeparateRuns) {
  const std::string text = preamble("all_reduce_perf", 2) + kHeader + row(8, 10, 11) +
                           row(16, 12, 13) + row(8, 10.5, 11) + row(16, 12.5, 13) +
                           footer("all_reduce_perf");
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 2u);
  EXPECT_EQ(rows(out.runs[0].run), 2u);
  EXPECT_EQ(rows(out.runs[1].run), 2u);
  EXPECT_FALSE(out.runs[0].run.failed) << joined(out.runs[0].run.problems);
  EXPECT_FALSE(out.runs[1].run.failed) << joined(out.runs[1].run.problems);
  EXPECT_DOUBLE_EQ(out.runs[1].run.samples[0].timeUs, 10.5);
  EXPECT_EQ(out.runs[1].run.ranks, 2);
}

TEST(ParseHazards, OldColumnNames) {
  const std::string text =
      preamble("all_reduce_perf", 2) +
      "#                                                 out-of-place                    in-place\n"
      "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  "
      "busbw      res\n" +
      "          8             2   float     sum    12.50   0.00   0.00    0e+00    12.00   0.00   "
      "0.00    0e+00\n" +
      footer("all_reduce_perf");
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  const calibration::Run& run = out.runs[0].run;
  EXPECT_FALSE(run.failed) << joined(run.problems);
  ASSERT_EQ(run.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(run.samples[0].timeUs, 12.5);
  EXPECT_EQ(run.samples[0].wrong, -1);  // an old "res" is a deviation, not a count
}

TEST(ParseHazards, UnknownColumnsAreNotGuessed) {
  const std::string text = preamble("all_reduce_perf", 2) +
                           "#       size         count      type   redop    root     time   "
                           "algbw   busbw #wrong  gizmo\n" +
                           "           8             2     float     sum      -1    10.00    0.00 "
                           "   0.00      0   7\n" +
                           footer("all_reduce_perf");
  const ParsedOutput out = parse(text);
  ASSERT_EQ(out.runs.size(), 1u);
  EXPECT_TRUE(out.runs[0].run.failed);
  EXPECT_EQ(rows(out.runs[0].run), 0u);
  EXPECT_TRUE(mentions(out.runs[0].run.problems, "before any column header"))
      << joined(out.runs[0].run.problems);
}

TEST(ParseHazards, CollectiveFromRunLineOrFileName) {
  const std::string body = kHeader + row(8, 10, 11) + "# Out of bounds values : 0 OK\n";
  ParsedOutput tagged = parse("# RUN file=x.txt collective=reduce_scatter config=a\n" + body);
  ASSERT_EQ(tagged.runs.size(), 1u);
  EXPECT_EQ(tagged.runs[0].run.collective, "reducescatter");
  EXPECT_EQ(tagged.runs[0].evidence.label, "a");
  ParsedOutput named = parse(body, "/logs/broadcast_perf.out");
  EXPECT_EQ(named.runs[0].run.collective, "broadcast");
  ParsedOutput unnamed = parse(body, "results.txt");
  EXPECT_TRUE(unnamed.runs[0].run.failed);
  EXPECT_TRUE(mentions(unnamed.runs[0].run.problems, "which collective ran is unknown"));
  ParsedOutput other = parse(wholeRun("alltoall_perf"));
  EXPECT_TRUE(other.runs[0].run.failed);
  EXPECT_TRUE(mentions(other.runs[0].run.problems, "alltoall is not a collective"));
}

TEST(ParseHazards, EmptyAndGarbageInput) {
  EXPECT_TRUE(parse("").runs.empty());
  EXPECT_TRUE(mentions(parse("").problems, "empty"));
  const ParsedOutput garbage = parse("hello world\nnothing to see\n");
  ASSERT_EQ(garbage.runs.size(), 1u);
  EXPECT_TRUE(garbage.runs[0].run.failed);
}

}  // namespace
}  // namespace pilot::calibration
