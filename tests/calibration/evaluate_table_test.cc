// A table scored on sweeps it was not fitted on (evaluate --table, fit --holdout), on small
// examples worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "pilot/calibration/evaluate.h"
#include "pilot/tuner/table.h"

namespace pilot::calibration {
namespace {

calibration::Run run(const std::string& label, const std::string& algo, const std::string& proto,
                     std::vector<std::pair<uint64_t, double>> times, int repeat) {
  calibration::Run r;
  r.source = label + "#" + std::to_string(repeat);
  r.collective = "allreduce";
  r.nodes = 2;
  r.ranks = 16;
  r.ncclVersion = "2.28.3";
  r.config.label = label;
  r.config.algo = algo;
  r.config.proto = proto;
  r.repeat = repeat;
  for (auto [size, t] : times) {
    Sample s;
    s.size = size;
    s.timeUs = t;
    r.samples.push_back(s);
  }
  return r;
}

tuner::TuningTable table(const std::string& text) {
  tuner::ParsedTable parsed = tuner::parseTable(text, "t.table");
  EXPECT_TRUE(parsed.diagnostics.empty()) << parsed.diagnostics[0].message;
  return parsed.table;
}

// Three repeats of the default (noise (max - min) / median = 10% at every size), one of Ring
// and one of Tree, at 1K, 2K and 4K.
Dataset sweep() {
  Dataset data;
  data.runs.push_back(run("default", "", "", {{1024, 10}, {2048, 20}, {4096, 40}}, 0));
  data.runs.push_back(run("default", "", "", {{1024, 10.5}, {2048, 21}, {4096, 42}}, 1));
  data.runs.push_back(run("default", "", "", {{1024, 9.5}, {2048, 19}, {4096, 38}}, 2));
  data.runs.push_back(run("ring", "Ring", "", {{1024, 8}, {2048, 25}, {4096, 30}}, 0));
  data.runs.push_back(run("tree", "Tree", "", {{1024, 5}, {2048, 18}, {4096, 44}}, 0));
  return data;
}

TEST(EvaluateTable, HandComputedScores) {
  // Ring up to 2K (a loser there: 25 against the default's 20), Tree from 4K (also a loser).
  const TableScore s =
      scoreTable(table("allreduce size=..2K algo=ring nodes=2\nallreduce size=4K.. algo=tree\n"),
                 sweep(), FitOptions{});
  ASSERT_EQ(s.sizes.size(), 3u);
  EXPECT_EQ(s.scored, 3);
  EXPECT_EQ(s.unscored, 0);
  const TableSizeScore& a = s.sizes[0];
  EXPECT_EQ(a.size, 1024u);
  EXPECT_EQ(a.ruleLine, 1);
  EXPECT_EQ(a.chosen, "ring");
  EXPECT_DOUBLE_EQ(a.chosenUs, 8);
  EXPECT_DOUBLE_EQ(a.defaultUs, 10);  // the median of the repeats
  EXPECT_EQ(a.best, "tree");
  EXPECT_DOUBLE_EQ(a.bestUs, 5);
  EXPECT_DOUBLE_EQ(a.speedup, 10.0 / 8);
  EXPECT_DOUBLE_EQ(a.fraction, 5.0 / 8);
  EXPECT_DOUBLE_EQ(a.defaultFraction, 5.0 / 10);
  EXPECT_NEAR(a.noise, 0.1, 1e-12);
  EXPECT_FALSE(a.slower);
  const TableSizeScore& b = s.sizes[1];  // ring 25 vs 20: 25% slower, beyond the 10% noise
  EXPECT_EQ(b.chosen, "ring");
  EXPECT_TRUE(b.slower);
  EXPECT_EQ(b.best, "tree");
  const TableSizeScore& c = s.sizes[2];  // tree 44 vs 40: 10% slower, within the noise
  EXPECT_EQ(c.ruleLine, 2);
  EXPECT_EQ(c.chosen, "tree");
  EXPECT_FALSE(c.slower);
  EXPECT_EQ(c.best, "ring");
  EXPECT_EQ(s.slowerSizes, 1);
  EXPECT_EQ(s.worst, 1);
  // Geometric means over the three sizes, and the gap they close.
  const double fraction = std::cbrt((5.0 / 8) * (18.0 / 25) * (30.0 / 44));
  const double defaultFraction = std::cbrt((5.0 / 10) * (18.0 / 20) * (30.0 / 40));
  EXPECT_NEAR(s.fraction, fraction, 1e-12);
  EXPECT_NEAR(s.defaultFraction, defaultFraction, 1e-12);
  EXPECT_NEAR(s.speedup, std::cbrt((10.0 / 8) * (20.0 / 25) * (40.0 / 44)), 1e-12);
  EXPECT_NEAR(s.gapCaptured, (fraction - defaultFraction) / (1 - defaultFraction), 1e-12);
  EXPECT_LT(s.gapCaptured, 0);  // this table loses ground
  const std::string text = tableScoreText(s);
  EXPECT_NE(text.find("SLOWER than the default beyond noise"), std::string::npos) << text;
  EXPECT_NE(text.find("sizes slower than the default beyond noise: 1 2K"), std::string::npos);
}

TEST(EvaluateTable, NoRuleIsNcclsDefault) {
  const TableScore s = scoreTable(table("allgather size=..4K algo=ring\n"), sweep(), FitOptions{});
  EXPECT_EQ(s.scored, 3);
  for (const TableSizeScore& x : s.sizes) {
    EXPECT_EQ(x.chosen, "default");
    EXPECT_EQ(x.ruleLine, 0);
    EXPECT_DOUBLE_EQ(x.speedup, 1);
  }
  EXPECT_NEAR(s.gapCaptured, 0, 1e-12);
  EXPECT_EQ(s.slowerSizes, 0);
  // A rule of only chunk= leaves NCCL's choice: the default ran.
  const TableScore chunk = scoreTable(table("allreduce chunk=64K\n"), sweep(), FitOptions{});
  EXPECT_EQ(chunk.sizes[0].ruleLine, 1);
  EXPECT_EQ(chunk.sizes[0].chosen, "default");
}

TEST(EvaluateTable, AChoiceNobodyMeasuredIsNotScored) {
  const TableScore s =
      scoreTable(table("allreduce size=..1K algo=ring proto=simple\n"), sweep(), FitOptions{});
  EXPECT_EQ(s.unscored, 1);
  EXPECT_EQ(s.scored, 2);
  EXPECT_FALSE(s.sizes[0].scored);
  EXPECT_NE(s.sizes[0].chosen.find("not measured"), std::string::npos);
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes[0].find("did not measure"), std::string::npos) << s.notes[0];
}

TEST(EvaluateTable, KeysAreCheckedAsTheTunerWould) {
  // The sweep ran NCCL 2.28.3 on an unknown fabric: nccl=2.27 does not apply, fabric=ib is
  // taken to (and the notes say so).
  const TableScore other =
      scoreTable(table("allreduce algo=tree nccl=2.27\n"), sweep(), FitOptions{});
  for (const TableSizeScore& x : other.sizes) EXPECT_EQ(x.chosen, "default");
  const TableScore same =
      scoreTable(table("allreduce algo=tree nccl=2.28 fabric=ib\n"), sweep(), FitOptions{});
  for (const TableSizeScore& x : same.sizes) EXPECT_EQ(x.chosen, "tree");
  bool noted = false;
  for (const std::string& n : same.notes) noted = noted || n.find("fabric") != std::string::npos;
  EXPECT_TRUE(noted);
  // A sweep that says its fabric: a rule for another one is dropped.
  Dataset socket = sweep();
  for (calibration::Run& r : socket.runs) r.fabrics = tuner::bit(Fabric::Ethernet);
  const TableScore dropped =
      scoreTable(table("allreduce algo=tree fabric=ib\n"), socket, FitOptions{});
  for (const TableSizeScore& x : dropped.sizes) EXPECT_EQ(x.chosen, "default");
}

TEST(EvaluateTable, WithoutADefaultThereIsNothingToScore) {
  Dataset data;
  data.runs.push_back(run("ring", "Ring", "", {{1024, 8}}, 0));
  const TableScore s = scoreTable(table("allreduce algo=ring\n"), data, FitOptions{});
  EXPECT_TRUE(s.sizes.empty());
  EXPECT_EQ(s.scored, 0);
  EXPECT_TRUE(std::isnan(s.gapCaptured));  // no gap to speak of
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes[0].find("not measured"), std::string::npos);
}

TEST(EvaluateTable, SideBySide) {
  const TableScore a = scoreTable(table("allreduce size=..1K algo=tree\n"), sweep(), FitOptions{});
  const TableScore b = scoreTable(table("allreduce size=..2K algo=ring\n"), sweep(), FitOptions{});
  const std::string text = scoreComparisonText(a, b);
  EXPECT_NE(text.find("in-sample    held-out"), std::string::npos) << text;
  EXPECT_NE(text.find("sizes slower than the default beyond noise             0           1"),
            std::string::npos)
      << text;
  const auto j = tableScoreJson(b);
  EXPECT_EQ(j["slower_sizes"], 1);
  EXPECT_EQ(j["sizes"].size(), 3u);
  EXPECT_EQ(j["worst"]["size"], 2048);
}

}  // namespace
}  // namespace pilot::calibration
