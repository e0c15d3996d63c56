// fit never uses a bad run silently: failed, wrong-result, empty and unidentified runs are
// excluded, and every exclusion is reported in the table, the JSON and the result.
#include <gtest/gtest.h>

#include "fit_test_support.h"
#include "pilot/calibration/fit.h"
#include "pilot/tuner/table.h"

namespace pilot::calibration {
namespace {

using test::alphaBeta;
using test::configOf;
using test::flatNoise;
using test::makeRun;
using test::Noise;
using test::SweepSpec;

TEST(FitInputs, BadRunsAreExcludedAndReported) {
  SweepSpec spec;
  Noise noise(1);
  const auto slow = alphaBeta(20, 5);
  const auto fast = alphaBeta(2, 50);  // what a broken run would make ring look like
  Dataset data;
  for (int r = 0; r < 3; ++r) {
    data.runs.push_back(
        makeRun(spec, configOf("default", "", ""), slow, noise, flatNoise(0.01), r));
    data.runs.push_back(
        makeRun(spec, configOf("ring", "Ring", ""), slow, noise, flatNoise(0.01), r));
  }
  // A launch failure, as the parser marks it.
  calibration::Run launch =
      makeRun(spec, configOf("ring", "Ring", ""), fast, noise, flatNoise(0), 3);
  launch.samples.clear();
  launch.failed = true;
  launch.problems = {"launch failed on node7: Couldn't allocate a port for PMI to use"};
  data.runs.push_back(launch);
  // Wrong results: marked failed by the parser ...
  calibration::Run wrong =
      makeRun(spec, configOf("ring", "Ring", ""), fast, noise, flatNoise(0), 4);
  wrong.samples[10].wrong = 3;
  wrong.failed = true;
  wrong.problems = {"#wrong = 3 at size 8192"};
  data.runs.push_back(wrong);
  // ... and one a hand-built dataset forgot to mark.
  calibration::Run unmarked =
      makeRun(spec, configOf("ring", "Ring", ""), fast, noise, flatNoise(0), 5);
  unmarked.samples[4].wrong = 1;
  data.runs.push_back(unmarked);
  // Empty (truncated before the first row), and one without a collective.
  calibration::Run empty =
      makeRun(spec, configOf("ring", "Ring", ""), fast, noise, flatNoise(0), 6);
  empty.samples.clear();
  data.runs.push_back(empty);
  calibration::Run unknown =
      makeRun(spec, configOf("ring", "Ring", ""), fast, noise, flatNoise(0), 7);
  unknown.collective.clear();
  data.runs.push_back(unknown);

  const FitResult r = fit(data, FitOptions{});
  ASSERT_EQ(r.data.excluded.size(), 5u);
  EXPECT_NE(r.data.excluded[0].reasons[0].find("launch failed"), std::string::npos);
  EXPECT_NE(r.data.excluded[1].reasons[0].find("#wrong"), std::string::npos);
  EXPECT_NE(r.data.excluded[2].reasons[0].find("#wrong = 1"), std::string::npos);
  EXPECT_NE(r.data.excluded[3].reasons[0].find("no out-of-place"), std::string::npos);
  EXPECT_NE(r.data.excluded[4].reasons[0].find("unknown collective"), std::string::npos);
  // The broken runs' impossible speed never reaches a decision.
  EXPECT_TRUE(r.rules.empty());
  for (const Shape& s : r.data.shapes) {
    for (const Series& se : s.series) EXPECT_EQ(se.runs.size(), 3u) << se.label;
  }

  const std::string table = tableText(r);
  size_t listed = 0;
  for (size_t at = table.find("# excluded:"); at != std::string::npos;
       at = table.find("# excluded:", at + 1)) {
    ++listed;
  }
  EXPECT_EQ(listed, 5u);
  EXPECT_TRUE(tuner::parseTable(table, "t").diagnostics.empty());
  const auto json = fitJson(r);
  ASSERT_EQ(json["excluded_runs"].size(), 5u);
  EXPECT_EQ(json["excluded_runs"][0]["source"], launch.source);
}

TEST(FitInputs, MixedCollectivesAndSetupsAreNeverPooled) {
  SweepSpec ar, ag, other;
  ag.collective = "allgather";
  other.setup = "tcp";
  Noise noise(2);
  Dataset data;
  for (int r = 0; r < 2; ++r) {
    data.runs.push_back(
        makeRun(ar, configOf("default", "", ""), alphaBeta(10, 5), noise, flatNoise(0.01), r));
    data.runs.push_back(
        makeRun(ag, configOf("default", "", ""), alphaBeta(50, 1), noise, flatNoise(0.01), r));
    data.runs.push_back(
        makeRun(other, configOf("default", "", ""), alphaBeta(90, 1), noise, flatNoise(0.01), r));
  }
  const FitResult r = fit(data, FitOptions{});
  ASSERT_EQ(r.data.shapes.size(), 3u);
  for (const Shape& s : r.data.shapes) {
    ASSERT_EQ(s.series.size(), 1u);
    EXPECT_EQ(s.series[0].runs.size(), 2u);
    EXPECT_LT(s.series[0].sizes[0].spread, 0.05);  // never a mix of 10 us and 90 us
  }
  // The table cannot tell setups apart; the user is told.
  bool warned = false;
  for (const std::string& n : r.notes) warned = warned || n.find("setups") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(FitInputs, TooFewDefaultRepeatsEstimateTheNoise) {
  SweepSpec spec;
  Noise noise(3);
  Dataset data;
  data.runs.push_back(
      makeRun(spec, configOf("default", "", ""), alphaBeta(30, 5), noise, flatNoise(0.01), 0));
  for (int r = 0; r < 3; ++r) {
    data.runs.push_back(
        makeRun(spec, configOf("ll", "", "LL"), alphaBeta(5, 5), noise, flatNoise(0.01), r));
  }
  // One default run: its noise is not measured but estimated from the data, and LL's large
  // latency gain (gone at large sizes, where both are bandwidth) still beats the bigger bar.
  FitResult r = fit(data, FitOptions{});
  ASSERT_EQ(r.shapes.size(), 1u);
  EXPECT_EQ(r.shapes[0].evidence.kind, EvidenceKind::Estimated);
  EXPECT_NE(r.shapes[0].evidence.summary.find("--min-repeats 2"), std::string::npos)
      << r.shapes[0].evidence.summary;
  ASSERT_EQ(r.rules.size(), 1u);
  EXPECT_EQ(r.rules[0].rule.protocols, tuner::bit(tuner::Protocol::LL));
  for (const Decision& d : r.decisions) {
    if (d.chosen != kDefaultChoice) {
      EXPECT_GT(d.gain, 2 * kDefaultMargin);
    }
  }
  // The user may accept a single default run at face value: the margin alone is the bar.
  FitOptions once;
  once.minRepeats = 1;
  r = fit(data, once);
  EXPECT_EQ(r.shapes[0].evidence.kind, EvidenceKind::Repeats);
  EXPECT_EQ(r.rules.size(), 1u);
}

TEST(FitInputs, AShapeWithoutDefaultRunsGetsNoRules) {
  SweepSpec spec;
  Noise noise(4);
  Dataset data;
  for (int r = 0; r < 3; ++r) {
    data.runs.push_back(
        makeRun(spec, configOf("ll", "", "LL"), alphaBeta(5, 5), noise, flatNoise(0.01), r));
  }
  const FitResult r = fit(data, FitOptions{});
  EXPECT_TRUE(r.rules.empty());
  EXPECT_TRUE(r.decisions.empty());
  EXPECT_NE(r.shapes[0].note.find("not measured"), std::string::npos);
}

}  // namespace
}  // namespace pilot::calibration
