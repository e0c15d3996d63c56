// Every real nccl-tests output in ../shared/fixtures/nccl-tests parses with its runs, rows,
// shapes, failures and configurations as the files say (counts checked by hand against them).
#include <gtest/gtest.h>

#include "pilot/calibration/dataset_loader.h"
#include "sweep_test_support.h"

namespace pilot::calibration {
namespace {

using test::fixture;
using test::rows;

LoadOptions labels(std::initializer_list<const char*> rules) {
  LoadOptions o;
  for (const char* r : rules) o.labels.push_back(*parseLabelRule(r));
  return o;
}

// Each test starts with PILOT_REQUIRE_FIXTURE(fixture(FILE)) for the files it reads.
Dataset load(const std::string& name, const LoadOptions& options = labels({"*=default"})) {
  return loadDataset({fixture(name)}, options);
}

TEST(ParseFixtures, L40sForcedRunsGetTheirConfigurationsFromLabels) {
  PILOT_REQUIRE_FIXTURE(fixture("l40s-1n4gpu-allreduce-forced.txt"));
  const Dataset data = load("l40s-1n4gpu-allreduce-forced.txt",
                            labels({"auto_*=NCCL_PROTO=*", "ring=NCCL_ALGO=Ring",
                                    "tree=NCCL_ALGO=Tree", "iteration_*=default"}));
  EXPECT_TRUE(data.problems.empty()) << test::joined(data.problems);
  ASSERT_EQ(data.runs.size(), 8u);
  struct Want {
    const char* label;
    const char* algo;
    const char* proto;
    int repeat;
  };
  const Want want[] = {{"auto_ll", "", "LL", 0},         {"auto_ll128", "", "LL128", 0},
                       {"auto_simple", "", "Simple", 0}, {"default", "", "", 0},
                       {"default", "", "", 1},           {"default", "", "", 2},
                       {"ring", "Ring", "", 0},          {"tree", "Tree", "", 0}};
  for (size_t i = 0; i < data.runs.size(); ++i) {
    const calibration::Run& run = data.runs[i];
    SCOPED_TRACE(run.source);
    EXPECT_FALSE(run.failed) << test::joined(run.problems);
    EXPECT_EQ(rows(run), 25u);
    EXPECT_EQ(run.samples.size(), 50u);
    EXPECT_EQ(run.samples.front().size, 8u);
    EXPECT_EQ(run.samples.back().size, 134217728u);
    EXPECT_EQ(run.collective, "allreduce");
    EXPECT_EQ(run.nodes, 1);
    EXPECT_EQ(run.ranks, 4);
    EXPECT_EQ(run.ncclVersion, "2.29.2");
    EXPECT_EQ(run.config.label, want[i].label);
    EXPECT_EQ(run.config.algo, want[i].algo);
    EXPECT_EQ(run.config.proto, want[i].proto);
    EXPECT_EQ(run.configSource, "label");
    EXPECT_EQ(run.repeat, want[i].repeat);
  }
  // First row of auto_ll: 8 B, 17.31 us out-of-place, 17.06 us in-place.
  EXPECT_DOUBLE_EQ(data.runs[0].samples[0].timeUs, 17.31);
  EXPECT_TRUE(data.runs[0].samples[1].inPlace);
  EXPECT_DOUBLE_EQ(data.runs[0].samples[1].timeUs, 17.06);
  EXPECT_EQ(data.runs[0].samples[0].wrong, 0);
}

TEST(ParseFixtures, L40sWithoutLabelsIsUnlabelledAndExcluded) {
  PILOT_REQUIRE_FIXTURE(fixture("l40s-1n4gpu-allreduce-forced.txt"));
  const Dataset data = load("l40s-1n4gpu-allreduce-forced.txt", LoadOptions());
  ASSERT_EQ(data.runs.size(), 8u);
  for (const calibration::Run& run : data.runs) {
    EXPECT_TRUE(run.failed);
    EXPECT_EQ(run.configSource, "");
    EXPECT_EQ(run.repeat, -1);
    EXPECT_TRUE(test::mentions(run.problems, "unlabelled")) << test::joined(run.problems);
  }
  EXPECT_TRUE(test::mentions(data.problems, "8 run(s) excluded as unlabelled"));
}

TEST(ParseFixtures, A3MegaHeaderWithoutHashes) {
  PILOT_REQUIRE_FIXTURE(fixture("a3mega-2n-allreduce.txt"));
  const Dataset data = load("a3mega-2n-allreduce.txt");
  ASSERT_EQ(data.runs.size(), 1u);
  const calibration::Run& run = data.runs[0];
  EXPECT_FALSE(run.failed) << test::joined(run.problems);
  EXPECT_EQ(rows(run), 31u);
  EXPECT_EQ(run.samples.back().size, 8589934592u);
  EXPECT_DOUBLE_EQ(run.samples[run.samples.size() - 2].timeUs, 47535);  // "47535" (0 decimals)
  EXPECT_EQ(run.collective, "allreduce");  // from the file name: the log does not say
  EXPECT_EQ(run.nodes, 2);
  EXPECT_EQ(run.ranks, 16);  // rank 0's line lost its '#' too
  EXPECT_EQ(run.config.label, "default");
  EXPECT_TRUE(run.problems.empty()) << test::joined(run.problems);
}

TEST(ParseFixtures, P5RunsAreTwoNodeSixteenRanks) {
  PILOT_REQUIRE_FIXTURE(fixture("p5-2n-allreduce-nccl2223-a.txt"));
  for (const char* name : {"p5-2n-allreduce-nccl2223-a.txt", "p5-2n-allreduce-nccl2223-b.txt",
                           "p5-2n-allreduce-nccl2203-ofituner.txt"}) {
    SCOPED_TRACE(name);
    const Dataset data = load(name);
    ASSERT_EQ(data.runs.size(), 1u);
    const calibration::Run& run = data.runs[0];
    EXPECT_FALSE(run.failed) << test::joined(run.problems);
    EXPECT_EQ(rows(run), 32u);
    EXPECT_EQ(run.samples.front().size, 8u);
    EXPECT_EQ(run.samples.back().size, 17179869184u);
    EXPECT_EQ(run.nodes, 2);
    EXPECT_EQ(run.ranks, 16);
    EXPECT_EQ(run.collective, "allreduce");
    EXPECT_EQ(run.repeat, 0);
  }
  // The two identical 2.22.3 runs are repeats of one configuration when read together.
  const Dataset both = loadDataset(
      {fixture("p5-2n-allreduce-nccl2223-a.txt"), fixture("p5-2n-allreduce-nccl2223-b.txt")},
      labels({"*=default"}));
  ASSERT_EQ(both.runs.size(), 2u);
  EXPECT_EQ(both.runs[0].repeat, 0);
  EXPECT_EQ(both.runs[1].repeat, 1);
}

struct PolarisFile {
  const char* name;
  int nodes;
  size_t runs;
  size_t failed;
};

void PrintTo(const PolarisFile& f, std::ostream* os) {
  *os << f.name;
}

class ParsePolaris : public ::testing::TestWithParam<PolarisFile> {};

TEST_P(ParsePolaris, RunsSetupsAndLaunchFailures) {
  PILOT_REQUIRE_FIXTURE(fixture(GetParam().name));
  const PolarisFile& f = GetParam();
  const Dataset data = load(f.name);
  ASSERT_EQ(data.runs.size(), f.runs);
  size_t failed = 0;
  for (const calibration::Run& run : data.runs) {
    SCOPED_TRACE(run.source);
    EXPECT_FALSE(run.setup.empty());
    EXPECT_EQ(run.setup.substr(0, 1), "(");
    if (run.failed) {
      ++failed;
      EXPECT_EQ(rows(run), 0u);
      EXPECT_EQ(run.repeat, -1);
      EXPECT_TRUE(test::mentions(run.problems, "failed on x3006c0s1b1n0"))
          << test::joined(run.problems);
      continue;
    }
    EXPECT_EQ(rows(run), 29u);
    // All-gather's size is ranks x the per-rank bytes, which nccl-tests rounds down to 16.
    const uint64_t perRank = 16u * static_cast<uint64_t>(4 * f.nodes);
    const uint64_t largest =
        run.collective == "allgather" ? (uint64_t{1} << 30) / perRank * perRank : uint64_t{1} << 30;
    EXPECT_EQ(run.samples.back().size, largest);
    EXPECT_EQ(run.nodes, f.nodes);
    EXPECT_EQ(run.ranks, 4 * f.nodes);
    EXPECT_EQ(run.repeat, 0);  // each setup is its own environment, never a repeat of another
    EXPECT_TRUE(run.problems.empty()) << test::joined(run.problems);
  }
  EXPECT_EQ(failed, f.failed);
  // All-gather first, then all-reduce, as concatenated.
  EXPECT_EQ(data.runs.front().collective, "allgather");
  EXPECT_EQ(data.runs.back().collective, "allreduce");
}

INSTANTIATE_TEST_SUITE_P(AllFiles, ParsePolaris,
                         ::testing::Values(PolarisFile{"polaris-nccl218-n2.txt", 2, 10, 0},
                                           PolarisFile{"polaris-nccl218-n8.txt", 8, 10, 0},
                                           PolarisFile{"polaris-nccl218-n128.txt", 128, 10, 8},
                                           PolarisFile{"polaris-nccl218-n540.txt", 540, 2, 0}),
                         [](const auto& p) { return "n" + std::to_string(p.param.nodes); });

TEST(ParseFixtures, PolarisAllGatherKeepsTheZeroSizeRows) {
  PILOT_REQUIRE_FIXTURE(fixture("polaris-nccl218-n2.txt"));
  const Dataset data = load("polaris-nccl218-n2.txt");
  const calibration::Run& allgather = data.runs.front();
  ASSERT_EQ(rows(allgather), 29u);
  for (size_t i = 0; i < 10; i += 2) EXPECT_EQ(allgather.samples[i].size, 0u);  // 5 rows of 0
  EXPECT_EQ(allgather.samples[10].size, 128u);
  EXPECT_EQ(allgather.samples[10].redop, "none");
}

TEST(ParseFixtures, EveryFixtureIsReadWithoutInputProblems) {
  PILOT_REQUIRE_FIXTURE(fixture());
  for (const auto& entry : std::filesystem::directory_iterator(fixture())) {
    SCOPED_TRACE(entry.path().string());
    const Dataset data = loadDataset({entry.path().string()}, labels({"*=default"}));
    EXPECT_FALSE(data.runs.empty());
    for (const std::string& p : data.problems) {
      EXPECT_EQ(p.find("no nccl-tests output"), std::string::npos) << p;
    }
  }
}

}  // namespace
}  // namespace pilot::calibration
