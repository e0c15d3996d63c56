// Reading the profiler's JSON-lines summaries: good files, truncated and foreign files, bad
// fields, limits, directories with .prom files beside, and pooling into shapes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "metrics_test_support.h"
#include "pilot/calibration/metrics_summary.h"

namespace pilot::calibration {
namespace {

using test::calibrationLine;
using test::LineSpec;

const char* kProcess = R"({"kind":"process","node":"host1","pid":1234,"nccl":"2.28.9"})";
const char* kCollective = R"({"kind":"collective","comm":"0x1","collective":"AllReduce"})";

bool anyContains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const std::string& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::string twoLines() {
  LineSpec tree;
  tree.algo = "TREE";
  tree.channels = 4;
  return std::string(kProcess) + "\n" + kCollective + "\n" +
         calibrationLine(LineSpec{}, {100, 101, 99}) + "\n" + calibrationLine(tree, {80, 81}) +
         "\n";
}

TEST(MetricsReader, ReadsCalibrationLinesAndSkipsOtherKinds) {
  MetricsData d;
  addMetricsText(d, twoLines(), "a.jsonl");
  EXPECT_TRUE(d.problems.empty()) << d.problems[0];
  ASSERT_EQ(d.records.size(), 2u);
  const CallRecord& r = d.records[0];
  EXPECT_EQ(r.source, "a.jsonl:3");
  EXPECT_EQ(r.collective, "allreduce");
  EXPECT_EQ(r.algo, "ring");
  EXPECT_EQ(r.proto, "simple");
  EXPECT_EQ(r.nccl, "2.28.9");
  EXPECT_EQ(r.fabric, "ethernet");
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.bytes, 1048576u);
  EXPECT_EQ(r.calls, 3u);
  EXPECT_EQ(d.records[1].algo, "tree");
  EXPECT_EQ(d.records[1].channels, 4);
}

TEST(MetricsReader, TruncatedLastLineIsOneProblemAndTheRestIsKept) {
  const std::string whole = twoLines();
  const std::string cut = whole + calibrationLine(LineSpec{}, {5, 6}).substr(0, 40);
  MetricsData d;
  addMetricsText(d, cut, "a.jsonl");
  EXPECT_EQ(d.records.size(), 2u);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_NE(d.problems[0].find("a.jsonl:5: truncated last line"), std::string::npos)
      << d.problems[0];
}

TEST(MetricsReader, ForeignJsonlIsOneProblemAndNothingIsKept) {
  MetricsData d;
  addMetricsText(d, "{\"event\":\"login\",\"user\":\"x\"}\nnot json\n{\"kind\":\"trace\"}\n",
                 "other.jsonl");
  EXPECT_TRUE(d.records.empty());
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_NE(d.problems[0].find("other.jsonl: not a nccl-pilot metrics summary"), std::string::npos);
}

TEST(MetricsReader, BadFieldsAreOneProblemEachNamingFileAndLine) {
  LineSpec badAlgo, badRank, zeroCalls;
  badAlgo.algo = "WARP";
  badRank.rank = 2;  // of nranks 2
  std::string sumMismatch = calibrationLine(LineSpec{}, {10, 11});
  sumMismatch.replace(sumMismatch.find("\"calls\":2"), 9, "\"calls\":3");
  std::string ratio = calibrationLine(LineSpec{}, {10});
  ratio.replace(ratio.find("\"bin_ratio\":1.02"), 16, "\"bin_ratio\":2.0");
  const std::string text = std::string(kProcess) + "\n" + calibrationLine(badAlgo, {1}) + "\n" +
                           calibrationLine(badRank, {1}) + "\n" + sumMismatch + "\n" + ratio +
                           "\n" + calibrationLine(LineSpec{}, {7, 8}) + "\n{oops\n";
  MetricsData d;
  addMetricsText(d, text, "m.jsonl");
  ASSERT_EQ(d.records.size(), 1u);
  EXPECT_EQ(d.records[0].source, "m.jsonl:6");
  ASSERT_EQ(d.problems.size(), 5u);
  EXPECT_NE(d.problems[0].find("m.jsonl:2: unknown \"algo\" \"WARP\""), std::string::npos)
      << d.problems[0];
  EXPECT_NE(d.problems[1].find("m.jsonl:3: \"rank\" = 2 is out of range"), std::string::npos)
      << d.problems[1];
  EXPECT_NE(d.problems[2].find("m.jsonl:4: the bins hold 2 calls, \"calls\" says 3"),
            std::string::npos)
      << d.problems[2];
  EXPECT_NE(d.problems[3].find("m.jsonl:5: \"bin_ratio\" is not 1.02"), std::string::npos);
  EXPECT_NE(d.problems[4].find("m.jsonl:7: not a JSON object"), std::string::npos);
}

TEST(MetricsReader, LimitsOnLinesAndBins) {
  std::string huge = calibrationLine(LineSpec{}, {1});
  huge.insert(huge.size() - 1, ",\"pad\":\"" + std::string(kMaxMetricsLineBytes, 'x') + "\"");
  std::string farBin = calibrationLine(LineSpec{}, {1});
  const size_t at = farBin.find("\"bins\":[[") + 9;
  farBin.replace(at, farBin.find(',', at) - at, std::to_string(kMaxBinIndex + 1));
  std::string manyBins = calibrationLine(LineSpec{}, {1});
  std::string bins = "[";
  for (size_t k = 0; k <= kMaxMetricsBins; ++k)
    bins += (k ? ",[" : "[") + std::to_string(k) + ",1]";
  manyBins.replace(manyBins.find("\"bins\":") + 7, std::string::npos, bins + "]}");
  MetricsData d;
  addMetricsText(d, std::string(kProcess) + "\n" + huge + "\n" + farBin + "\n" + manyBins + "\n",
                 "l.jsonl");
  EXPECT_TRUE(d.records.empty());
  ASSERT_EQ(d.problems.size(), 3u);
  EXPECT_TRUE(anyContains(d.problems, "l.jsonl:2: line longer than"));
  EXPECT_TRUE(anyContains(d.problems, "l.jsonl:3: a bin is not [k, count]"));
  EXPECT_TRUE(anyContains(d.problems, "l.jsonl:4: more than 4096 bins"));
}

class MetricsDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pilot-metrics-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(dir_ + "/" + name).parent_path());
    std::ofstream(dir_ + "/" + name) << text;
  }
  std::string dir_;
};

TEST_F(MetricsDir, ReadsJsonlOneLevelDownIgnoresPromAndCountsACopyOnce) {
  write("nccl_pilot_host1_1234.jsonl", twoLines());
  write("nccl_pilot_host1_1234.prom", "# HELP x\n");
  LineSpec rank1;
  rank1.rank = 1, rank1.node = "host2", rank1.pid = 99;
  write("job2/nccl_pilot_host2_99.jsonl", calibrationLine(rank1, {90, 91}) + "\n");
  EXPECT_TRUE(isMetricsInput(dir_));
  EXPECT_TRUE(isMetricsInput("x.jsonl"));
  EXPECT_FALSE(isMetricsInput(dir_ + "/nccl_pilot_host1_1234.prom"));
  const MetricsData d = loadMetrics({dir_, dir_ + "/nccl_pilot_host1_1234.jsonl"});
  EXPECT_EQ(d.files.size(), 2u);
  EXPECT_EQ(d.records.size(), 3u);
  EXPECT_TRUE(d.problems.empty()) << d.problems[0];
  EXPECT_TRUE(anyContains(d.notes, "1 .prom file(s) ignored"));
}

TEST_F(MetricsDir, TheSameRecordUnderAnotherFileNameCountsOnce) {
  write("a.jsonl", twoLines());
  write("copy/a.jsonl", twoLines());
  const MetricsData d = loadMetrics({dir_});
  EXPECT_EQ(d.records.size(), 2u);
  ASSERT_EQ(d.problems.size(), 2u);
  EXPECT_NE(d.problems[0].find("the same communicator, rank, process and configuration"),
            std::string::npos);
}

TEST_F(MetricsDir, AnEmptyDirectoryIsAProblemAndNotMetrics) {
  EXPECT_FALSE(isMetricsInput(dir_));
  const MetricsData d = loadMetrics({dir_});
  EXPECT_TRUE(d.records.empty());
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_NE(d.problems[0].find("no .jsonl file (an empty directory)"), std::string::npos);
}

TEST(MetricsSummary, RanksPoolAndOtherNcclVersionsOrShapesStaySeparate) {
  LineSpec r0, r1, older, bigger;
  r1.rank = 1, r1.node = "host2";
  older.nccl = "2.27.5", older.pid = 7;
  bigger.nranks = 4, bigger.nNodes = 2, bigger.pid = 8;
  MetricsData d;
  addMetricsText(d,
                 std::string(kProcess) + "\n" + calibrationLine(r0, {100, 100}) + "\n" +
                     calibrationLine(r1, {100, 100, 100}) + "\n" + calibrationLine(older, {50}) +
                     "\n" + calibrationLine(bigger, {70}) + "\n",
                 "p.jsonl");
  ASSERT_EQ(d.records.size(), 4u);
  const Measurements m = summarizeMetrics(d);
  ASSERT_EQ(m.shapes.size(), 3u);
  const Shape* pooled = nullptr;
  for (const Shape& s : m.shapes) {
    EXPECT_TRUE(s.perCall);
    if (s.key.ranks == 2 && s.ncclVersion == "2.28.9") pooled = &s;
  }
  ASSERT_NE(pooled, nullptr);
  ASSERT_NE(pooled->defaults(), nullptr);
  EXPECT_EQ(pooled->defaults()->sizes.at(0).calls, 5u);  // both ranks
  EXPECT_EQ(pooled->key.setup, "NCCL 2.28.9 ethernet");
  EXPECT_NE(pooled->fabrics, 0);
  EXPECT_TRUE(anyContains(m.notes, "never pooled"));
}

TEST(MetricsSummary, TheConfigurationWithTheMostCallsIsTheBaseline) {
  LineSpec tree;
  tree.algo = "TREE";
  MetricsData d;
  addMetricsText(d,
                 std::string(kProcess) + "\n" + calibrationLine(LineSpec{}, {100, 100, 100}) +
                     "\n" + calibrationLine(tree, {50, 50, 50, 50}) + "\n",
                 "b.jsonl");
  const Measurements m = summarizeMetrics(d);
  ASSERT_EQ(m.shapes.size(), 1u);
  const Shape& s = m.shapes[0];
  ASSERT_EQ(s.series.size(), 3u);  // default (the baseline), ring/simple, tree/simple
  EXPECT_EQ(s.defaults()->sizes[0].calls, 4u);
  EXPECT_NEAR(s.defaults()->sizes[0].timeUs, 50.0, 1.0);
  EXPECT_EQ(s.series[2].label, "tree/simple");
  EXPECT_EQ(s.series[2].config.algo, "Tree");
  EXPECT_EQ(s.series[2].config.proto, "Simple");
}

TEST(MetricsSummary, RobustStatisticsIgnoreStragglers) {
  test::CallNoise noise(7);
  const std::vector<double> calls = noise.calls(100.0, 4000, 0.12, 0.01, 3.0);
  const CallStats st = callStats(test::binsOf(calls));
  EXPECT_EQ(st.calls, 4000u);
  EXPECT_NEAR(std::exp(st.logMean), 100.0, 1.5);
  // The winsorized sd of normal noise is 0.824 sigma; over (1 - 2 x 10%): 1.03 sigma.
  EXPECT_GT(st.logSigma, 0.115);
  EXPECT_LT(st.logSigma, 0.135);
  EXPECT_LT(st.p10Us, 90.0);
  EXPECT_GT(st.p90Us, 110.0);
}

}  // namespace
}  // namespace pilot::calibration
