// fit, evaluate and report on the real sweeps in ../shared/fixtures/nccl-tests (skipped without).
#include <gtest/gtest.h>

#include <dirent.h>

#include <cmath>
#include <map>

#include "pilot/calibration/dataset_loader.h"
#include "pilot/calibration/evaluate.h"
#include "pilot/calibration/fit.h"
#include "pilot/calibration/report.h"
#include "pilot/tuner/table.h"
#include "published_fixture.h"

namespace pilot::calibration {
namespace {

const std::string kDir = testsupport::sharedFixture("nccl-tests");

Dataset load(const std::vector<std::string>& files, const std::vector<std::string>& labels) {
  LoadOptions options;
  for (const std::string& l : labels) {
    auto rule = parseLabelRule(l);
    EXPECT_TRUE(rule.ok()) << l;
    if (rule.ok()) options.labels.push_back(*rule);
  }
  std::vector<std::string> paths;
  for (const std::string& f : files) paths.push_back(kDir + "/" + f);
  return loadDataset(paths, options);
}

// The labels docs/calibration.md gives for this sweep.
const std::vector<std::string> kL40sLabels = {"iteration_*=default", "ring=NCCL_ALGO=Ring",
                                              "tree=NCCL_ALGO=Tree", "auto_*=NCCL_PROTO=*"};

Dataset l40s() {
  return load({"l40s-1n4gpu-allreduce-forced.txt"}, kL40sLabels);
}

void expectLoadsCleanly(const FitResult& r) {
  const tuner::ParsedTable parsed = tuner::parseTable(tableText(r), "fitted.table");
  EXPECT_TRUE(parsed.diagnostics.empty())
      << parsed.diagnostics[0].line << ": " << parsed.diagnostics[0].message;
  EXPECT_EQ(parsed.table.rules.size(), r.rules.size());
}

TEST(FitFixtures, L40sFitsAndLoads) {
  PILOT_REQUIRE_FIXTURE(kDir + "/l40s-1n4gpu-allreduce-forced.txt");
  const FitResult r = fit(l40s(), FitOptions{});
  ASSERT_EQ(r.data.shapes.size(), 1u);
  const Shape& shape = r.data.shapes[0];
  EXPECT_EQ(shape.key.str(), "allreduce nodes=1 ranks=4");
  std::map<std::string, size_t> runs;
  for (const Series& s : shape.series) runs[s.label] = s.runs.size();
  EXPECT_EQ(runs, (std::map<std::string, size_t>{{"default", 3},
                                                 {"auto_ll", 1},
                                                 {"auto_ll128", 1},
                                                 {"auto_simple", 1},
                                                 {"ring", 1},
                                                 {"tree", 1}}));
  EXPECT_EQ(r.decisions.size(), 25u);  // 8 B .. 128 MB
  EXPECT_TRUE(r.data.excluded.empty());
  EXPECT_EQ(r.ncclVersion, "2.29.2");
  // The measured verdict (docs/calibration.md): NCCL's default is within noise of the best
  // at every size on this node, so the fitted table overrides nothing.
  EXPECT_EQ(r.rules.size(), 0u);
  for (const Decision& d : r.decisions) {
    EXPECT_LT(d.fastestGain, 0.05) << d.size;
  }
  expectLoadsCleanly(r);
  // Forced protocol -> proto= restrict; forced algorithm -> algo= restrict.
  const auto j = fitJson(r);
  std::map<std::string, std::string> rules;
  for (const auto& c : j["configs"]) {
    if (!c["rule"].is_null()) rules[c["label"]] = c["rule"];
  }
  EXPECT_EQ(rules["auto_ll"], "proto=ll");
  EXPECT_EQ(rules["auto_ll128"], "proto=ll128");
  EXPECT_EQ(rules["ring"], "algo=ring");
  EXPECT_EQ(rules["tree"], "algo=tree");
}

TEST(FitFixtures, L40sEvaluationMeetsTheDoneCriterion) {
  PILOT_REQUIRE_FIXTURE(kDir + "/l40s-1n4gpu-allreduce-forced.txt");
  const Evaluation e = evaluate(l40s(), FitOptions{});
  EXPECT_EQ(e.folds, 3);
  EXPECT_EQ(e.sizes.size(), 25u);
  EXPECT_TRUE(e.meetsCriterion());
  EXPECT_GE(e.oracleFraction, e.defaultOracleFraction);
  EXPECT_EQ(e.slowerSizes, 0);
  // The figures in docs/calibration.md.
  EXPECT_NEAR(e.oracleFraction, 0.9818, 0.0005);
  EXPECT_NEAR(e.defaultOracleFraction, 0.9818, 0.0005);
}

TEST(FitFixtures, L40sReportRenders) {
  PILOT_REQUIRE_FIXTURE(kDir + "/l40s-1n4gpu-allreduce-forced.txt");
  const FitResult r = fit(l40s(), FitOptions{});
  const std::string html = reportHtml(r, fitChoices(r), ReportOptions{});
  EXPECT_NE(html.find("allreduce · 1 node · 4 ranks"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

TEST(FitFixtures, P5RepeatsShowTheNoiseThatGuardsTheDefault) {
  PILOT_REQUIRE_FIXTURE(kDir + "/p5-2n-allreduce-nccl2223-a.txt");
  // Two identical 2-node H100 runs: their disagreement is the noise bar.
  const FitResult r =
      fit(load({"p5-2n-allreduce-nccl2223-a.txt", "p5-2n-allreduce-nccl2223-b.txt"}, {"*=default"}),
          FitOptions{});
  ASSERT_EQ(r.data.shapes.size(), 1u);
  EXPECT_EQ(r.data.shapes[0].series[0].runs.size(), 2u);
  std::map<uint64_t, const Decision*> at;
  for (const Decision& d : r.decisions) at[d.size] = &d;
  ASSERT_TRUE(at.count(8192));
  EXPECT_GT(at[8192]->defaultSpread, 0.15);  // research/tuner.md: up to 19% at 8 KB
  EXPECT_GT(at[8192]->threshold, 0.15);
  ASSERT_TRUE(at.count(64u << 20));
  EXPECT_LT(at[64u << 20]->defaultSpread, 0.02);  // under 2% above 2 MB
  EXPECT_EQ(at[64u << 20]->threshold, kDefaultMargin);
}

TEST(FitFixtures, PolarisNodeModelPredictsHeldOutNodeCounts) {
  PILOT_REQUIRE_FIXTURE(kDir + "/polaris-nccl218-n2.txt");
  const FitResult r = fit(load({"polaris-nccl218-n2.txt", "polaris-nccl218-n8.txt",
                                "polaris-nccl218-n128.txt", "polaris-nccl218-n540.txt"},
                               {"*=default"}),
                          FitOptions{});
  // The 128-node file's launch failures are reported, not used.
  EXPECT_EQ(r.data.excluded.size(), 8u);
  EXPECT_TRUE(r.rules.empty());  // defaults only, one run per setup
  expectLoadsCleanly(r);
  auto model = [&](const std::string& coll, const std::string& setupPrefix) {
    for (const NodeModelReport& m : r.nodeModels) {
      if (m.collective == coll && m.setup.rfind(setupPrefix, 0) == 0) return &m;
    }
    return static_cast<const NodeModelReport*>(nullptr);
  };
  // The figures in docs/calibration.md.
  const NodeModelReport* tcp = model("allreduce", "(1)");
  ASSERT_NE(tcp, nullptr);
  EXPECT_EQ(tcp->nodeCounts, (std::vector<int>{2, 8, 128}));
  EXPECT_EQ(tcp->scale, NodeScale::Log2);
  EXPECT_LT(tcp->medianRelError, 0.12);
  const NodeModelReport* ofi = model("allreduce", "(5)");
  ASSERT_NE(ofi, nullptr);
  EXPECT_EQ(ofi->nodeCounts, (std::vector<int>{2, 8, 540}));
  EXPECT_LT(ofi->medianRelError, 0.22);
  const NodeModelReport* ag = model("allgather", "(5)");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->nodeCounts, (std::vector<int>{2, 8, 128, 540}));
  EXPECT_EQ(ag->scale, NodeScale::Linear);  // a ring: one step per rank
  EXPECT_LT(ag->medianRelError, 0.20);
}

// The 2-node g5 sweeps (one A10G per node, NCCL's socket transport over ENA): one run per
// configuration, two different clusters (sequential: per-op time; overlap: iteration time with
// a matmul beside it).
const std::vector<std::string> kG5Labels = {"default=default",
                                            "ring_ll=NCCL_ALGO=Ring,NCCL_PROTO=LL",
                                            "ring_ll128=NCCL_ALGO=Ring,NCCL_PROTO=LL128",
                                            "ring_simple=NCCL_ALGO=Ring,NCCL_PROTO=Simple",
                                            "tree_ll=NCCL_ALGO=Tree,NCCL_PROTO=LL",
                                            "tree_ll128=NCCL_ALGO=Tree,NCCL_PROTO=LL128",
                                            "tree_simple=NCCL_ALGO=Tree,NCCL_PROTO=Simple"};

Dataset g5(const std::string& mode) {
  return load({"cs244c-g5-a10g-2n1gpu-allreduce-" + mode + ".txt",
               "cs244c-g5-a10g-2n1gpu-allgather-" + mode + ".txt"},
              kG5Labels);
}

tuner::TuningTable fittedTable(const FitResult& r) {
  tuner::ParsedTable parsed = tuner::parseTable(tableText(r), "fitted.table");
  EXPECT_TRUE(parsed.diagnostics.empty());
  return parsed.table;
}

TEST(FitFixtures, G5SingleRunsEstimateTheNoiseAndStayUnkeyed) {
  PILOT_REQUIRE_FIXTURE(kDir + "/cs244c-g5-a10g-2n1gpu-allreduce-sequential.txt");
  for (const char* mode : {"sequential", "overlap"}) {
    SCOPED_TRACE(mode);
    const FitResult r = fit(g5(mode), FitOptions{});
    ASSERT_EQ(r.shapes.size(), 2u);
    for (const ShapeFit& s : r.shapes) {
      EXPECT_EQ(s.evidence.kind, EvidenceKind::Estimated);
      // The logs carry no NCCL lines: no keys, and the table says so.
      EXPECT_TRUE(s.ncclVersions.any());
      EXPECT_EQ(s.fabrics, 0);
      EXPECT_NE(s.keys.find("NCCL version unknown"), std::string::npos) << s.keys;
    }
    for (const FittedRule& rule : r.rules) {
      EXPECT_NE(rule.comment.find("evidence: estimated noise"), std::string::npos);
      EXPECT_FALSE(rule.rule.expected.empty());
    }
    // In-sample, nothing is slower than the default beyond noise.
    EXPECT_EQ(scoreTable(fittedTable(r), g5(mode), FitOptions{}).slowerSizes, 0);
  }
}

/// Sizes where the table's choice is slower than NCCL's default by more than 10% (issue 13).
int tenPercentSlower(const TableScore& s) {
  int n = 0;
  for (const TableSizeScore& x : s.sizes) n += x.scored && x.speedup < 1.0 / 1.10;
  return n;
}

/// The share of the default-to-fastest gap captured over one collective's sizes.
double gapCaptured(const TableScore& s, const std::string& collective) {
  double table = 0, def = 0;
  int n = 0;
  for (const TableSizeScore& x : s.sizes) {
    if (!x.scored || x.shape.collective != collective) continue;
    table += std::log(x.fraction), def += std::log(x.defaultFraction), ++n;
  }
  const double ft = std::exp(table / n), fd = std::exp(def / n);
  return fd < 1 ? (ft - fd) / (1 - fd) : 0.0;
}

TEST(FitFixtures, G5TablesScoredOnTheOtherCluster) {
  PILOT_REQUIRE_FIXTURE(kDir + "/cs244c-g5-a10g-2n1gpu-allreduce-sequential.txt");
  // The figures in docs/calibration.md ("On the g5 sweeps"). Every configuration NCCL could
  // pick was forced, so the noise comes from the twin of the default.
  for (const char* mode : {"sequential", "overlap"}) {
    for (const Shape& shape : summarize(g5(mode)).shapes) {
      EXPECT_EQ(assessEvidence(shape, FitOptions{}).source, NoiseSource::Twin) << mode;
    }
  }
  // Fitted on the sequential sweep: no band beats its twin-sized noise, so the table changes
  // nothing on the overlap cluster.
  const FitResult seq = fit(g5("sequential"), FitOptions{});
  EXPECT_EQ(seq.rules.size(), 0u);
  const TableScore onOverlap = scoreTable(fittedTable(seq), g5("overlap"), FitOptions{});
  EXPECT_EQ(onOverlap.scored, 51);
  EXPECT_EQ(onOverlap.slowerSizes, 0);
  EXPECT_EQ(tenPercentSlower(onOverlap), 0);
  EXPECT_NEAR(onOverlap.defaultFraction, 0.8713, 0.0005);
  EXPECT_DOUBLE_EQ(onOverlap.gapCaptured, 0.0);
  // Fitted on the overlap sweep: Tree/LL at 8..32 bytes and Tree/LL128 at 8K..64K for
  // AllReduce. The sequential cluster keeps most of it: no size is more than 10% slower than
  // the default (the worst, Tree/LL at 8 bytes, is 7% slower), and a sixth of AllReduce's gap
  // is captured. (With the roughness estimate instead, six bands, six sizes more than 10%
  // slower and -57% of the gap.)
  const FitResult ovl = fit(g5("overlap"), FitOptions{});
  ASSERT_EQ(ovl.rules.size(), 2u);
  auto line = [](tuner::Rule rule) {
    rule.expected.clear();  // the measured times, checked elsewhere
    return tuner::formatRule(rule);
  };
  EXPECT_EQ(line(ovl.rules[0].rule), "allreduce size=..44 algo=tree proto=ll nodes=2 ranks=2");
  EXPECT_EQ(line(ovl.rules[1].rule),
            "allreduce size=5632..88K algo=tree proto=ll128 nodes=2 ranks=2");
  EXPECT_NE(ovl.rules[0].comment.find("evidence: estimated noise from the twin of the default"),
            std::string::npos)
      << ovl.rules[0].comment;
  const TableScore inSample = scoreTable(fittedTable(ovl), g5("overlap"), FitOptions{});
  EXPECT_NEAR(inSample.gapCaptured, 0.289, 0.005);
  EXPECT_EQ(inSample.slowerSizes, 0);
  const TableScore onSequential = scoreTable(fittedTable(ovl), g5("sequential"), FitOptions{});
  EXPECT_EQ(onSequential.scored, 51);
  EXPECT_EQ(onSequential.slowerSizes, 0);
  EXPECT_EQ(tenPercentSlower(onSequential), 0);
  ASSERT_GE(onSequential.worst, 0);
  EXPECT_NEAR(onSequential.sizes[static_cast<size_t>(onSequential.worst)].speedup, 0.928, 0.001);
  EXPECT_NEAR(onSequential.defaultFraction, 0.9220, 0.0005);
  EXPECT_NEAR(onSequential.fraction, 0.9304, 0.0005);
  EXPECT_NEAR(onSequential.gapCaptured, 0.108, 0.005);
  EXPECT_NEAR(gapCaptured(onSequential, "allreduce"), 0.182, 0.005);
  EXPECT_DOUBLE_EQ(gapCaptured(onSequential, "allgather"), 0.0);
}

TEST(FitFixtures, L40sTableScoredOnItsSweepNeverLosesToTheDefault) {
  PILOT_REQUIRE_FIXTURE(kDir + "/l40s-1n4gpu-allreduce-forced.txt");
  const FitResult r = fit(l40s(), FitOptions{});
  EXPECT_EQ(r.shapes[0].evidence.kind, EvidenceKind::Repeats);
  const TableScore s = scoreTable(fittedTable(r), l40s(), FitOptions{});
  EXPECT_EQ(s.scored, 25);
  EXPECT_EQ(s.slowerSizes, 0);
  EXPECT_DOUBLE_EQ(s.speedup, 1.0);                // no rules: NCCL's default everywhere
  EXPECT_NEAR(s.defaultFraction, 0.9863, 0.0005);  // medians of the repeats, in-sample
}

TEST(FitFixtures, L40sWithOneDefaultRunStillOverridesNothing) {
  PILOT_REQUIRE_FIXTURE(kDir + "/l40s-1n4gpu-allreduce-forced.txt");
  // Each default repeat alone beside the forced runs: the noise is estimated, and the verdict
  // stays that of the three repeats. Scored on all of them, nothing is slower.
  for (int keep = 1; keep <= 3; ++keep) {
    SCOPED_TRACE("iteration_" + std::to_string(keep));
    const FitResult r =
        fit(load({"l40s-1n4gpu-allreduce-forced.txt"},
                 {"iteration_" + std::to_string(keep) + "=default", "ring=NCCL_ALGO=Ring",
                  "tree=NCCL_ALGO=Tree", "auto_*=NCCL_PROTO=*"}),
            FitOptions{});
    ASSERT_EQ(r.shapes.size(), 1u);
    EXPECT_EQ(r.shapes[0].evidence.kind, EvidenceKind::Estimated);
    EXPECT_TRUE(r.rules.empty());
    EXPECT_EQ(scoreTable(fittedTable(r), l40s(), FitOptions{}).slowerSizes, 0);
  }
}

TEST(FitFixtures, EstimatedNoiseAgainstRealRepeats) {
  PILOT_REQUIRE_FIXTURE(kDir + "/p5-2n-allreduce-nccl2223-a.txt");
  // docs/calibration.md: the noise estimated from one run, against the run-to-run noise the
  // repeats show (robust sigma of one measurement's log-time).
  const Dataset both =
      load({"p5-2n-allreduce-nccl2223-a.txt", "p5-2n-allreduce-nccl2223-b.txt"}, {"*=default"});
  const Measurements m = summarize(both);
  std::vector<double> between;
  for (const SizeStat& st : m.shapes[0].defaults()->sizes) {
    between.push_back(std::fabs(std::log(st.times[0] / st.times[1])) / std::sqrt(2.0) / 0.6745);
  }
  const double runToRun = median(between);
  EXPECT_NEAR(runToRun, 0.010, 0.001);
  for (const char* file : {"p5-2n-allreduce-nccl2223-a.txt", "p5-2n-allreduce-nccl2223-b.txt"}) {
    SCOPED_TRACE(file);
    const Measurements one = summarize(load({file}, {"*=default"}));
    const ShapeEvidence ev = assessEvidence(one.shapes[0], FitOptions{});
    ASSERT_EQ(ev.kind, EvidenceKind::Estimated);
    EXPECT_GT(median(ev.sigma), 2 * runToRun);  // 2.2% and 2.5%: it errs high here
  }
  // L40S: one default run and the forced ones, against the spread of the three default runs.
  std::vector<double> sd;
  const Measurements l = summarize(l40s());
  for (const SizeStat& st : l.shapes[0].defaults()->sizes) {
    double mean = 0, var = 0;
    for (double t : st.times) mean += std::log(t) / 3;
    for (double t : st.times) var += (std::log(t) - mean) * (std::log(t) - mean) / 2;
    sd.push_back(std::sqrt(var));
  }
  EXPECT_NEAR(median(sd), 0.0127, 0.0005);
  const Measurements single = summarize(
      load({"l40s-1n4gpu-allreduce-forced.txt"}, {"iteration_1=default", "ring=NCCL_ALGO=Ring",
                                                  "tree=NCCL_ALGO=Tree", "auto_*=NCCL_PROTO=*"}));
  const double estimated = median(assessEvidence(single.shapes[0], FitOptions{}).sigma);
  EXPECT_GT(estimated, 0.8 * median(sd));  // 1.1%: close to it, a little below
  EXPECT_LT(estimated, 1.2 * median(sd));
}

TEST(FitFixtures, EveryFixtureFitsToATableThatLoads) {
  PILOT_REQUIRE_FIXTURE(kDir);
  DIR* dir = opendir(kDir.c_str());
  ASSERT_NE(dir, nullptr) << kDir;
  int files = 0;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.size() < 5 || name.substr(name.size() - 4) != ".txt") continue;
    SCOPED_TRACE(name);
    ++files;
    const bool forced = name.rfind("l40s", 0) == 0;
    const Dataset data = load({name}, forced ? kL40sLabels : std::vector<std::string>{"*=default"});
    const FitResult r = fit(data, FitOptions{});
    EXPECT_FALSE(r.data.shapes.empty());
    size_t sizes = 0;
    for (const Shape& s : r.data.shapes) {
      if (const Series* d = s.defaults()) sizes += d->sizes.size();
    }
    EXPECT_EQ(r.decisions.size(), sizes);
    expectLoadsCleanly(r);
    const Evaluation e = evaluate(data, FitOptions{});
    EXPECT_EQ(e.slowerSizes, 0);
  }
  closedir(dir);
  EXPECT_GE(files, 9);
}

}  // namespace
}  // namespace pilot::calibration
