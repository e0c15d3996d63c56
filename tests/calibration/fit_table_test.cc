// What fit writes: configurations as table choices, a table that loads without a diagnostic
// and carries its provenance, and a JSON report with one decision per measured size.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

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

std::string choiceOf(const Config& c) {
  auto rule = ruleForConfig(c);
  if (!rule.ok()) return "error: " + rule.error();
  tuner::Rule r = *rule;
  r.collectives = tuner::bit(tuner::Collective::AllReduce);
  return tuner::formatRule(r);
}

TEST(FitTable, ConfigurationsBecomeTheMatchingChoice) {
  EXPECT_EQ(choiceOf(configOf("x", "Ring", "")), "allreduce algo=ring");
  EXPECT_EQ(choiceOf(configOf("x", "", "LL128")), "allreduce proto=ll128");
  EXPECT_EQ(choiceOf(configOf("x", "Tree", "Simple")), "allreduce algo=tree proto=simple");
  EXPECT_TRUE(ruleForConfig(configOf("x", "Tree", "Simple"))->selectsOneCell());
  EXPECT_FALSE(ruleForConfig(configOf("x", "Tree", ""))->selectsOneCell());
  EXPECT_EQ(choiceOf(configOf("x", "Ring,Tree", "")), "allreduce algo=tree|ring");
  EXPECT_EQ(choiceOf(configOf("x", "^Tree", "^LL")),
            "allreduce algo=ring|collnet_direct|collnet_chain|nvls|nvls_tree|pat "
            "proto=ll128|simple");
  EXPECT_EQ(choiceOf(configOf("x", "", "", 4)), "allreduce channels=4");
  Config range = configOf("x", "", "");
  range.minChannels = 2;
  range.maxChannels = 8;
  EXPECT_EQ(choiceOf(range).rfind("error: ", 0), 0u);
  EXPECT_EQ(choiceOf(configOf("x", "allreduce:tree;allgather:ring", "")).rfind("error: ", 0), 0u);
  EXPECT_EQ(choiceOf(configOf("x", "rign", "")).rfind("error: ", 0), 0u);
}

FitResult crossoverFit(FitOptions options = {}) {
  SweepSpec spec;
  Noise noise(9);
  Dataset data;
  const auto def = test::switching(alphaBeta(10, 5), alphaBeta(30, 20), 1 << 20);
  for (int r = 0; r < 3; ++r) {
    data.runs.push_back(makeRun(spec, configOf("default", "", ""), def, noise, flatNoise(0.01), r));
    data.runs.push_back(makeRun(spec, configOf("simple", "", "Simple"), alphaBeta(30, 20), noise,
                                flatNoise(0.01), r));
    data.runs.push_back(makeRun(spec, configOf("tree_ll", "Tree", "LL"), alphaBeta(6, 5), noise,
                                flatNoise(0.01), r));
  }
  options.toolVersion = "9.9.9";
  options.inputs = {"a.txt", "b.txt"};
  options.date = "2026-11-29T16:00:00Z";
  return fit(data, options);
}

TEST(FitTable, WrittenTableLoadsWithoutDiagnosticsAndKeepsProvenance) {
  const FitResult r = crossoverFit();
  ASSERT_EQ(r.rules.size(), 2u);  // tree/LL for small sizes, Simple in the middle
  const std::string text = tableText(r);
  const tuner::ParsedTable parsed = tuner::parseTable(text, "fitted.table");
  EXPECT_TRUE(parsed.diagnostics.empty()) << parsed.diagnostics[0].message;
  ASSERT_EQ(parsed.table.rules.size(), r.rules.size());
  for (size_t i = 0; i < r.rules.size(); ++i) {
    EXPECT_EQ(tuner::formatRule(parsed.table.rules[i]), tuner::formatRule(r.rules[i].rule));
  }
  std::map<std::string, std::string> prov(parsed.table.provenance.begin(),
                                          parsed.table.provenance.end());
  EXPECT_EQ(prov["table"], "nccl-pilot 1");
  EXPECT_EQ(prov["fitted-by"], "nccl-pilot 9.9.9 fit");
  EXPECT_EQ(prov["date"], "2026-11-29T16:00:00Z");
  EXPECT_EQ(prov["inputs"], "a.txt, b.txt");
  EXPECT_EQ(prov["nccl"], "2.29.2");
  EXPECT_EQ(prov["margin"], "0.05");
  EXPECT_FALSE(prov["coverage"].empty());
  // A comment with the measured gain right above every rule.
  const std::string first = tuner::formatRule(r.rules[0].rule);
  const size_t at = text.find("\n" + first + "\n");
  ASSERT_NE(at, std::string::npos);
  const size_t comment = text.rfind("\n# ", at);
  EXPECT_NE(text.substr(comment, at - comment).find("faster than the default"), std::string::npos);
}

TEST(FitTable, BandsCoverEverySizeFromZeroAndMeetAtGeometricMidpoints) {
  const FitResult r = crossoverFit();
  const std::vector<Band>& bands = r.shapes[0].bands;
  ASSERT_GE(bands.size(), 3u);
  EXPECT_EQ(bands.front().lo, 0u);
  for (size_t i = 1; i < bands.size(); ++i) {
    EXPECT_EQ(bands[i].lo, bands[i - 1].hi + 1);
    // The edge lies between the two measured sizes, within 12.5% of their geometric mean.
    const double mid = std::sqrt(static_cast<double>(bands[i - 1].lastSize) *
                                 static_cast<double>(bands[i].firstSize));
    EXPECT_GT(static_cast<double>(bands[i - 1].hi), mid * 0.875);
    EXPECT_LE(static_cast<double>(bands[i - 1].hi), mid);
  }
  // First rule from 0; the rules meet edge to edge and the earlier one wins the shared byte.
  const tuner::Rule& small = r.rules[0].rule;
  EXPECT_EQ(small.size.lo, 0u);
  EXPECT_EQ(small.algorithms, tuner::bit(tuner::Algorithm::Tree));
  EXPECT_EQ(small.protocols, tuner::bit(tuner::Protocol::LL));
}

TEST(FitTable, JsonHasOneDecisionPerMeasuredSize) {
  const FitResult r = crossoverFit();
  const auto j = fitJson(r);
  const size_t sizes = test::sweepSizes(SweepSpec{}).size();
  ASSERT_EQ(j["decisions"].size(), sizes);
  std::set<std::string> chosen;
  for (const auto& d : j["decisions"]) {
    for (const char* key : {"collective", "nodes", "ranks", "size", "chosen", "time_us",
                            "default_time_us", "gain", "spread", "threshold"}) {
      EXPECT_TRUE(d.contains(key)) << key;
    }
    EXPECT_EQ(d["collective"], "allreduce");
    chosen.insert(d["chosen"].get<std::string>());
    if (d["chosen"] == "default") {
      EXPECT_EQ(d["gain"], 0.0);
    }
  }
  EXPECT_EQ(chosen, (std::set<std::string>{"default", "simple", "tree_ll"}));
  EXPECT_EQ(j["rules"], 2);
  EXPECT_EQ(j["margin"], 0.05);
  EXPECT_EQ(j["configs"].size(), 3u);
  EXPECT_TRUE(j.contains("extrapolation"));
  EXPECT_TRUE(j["excluded_runs"].empty());
}

TEST(FitTable, AWiderMarginWritesFewerOrEqualRules) {
  size_t previous = SIZE_MAX;
  for (double margin : {0.02, 0.05, 0.2, 0.6, 0.9}) {
    FitOptions o;
    o.margin = margin;
    const FitResult r = crossoverFit(o);
    size_t covered = 0;
    for (const Decision& d : r.decisions) covered += d.chosen != kDefaultChoice;
    EXPECT_LE(covered, previous) << margin;
    previous = covered;
    for (const Decision& d : r.decisions) {
      if (d.chosen != kDefaultChoice) {
        EXPECT_GT(d.gain, margin);
      }
    }
  }
  EXPECT_EQ(previous, 0u);
}

}  // namespace
}  // namespace pilot::calibration
