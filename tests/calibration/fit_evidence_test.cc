// Each evidence path of fit, with the table it writes on sweeps whose truth is known: the noise
// measured over repeats of the default, the noise estimated from single runs, and too little
// evidence to override anything.
#include <gtest/gtest.h>

#include <cmath>

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
using test::Truth;

// A multi-node TCP cluster of the kind the g5 sweeps come from (one GPU per node): NCCL's
// default is Ring, and Tree is 38% faster from 2 KB to 512 KB and 25% slower elsewhere.
const Truth kRing = alphaBeta(300, 1.1);
const Truth kTreeTruth = [](double s, int n) {
  return kRing(s, n) * (s >= 2048 && s <= 524288 ? 0.62 : 1.25);
};
const Truth kAlmost = [](double s, int n) { return kRing(s, n) * 0.97; };  // inside the bar

SweepSpec cluster() {
  SweepSpec spec;
  spec.nodes = 4;
  spec.ranks = 4;
  spec.ncclVersion = "2.27.5";
  return spec;
}

Dataset clusterSweep(int defaultRuns, int forcedRuns, uint32_t seed, double amplitude) {
  Noise noise(seed);
  Dataset data;
  for (int r = 0; r < defaultRuns; ++r) {
    data.runs.push_back(
        makeRun(cluster(), configOf("default", "", ""), kRing, noise, flatNoise(amplitude), r));
  }
  for (int r = 0; r < forcedRuns; ++r) {
    data.runs.push_back(makeRun(cluster(), configOf("tree", "Tree", ""), kTreeTruth, noise,
                                flatNoise(amplitude), r));
    data.runs.push_back(makeRun(cluster(), configOf("ring_ll", "Ring", "LL"), kAlmost, noise,
                                flatNoise(amplitude), r));
  }
  return data;
}

/// The rule as the table writes it, without its expect= points (checked on their own).
std::string ruleLine(const tuner::Rule& rule) {
  tuner::Rule r = rule;
  r.expected.clear();
  return tuner::formatRule(r);
}

/// expect= holds the chosen configuration's median (to 0.01 us) at every measured size inside
/// the band.
void expectPointsAreTheMeasuredTimes(const FitResult& r, const FittedRule& rule,
                                     const std::string& label) {
  const Series* chosen = nullptr;
  for (const Series& s : r.data.shapes[0].series) {
    if (s.label == label) chosen = &s;
  }
  ASSERT_NE(chosen, nullptr);
  size_t inside = 0;
  for (const SizeStat& st : chosen->sizes) {
    if (!rule.rule.size.contains(st.size)) continue;
    ASSERT_LT(inside, rule.rule.expected.size());
    EXPECT_EQ(rule.rule.expected[inside].bytes, st.size);
    EXPECT_NEAR(rule.rule.expected[inside].microseconds, st.timeUs, 0.005);
    ++inside;
  }
  EXPECT_EQ(inside, rule.rule.expected.size());
}

TEST(FitEvidence, RepeatsMeasureTheNoise) {
  const FitResult r = fit(clusterSweep(3, 2, 1, 0.02), FitOptions{});
  ASSERT_EQ(r.shapes.size(), 1u);
  const ShapeEvidence& ev = r.shapes[0].evidence;
  EXPECT_EQ(ev.kind, EvidenceKind::Repeats);
  EXPECT_EQ(ev.bandSizes, 2);
  EXPECT_DOUBLE_EQ(ev.floor, kDefaultMargin);
  EXPECT_TRUE(ev.sigma.empty());
  EXPECT_NE(ev.summary.find("noise measured: the default ran 3 times"), std::string::npos);
  // The expected table: Tree exactly where it wins, edges at the measured sizes beside the
  // cliffs (Tree is 25% slower at 1K and 1M), keyed to the NCCL the runs report.
  ASSERT_EQ(r.rules.size(), 1u);
  EXPECT_EQ(ruleLine(r.rules[0].rule),
            "allreduce size=2K..512K algo=tree nodes=4 ranks=4 nccl=2.27");
  expectPointsAreTheMeasuredTimes(r, r.rules[0], "tree");
  EXPECT_EQ(r.rules[0].rule.expected.size(), 9u);
  EXPECT_NE(r.rules[0].comment.find("evidence: repeats (default x3)"), std::string::npos)
      << r.rules[0].comment;
  EXPECT_NE(r.rules[0].comment.find("edge at the measured size on both sides"), std::string::npos);
  const std::string table = tableText(r);
  EXPECT_NE(table.find("#   evidence: noise measured"), std::string::npos) << table;
  EXPECT_NE(table.find("#   keys: nccl=2.27 (the runs report NCCL 2.27.5); fabric unknown"),
            std::string::npos)
      << table;
}

TEST(FitEvidence, SingleRunsEstimateTheNoiseAndDemandMore) {
  const FitResult r = fit(clusterSweep(1, 1, 1, 0.04), FitOptions{});
  ASSERT_EQ(r.shapes.size(), 1u);
  const ShapeEvidence& ev = r.shapes[0].evidence;
  EXPECT_EQ(ev.kind, EvidenceKind::Estimated);
  EXPECT_EQ(ev.bandSizes, kEstimatedBandSizes);
  EXPECT_DOUBLE_EQ(ev.floor, kEstimatedMarginFactor * kDefaultMargin);
  ASSERT_EQ(ev.sigma.size(), 25u);
  EXPECT_FALSE(ev.usedInPlace);  // makeRun prints the same time in both columns
  for (size_t i = 0; i < ev.noise.size(); ++i) {
    EXPECT_GE(ev.bar(i), 0.10);
    EXPECT_NEAR(ev.noise[i], 1 - std::exp(-2 * std::sqrt(2.0) * ev.sigma[i]), 1e-12);
  }
  EXPECT_TRUE(r.shapes[0].note.empty()) << r.shapes[0].note;
  // The same table as with repeats: the gain is far above any bar.
  ASSERT_EQ(r.rules.size(), 1u);
  EXPECT_EQ(ruleLine(r.rules[0].rule),
            "allreduce size=2K..512K algo=tree nodes=4 ranks=4 nccl=2.27");
  expectPointsAreTheMeasuredTimes(r, r.rules[0], "tree");
  EXPECT_NE(r.rules[0].comment.find("evidence: estimated noise (default x1, 3+ adjacent sizes)"),
            std::string::npos)
      << r.rules[0].comment;
  const std::string table = tableText(r);
  EXPECT_NE(table.find("#   evidence: noise estimated: the default ran 1 time(s)"),
            std::string::npos)
      << table;
}

TEST(FitEvidence, WithoutEveryProtocolForcedThereIsNoTwin) {
  // Tree and Ring/LL only: NCCL's own pick may be none of them, so the roughness decides.
  const ShapeEvidence ev = assessEvidence(summarize(clusterSweep(1, 1, 1, 0.04)).shapes[0], {});
  EXPECT_EQ(ev.source, NoiseSource::Roughness);
  EXPECT_TRUE(ev.twin.empty());
  EXPECT_NE(ev.summary.find("no twin of the default: LL, LL128 and Simple were not each forced"),
            std::string::npos)
      << ev.summary;
}

/// One default run beside one run of each of three forcing configurations, one a protocol
/// each: Ring/LL is what NCCL picks (the default's twin), Ring/LL128 is 40% slower, and Tree/
/// Simple is the cluster's Tree.
Dataset twinSweep(uint32_t seed, double amplitude) {
  const Truth slow = [](double s, int n) { return kRing(s, n) * 1.4; };
  Noise noise(seed);
  Dataset data;
  data.runs.push_back(
      makeRun(cluster(), configOf("default", "", ""), kRing, noise, flatNoise(amplitude), 0));
  data.runs.push_back(
      makeRun(cluster(), configOf("ring_ll", "Ring", "LL"), kRing, noise, flatNoise(amplitude), 0));
  data.runs.push_back(makeRun(cluster(), configOf("ring_ll128", "Ring", "LL128"), slow, noise,
                              flatNoise(amplitude), 0));
  data.runs.push_back(makeRun(cluster(), configOf("tree_simple", "Tree", "Simple"), kTreeTruth,
                              noise, flatNoise(amplitude), 0));
  return data;
}

TEST(FitEvidence, TheTwinOfTheDefaultSamplesTheRunToRunNoise) {
  // Uniform noise of +-a on each run: the difference of two runs has sigma a * sqrt(2/3).
  for (double amplitude : {0.06, 0.12}) {
    SCOPED_TRACE("amplitude " + std::to_string(amplitude));
    double sum = 0;
    int n = 0;
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      const Measurements m = summarize(twinSweep(seed, amplitude));
      const Shape& shape = m.shapes[0];
      const ShapeEvidence ev = assessEvidence(shape, FitOptions{});
      ASSERT_EQ(ev.kind, EvidenceKind::Estimated);
      ASSERT_EQ(ev.source, NoiseSource::Twin);
      ASSERT_EQ(ev.twin.size(), ev.noise.size());
      int ringLl = 0;
      for (size_t i = 0; i < ev.noise.size(); ++i) {
        ASSERT_GE(ev.twin[i], 0);
        ringLl += shape.series[static_cast<size_t>(ev.twin[i])].label == "ring_ll";
        // The gain must beat the noise bar over the faster of the default and its twin.
        EXPECT_NEAR(ev.bar(i), 1 - (1 - ev.noiseBar(i)) * std::exp(-ev.twinLead[i]), 1e-12);
        EXPECT_GE(ev.noiseBar(i), ev.floor);
      }
      EXPECT_GE(ringLl, static_cast<int>(ev.noise.size()) * 3 / 4);
      sum += ev.sigma[0] * std::sqrt(2.0), ++n;
    }
    const double ratio = sum / n / (amplitude * std::sqrt(2.0 / 3.0));
    EXPECT_GT(ratio, 0.85);
    EXPECT_LT(ratio, 1.3);
  }
}

TEST(FitEvidence, TheTwinPathWritesTheTrueBand) {
  const FitResult r = fit(twinSweep(1, 0.02), FitOptions{});
  ASSERT_EQ(r.shapes.size(), 1u);
  const ShapeEvidence& ev = r.shapes[0].evidence;
  EXPECT_EQ(ev.source, NoiseSource::Twin);
  EXPECT_NE(ev.summary.find("estimated noise from the twin of the default: the default ran 1 "
                            "time(s)"),
            std::string::npos)
      << ev.summary;
  ASSERT_EQ(r.rules.size(), 1u);
  EXPECT_EQ(ruleLine(r.rules[0].rule),
            "allreduce size=2K..512K algo=tree proto=simple nodes=4 ranks=4 nccl=2.27");
  EXPECT_NE(r.rules[0].comment.find(
                "evidence: estimated noise from the twin of the default (default x1, 3+ adjacent "
                "sizes)"),
            std::string::npos)
      << r.rules[0].comment;
  EXPECT_NE(tableText(r).find("#   evidence: estimated noise from the twin of the default"),
            std::string::npos);
}

TEST(FitEvidence, TooFewSizesToEstimateAnything) {
  SweepSpec spec = cluster();
  spec.minSize = 1024;
  spec.maxSize = 8192;  // four sizes
  Noise noise(2);
  Dataset data;
  data.runs.push_back(makeRun(spec, configOf("default", "", ""), kRing, noise, flatNoise(0.01), 0));
  data.runs.push_back(
      makeRun(spec, configOf("tree", "Tree", ""), kTreeTruth, noise, flatNoise(0.01), 0));
  const FitResult r = fit(data, FitOptions{});
  ASSERT_EQ(r.shapes.size(), 1u);
  EXPECT_EQ(r.shapes[0].evidence.kind, EvidenceKind::TooLittle);
  EXPECT_TRUE(r.rules.empty());
  for (const Decision& d : r.decisions) {
    EXPECT_EQ(d.chosenLabel, "default");
    EXPECT_EQ(d.reason, "too little evidence to override NCCL");
  }
  // The expected table: no rules, and why.
  const std::string table = tableText(r);
  EXPECT_NE(table.find("#   evidence: too little evidence: the default ran 1 time(s), fewer than "
                       "--min-repeats 2, and 4 measured size(s) are too few to estimate the "
                       "noise from (at least 5): nothing is overridden"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("# No rules: NCCL's own choices stand everywhere."), std::string::npos);
  // Asked to take single runs at face value, the same data gives a rule (margin only).
  FitOptions once;
  once.minRepeats = 1;
  const FitResult faceValue = fit(data, once);
  EXPECT_EQ(faceValue.shapes[0].evidence.kind, EvidenceKind::Repeats);
  EXPECT_NE(faceValue.shapes[0].evidence.summary.find("face value"), std::string::npos);
  EXPECT_EQ(faceValue.rules.size(), 1u);
}

TEST(FitEvidence, WithoutRepeatsAGainInsideTwiceTheMarginIsNotTaken) {
  // 8% faster everywhere, measured quietly: enough with repeats (bar 5%), not without (10%).
  const Truth faster = [](double s, int n) { return kRing(s, n) * 0.92; };
  for (int runs : {3, 1}) {
    SCOPED_TRACE(std::to_string(runs) + " run(s) each");
    Noise noise(5);
    Dataset data;
    for (int r = 0; r < runs; ++r) {
      data.runs.push_back(
          makeRun(cluster(), configOf("default", "", ""), kRing, noise, flatNoise(0.002), r));
      data.runs.push_back(
          makeRun(cluster(), configOf("ring", "Ring", ""), faster, noise, flatNoise(0.002), r));
    }
    const FitResult r = fit(data, FitOptions{});
    EXPECT_EQ(r.rules.size(), runs == 3 ? 1u : 0u);
  }
}

TEST(FitEvidence, WithoutRepeatsTwoWinningSizesAreNotABand) {
  // 30% faster at 64K and 128K only: two adjacent sizes make a band with repeats, not without.
  const Truth two = [](double s, int n) {
    return kRing(s, n) * (s == 65536 || s == 131072 ? 0.7 : 1.0);
  };
  for (int runs : {3, 1}) {
    SCOPED_TRACE(std::to_string(runs) + " run(s) each");
    Noise noise(6);
    Dataset data;
    for (int r = 0; r < runs; ++r) {
      data.runs.push_back(
          makeRun(cluster(), configOf("default", "", ""), kRing, noise, flatNoise(0.002), r));
      data.runs.push_back(
          makeRun(cluster(), configOf("ring", "Ring", ""), two, noise, flatNoise(0.002), r));
    }
    const FitResult r = fit(data, FitOptions{});
    ASSERT_EQ(r.rules.size(), runs == 3 ? 1u : 0u);
    if (runs == 1) {
      for (const Decision& d : r.decisions) {
        if (d.size != 65536) continue;
        EXPECT_NE(d.reason.find("a band needs 3 adjacent sizes"), std::string::npos) << d.reason;
      }
    }
  }
}

TEST(FitEvidence, TheEstimatedNoiseFollowsTheTrueNoise) {
  // Every configuration the same smooth curve; uniform noise of +-a has sigma a / sqrt(3).
  for (double amplitude : {0.02, 0.06, 0.12}) {
    SCOPED_TRACE("amplitude " + std::to_string(amplitude));
    double sum = 0;
    int n = 0;
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      Noise noise(seed);
      Dataset data;
      for (const char* label : {"default", "ring", "tree"}) {
        const std::string algo = std::string(label) == "default" ? "" : label;
        data.runs.push_back(
            makeRun(cluster(), configOf(label, algo, ""), kRing, noise, flatNoise(amplitude), 0));
      }
      const Measurements m = summarize(data);
      const ShapeEvidence ev = assessEvidence(m.shapes[0], FitOptions{});
      for (double s : ev.sigma) sum += s, ++n;
    }
    const double ratio = sum / n / (amplitude / std::sqrt(3.0));
    // A robust scale of interpolation residuals: close to the truth, erring high (the curve's
    // own bend between latency and bandwidth adds to it).
    EXPECT_GT(ratio, 0.9);
    EXPECT_LT(ratio, 1.6);
  }
}

TEST(FitEvidence, InPlaceTimesJoinTheEstimateWhereTheyDiffer) {
  // Smooth out-of-place times; the in-place column noisy or a copy of it.
  auto estimate = [](bool noisyInPlace) {
    Noise noise(8);
    Dataset data;
    for (const char* label : {"default", "tree"}) {
      const std::string algo = std::string(label) == "default" ? "" : "Tree";
      calibration::Run run =
          makeRun(cluster(), configOf(label, algo, ""), kRing, noise, flatNoise(0.0), 0);
      for (Sample& s : run.samples) {
        if (s.inPlace && noisyInPlace) s.timeUs *= noise.factor(0.10);
      }
      data.runs.push_back(run);
    }
    return assessEvidence(summarize(data).shapes[0], FitOptions{});
  };
  auto mean = [](const ShapeEvidence& ev) {
    double sum = 0;
    for (double s : ev.sigma) sum += s;
    return sum / static_cast<double>(ev.sigma.size());
  };
  const ShapeEvidence copied = estimate(false), noisy = estimate(true);
  EXPECT_FALSE(copied.usedInPlace);
  EXPECT_TRUE(noisy.usedInPlace);
  EXPECT_GT(mean(noisy), 5 * mean(copied));
  EXPECT_NE(noisy.summary.find("in-place against out-of-place"), std::string::npos);
}

TEST(FitEvidence, SingleRunsNeverChooseWhatIsSlower) {
  // Heavy noise, single runs: configurations truly 5% slower or 3% faster (inside the bar).
  const Truth slower = [](double s, int n) { return kRing(s, n) * 1.05; };
  int tree = 0;
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    Noise noise(seed);
    Dataset data;
    data.runs.push_back(
        makeRun(cluster(), configOf("default", "", ""), kRing, noise, flatNoise(0.08), 0));
    data.runs.push_back(
        makeRun(cluster(), configOf("slower", "Ring", ""), slower, noise, flatNoise(0.08), 0));
    data.runs.push_back(
        makeRun(cluster(), configOf("almost", "", "LL"), kAlmost, noise, flatNoise(0.08), 0));
    data.runs.push_back(
        makeRun(cluster(), configOf("tree", "Tree", ""), kTreeTruth, noise, flatNoise(0.08), 0));
    const FitResult r = fit(data, FitOptions{});
    for (const Decision& d : r.decisions) {
      if (d.chosen == kDefaultChoice) continue;
      // Only what is truly faster: Tree inside its band, or the 3% (a gain noise inflated).
      EXPECT_NE(d.chosenLabel, "slower") << "seed " << seed << " size " << d.size;
      if (d.chosenLabel == "tree") {
        EXPECT_TRUE(d.size >= 2048 && d.size <= 524288) << "seed " << seed << " size " << d.size;
        ++tree;
      }
    }
  }
  EXPECT_GT(tree, 100 * 9 * 8 / 10);  // and Tree's real band is found (9 sizes per sweep)
}

TEST(FitEvidence, ExpectPointsAreThinnedEvenlyInLogSize) {
  // A sweep four steps per octave from 1K to 1G: 81 sizes, all inside one band.
  Dataset data;
  for (int r = 0; r < 3; ++r) {
    for (const char* label : {"default", "tree"}) {
      calibration::Run run;
      run.source = std::string("fine:") + label;
      run.collective = "allreduce";
      run.nodes = 2;
      run.ranks = 2;
      run.config = configOf(label, std::string(label) == "tree" ? "Tree" : "", "");
      run.repeat = r;
      for (int k = 0; k <= 80; ++k) {
        Sample s;
        s.size = static_cast<uint64_t>(std::llround(1024.0 * std::pow(2.0, k / 4.0)));
        s.timeUs = (std::string(label) == "tree" ? 0.7 : 1.0) * (20 + s.size / 1e4);
        run.samples.push_back(s);
      }
      data.runs.push_back(run);
    }
  }
  const FitResult r = fit(data, FitOptions{});
  ASSERT_EQ(r.rules.size(), 1u);
  const std::vector<tuner::ExpectedTime>& e = r.rules[0].rule.expected;
  ASSERT_EQ(e.size(), kMaxExpectPoints);
  EXPECT_EQ(e.front().bytes, 1024u);
  EXPECT_EQ(e.back().bytes, uint64_t{1} << 30);
  for (size_t i = 1; i < e.size(); ++i) {
    ASSERT_GT(e[i].bytes, e[i - 1].bytes);
    // 20 octaves in 63 steps: each about a third of an octave, never more than two of the
    // sweep's quarter-octave steps.
    const double octaves = std::log2(static_cast<double>(e[i].bytes) / e[i - 1].bytes);
    EXPECT_GE(octaves, 0.24);
    EXPECT_LE(octaves, 0.51);
  }
  // The table still loads: 64 points fit the parser's line.
  const tuner::ParsedTable parsed = tuner::parseTable(tableText(r), "fine.table");
  EXPECT_TRUE(parsed.diagnostics.empty());
  ASSERT_EQ(parsed.table.rules.size(), 1u);
  EXPECT_EQ(parsed.table.rules[0].expected.size(), kMaxExpectPoints);
}

}  // namespace
}  // namespace pilot::calibration
