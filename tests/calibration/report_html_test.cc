// nccl-pilot report: one self-contained page (nothing fetched, nothing run), the fit's or a
// given table's choices, and a text summary.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "fit_test_support.h"
#include "pilot/calibration/report.h"
#include "pilot/tuner/table.h"

namespace pilot::calibration {
namespace {

using test::alphaBeta;
using test::configOf;
using test::flatNoise;
using test::makeRun;
using test::Noise;
using test::SweepSpec;

FitResult sampleFit(const std::string& oddLabel = "tree_ll") {
  SweepSpec spec;
  Noise noise(21);
  Dataset data;
  const auto def = test::switching(alphaBeta(10, 5), alphaBeta(30, 20), 1 << 20);
  for (int r = 0; r < 3; ++r) {
    data.runs.push_back(makeRun(spec, configOf("default", "", ""), def, noise, flatNoise(0.01), r));
    data.runs.push_back(makeRun(spec, configOf("simple", "", "Simple"), alphaBeta(30, 20), noise,
                                flatNoise(0.01), r));
  }
  data.runs.push_back(
      makeRun(spec, configOf(oddLabel, "Tree", "LL"), alphaBeta(6, 5), noise, flatNoise(0.01), 0));
  calibration::Run failed = data.runs[0];
  failed.failed = true;
  failed.problems = {"launch failed"};
  data.runs.push_back(failed);
  return fit(data, FitOptions{});
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ReportHtml, SelfContainedPageWithChartsAndBands) {
  const FitResult fit = sampleFit();
  ASSERT_EQ(fit.rules.size(), 2u);
  ReportOptions options;
  options.inputs = {"sweep.txt"};
  options.date = "2026-11-29 16:00 UTC";
  const std::string html = reportHtml(fit, fitChoices(fit), options);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg"), 3u);  // time, bus bandwidth, speedup
  // Nothing to fetch or run: the only URL is the SVG namespace name.
  EXPECT_EQ(count(html, "<script"), 0u);
  EXPECT_EQ(count(html, "<link"), 0u);
  EXPECT_EQ(count(html, "src="), 0u);
  EXPECT_EQ(count(html, "http"), count(html, "http://www.w3.org/2000/svg"));
  for (const char* label : {"default", "simple", "tree_ll"}) {
    EXPECT_NE(html.find(label), std::string::npos) << label;
  }
  EXPECT_NE(html.find("Size bands"), std::string::npos);
  EXPECT_NE(html.find("Excluded runs (1)"), std::string::npos);
  EXPECT_NE(html.find("launch failed"), std::string::npos);
  EXPECT_NE(html.find("2 bands override NCCL"), std::string::npos);
  EXPECT_EQ(html.substr(html.size() - 15), "</body></html>\n");
}

TEST(ReportHtml, LabelsAreEscaped) {
  const FitResult fit = sampleFit("<b>x&y</b>");
  const std::string html = reportHtml(fit, fitChoices(fit), ReportOptions{});
  EXPECT_EQ(html.find("<b>x&y</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;x&amp;y&lt;/b&gt;"), std::string::npos);
}

TEST(ReportHtml, AGivenTableIsShownAsTheTunerWouldApplyIt) {
  const FitResult fit = sampleFit();
  // The fitted table read back gives the fitted choices.
  const tuner::ParsedTable same = tuner::parseTable(tableText(fit), "fitted.table");
  const ReportChoices back = tableChoices(fit, same.table, "fitted.table");
  ASSERT_EQ(back.decisions.size(), fit.decisions.size());
  for (size_t i = 0; i < fit.decisions.size(); ++i) {
    EXPECT_EQ(back.decisions[i].chosenLabel, fit.decisions[i].chosenLabel) << fit.decisions[i].size;
  }
  EXPECT_TRUE(back.notes.empty());

  // A hand-written table: the first match wins; a choice nobody measured is said so.
  const tuner::ParsedTable hand = tuner::parseTable(
      "allreduce size=..1K nodes=1 proto=simple\n"
      "allreduce size=..64K algo=nvls\n"
      "allgather size=0.. algo=ring\n",
      "hand.table");
  ASSERT_TRUE(hand.diagnostics.empty());
  const ReportChoices mine = tableChoices(fit, hand.table, "hand.table");
  for (const Decision& d : mine.decisions) {
    if (d.size <= 1024) {
      EXPECT_EQ(d.chosenLabel, "simple");
    } else if (d.size <= 65536) {
      EXPECT_LE(d.chosen, kUnmeasuredRule);
      EXPECT_NE(d.chosenLabel.find("not measured"), std::string::npos);
    } else {
      EXPECT_EQ(d.chosenLabel, "default");
    }
  }
  ASSERT_EQ(mine.notes.size(), 1u);
  EXPECT_NE(mine.notes[0].find("line 2"), std::string::npos);
  const std::string html = reportHtml(fit, mine, ReportOptions{});
  EXPECT_NE(html.find("hand.table"), std::string::npos);
  EXPECT_NE(reportText(fit, mine).find("simple"), std::string::npos);
}

TEST(ReportHtml, TextSummaryNamesBandsAndExclusions) {
  const FitResult fit = sampleFit();
  const std::string text = reportText(fit, fitChoices(fit));
  EXPECT_NE(text.find("allreduce nodes=1 ranks=4: default x3 simple x3 tree_ll x1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tree_ll"), std::string::npos);
  EXPECT_NE(text.find("NCCL default"), std::string::npos);
  EXPECT_NE(text.find("1 run(s) excluded"), std::string::npos);
}

TEST(ReportHtml, NoGnuplotMeansNoFilesAndNoError) {
  const FitResult fit = sampleFit();
  const char* old = getenv("PATH");
  const std::string saved = old ? old : "";
  setenv("PATH", "/nonexistent-dir-for-this-test", 1);
  const GnuplotOutput g = plotWithGnuplot(fit, fitChoices(fit), "/nonexistent/report");
  setenv("PATH", saved.c_str(), 1);
  EXPECT_FALSE(g.found);
  EXPECT_TRUE(g.files.empty());
  EXPECT_TRUE(g.error.empty());
}

}  // namespace
}  // namespace pilot::calibration
