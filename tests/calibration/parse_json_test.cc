// The -J JSON parser: structure, environment as configuration, failure signals, bad files.
#include <gtest/gtest.h>

#include "pilot/calibration/dataset_loader.h"
#include "pilot/calibration/nccl_tests_parser.h"
#include "sweep_test_support.h"

namespace pilot::calibration {
namespace {

using test::joined;
using test::mentions;
using test::rows;

const std::string kDataDir = std::string(PILOT_SOURCE_DIR) + "/tests/calibration/data";
const std::string kJson = kDataDir + "/all_reduce_perf-2n-ring-ll128.json";

TEST(ParseJson, RealisticFile) {
  const ParsedOutput out = parseNcclTestsJson(test::readText(kJson), kJson);
  ASSERT_EQ(out.runs.size(), 1u) << joined(out.problems);
  const ParsedRun& p = out.runs[0];
  const calibration::Run& run = p.run;
  EXPECT_FALSE(run.failed) << joined(run.problems);
  EXPECT_TRUE(run.problems.empty()) << joined(run.problems);
  EXPECT_EQ(run.collective, "allreduce");
  EXPECT_EQ(run.ncclVersion, "2.28.3");
  EXPECT_EQ(run.ranks, 8);
  EXPECT_EQ(run.nodes, 2);
  EXPECT_EQ(rows(run), 4u);
  EXPECT_EQ(run.samples.size(), 8u);
  EXPECT_DOUBLE_EQ(run.samples[0].timeUs, 24.11);
  EXPECT_TRUE(run.samples[1].inPlace);
  EXPECT_DOUBLE_EQ(run.samples[1].timeUs, 23.87);
  EXPECT_EQ(run.samples[6].size, 16777216u);
  EXPECT_DOUBLE_EQ(run.samples[4].iterCvPct, 2.86);
  EXPECT_DOUBLE_EQ(run.samples[4].iterP99Us, 47.9);
  EXPECT_DOUBLE_EQ(run.samples[5].iterCvPct, -1);
  ASSERT_TRUE(p.evidence.config.has_value());
  EXPECT_EQ(p.evidence.configSource, "json");
  EXPECT_EQ(p.evidence.config->algo, "Ring");  // "ring" in the environment, NCCL's spelling here
  EXPECT_EQ(p.evidence.config->proto, "LL128");
  EXPECT_TRUE(p.evidence.endedCleanly);
}

TEST(ParseJson, LoaderTakesTheConfigurationFromTheEnvironment) {
  const Dataset data = loadDataset({kJson}, LoadOptions());
  ASSERT_EQ(data.runs.size(), 1u);
  EXPECT_FALSE(data.runs[0].failed) << joined(data.runs[0].problems);
  EXPECT_EQ(data.runs[0].configSource, "json");
  EXPECT_EQ(data.runs[0].config.label, "ring+ll128");
  EXPECT_EQ(data.runs[0].repeat, 0);
}

TEST(ParseJson, EnvironmentWithoutForcingIsTheDefault) {
  std::string text = test::readText(kJson);
  for (const char* var : {"\"NCCL_PROTO=LL128\",", "\"NCCL_ALGO=ring\","}) {
    text.erase(text.find(var), std::string(var).size());
  }
  const ParsedOutput out = parseNcclTestsJson(text, "x.json");
  ASSERT_EQ(out.runs.size(), 1u);
  ASSERT_TRUE(out.runs[0].evidence.config.has_value());
  EXPECT_TRUE(out.runs[0].evidence.config->isDefault());
}

TEST(ParseJson, WrongResultsAndFailedChecks) {
  std::string text = test::readText(kJson);
  const std::string good = "\"nwrong\": 0";
  text.replace(text.rfind(good), good.size(), "\"nwrong\": 12");
  text.replace(text.find("\"okay\": true"), 12, "\"okay\": false");
  const ParsedOutput out = parseNcclTestsJson(text, "x.json");
  ASSERT_EQ(out.runs.size(), 1u);
  EXPECT_TRUE(out.runs[0].run.failed);
  EXPECT_TRUE(mentions(out.runs[0].run.problems, "nwrong = 12"));
  EXPECT_TRUE(mentions(out.runs[0].run.problems, "out-of-bounds"));
}

TEST(ParseJson, TruncatedFileIsAnInputProblem) {
  const std::string text = test::readText(kJson);
  const ParsedOutput out = parseNcclTestsJson(text.substr(0, text.size() / 2), "cut.json");
  EXPECT_TRUE(out.runs.empty());
  EXPECT_TRUE(mentions(out.problems, "not valid JSON"));
}

TEST(ParseJson, ForeignOrOddJsonNeverThrows) {
  for (const char* text :
       {"{}", "[]", "{\"results\": 5}", "{\"results\": [{\"size\": -1}]}",
        "{\"results\": [{\"size\": 8, \"count\": 2, \"out_of_place\": {\"time\": \"nan\"}}]}",
        "{\"args\": [7], \"env\": [1, \"NCCL_ALGO\", \"NCCL_PROTO=bogus\"], \"config\": "
        "{\"devices\": [{}], \"ngpus\": \"x\"}, \"results\": []}"}) {
    SCOPED_TRACE(text);
    const ParsedOutput out = parseNcclTestsJson(text, "odd.json");
    for (const ParsedRun& p : out.runs) EXPECT_TRUE(p.run.failed);
  }
}

// Numbers no long holds (UBSan under tests/fuzz/nccl_tests_json_fuzz): a #wrong that large
// still fails the run, a version code that large is no version.
TEST(ParseJson, NumbersPastLongAreNotConverted) {
  const ParsedOutput out = parseNcclTestsJson(
      "{\"args\": [\"all_reduce_perf\"], \"nccl_version\": 1e300, \"results\": [{\"size\": 8, "
      "\"count\": 2, \"out_of_place\": {\"time\": 1, \"alg_bw\": 1, \"bus_bw\": 1, "
      "\"nwrong\": 1e300}}], \"out_of_bounds\": {\"okay\": true}}",
      "huge.json");
  ASSERT_EQ(out.runs.size(), 1u);
  const calibration::Run& run = out.runs[0].run;
  EXPECT_EQ(run.ncclVersion, "");
  ASSERT_EQ(run.samples.size(), 1u);
  EXPECT_GT(run.samples[0].wrong, 0);
  EXPECT_TRUE(run.failed);
  EXPECT_TRUE(mentions(run.problems, "nwrong = ")) << joined(run.problems);
}

TEST(ParseJson, RunCyclesSplit) {
  const std::string text =
      "{\"args\": [\"all_gather_perf\"], \"env\": [], \"results\": ["
      "{\"size\": 8, \"count\": 1, \"out_of_place\": {\"time\": 5, \"alg_bw\": 0, \"bus_bw\": 0, "
      "\"nwrong\": null}, \"in_place\": null},"
      "{\"size\": 16, \"count\": 2, \"out_of_place\": {\"time\": 6, \"alg_bw\": 0, \"bus_bw\": 0, "
      "\"nwrong\": null}, \"in_place\": null},"
      "{\"size\": 8, \"count\": 1, \"out_of_place\": {\"time\": 5.5, \"alg_bw\": 0, \"bus_bw\": 0, "
      "\"nwrong\": null}, \"in_place\": null}], \"out_of_bounds\": {\"count\": 0, \"okay\": true}}";
  const ParsedOutput out = parseNcclTestsJson(text, "c.json");
  ASSERT_EQ(out.runs.size(), 2u);
  EXPECT_EQ(out.runs[0].run.samples.size(), 2u);
  EXPECT_EQ(out.runs[1].run.samples.size(), 1u);
  EXPECT_EQ(out.runs[0].run.samples[0].wrong, -1);
  EXPECT_EQ(out.runs[0].run.collective, "allgather");
}

TEST(ParseJson, LooksLikeJson) {
  EXPECT_TRUE(looksLikeJson("  \n{\"a\": 1}"));
  EXPECT_FALSE(looksLikeJson("# nThread 1"));
  EXPECT_FALSE(looksLikeJson(""));
}

}  // namespace
}  // namespace pilot::calibration
