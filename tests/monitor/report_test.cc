// monitor's outputs with live facts (live.h, as `nccl-pilot hang` fills them): the section in
// the text and the page, and the output without them as it was.
#include "monitor/report.h"

#include <gtest/gtest.h>

namespace pilot::cli::monitor {
namespace {

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' is not in:\n" << text;
}

/// Two ranks of comm 0x1's 1 MiB all-reduces, rank 1 the shorter.
Analysis twoRanks() {
  Summaries s;
  s.files = {"a", "b"};
  for (int rank : {0, 1}) {
    CollectiveRecord r;
    r.file = s.files[rank];
    r.comm = "0x1";
    r.commName = "dp";
    r.rank = rank;
    r.nRanks = 2;
    r.nNodes = 1;
    r.collective = "AllReduce";
    r.messageSize = "1-2MB";
    r.sizeBucketBytes = 1 << 20;
    r.algo = "RING";
    r.proto = "SIMPLE";
    r.decision = "NCCL";
    r.channels = 4;
    r.calls = 10;
    r.timeSumUs = (rank == 1 ? 80.0 : 100.0) * 10;
    r.minUs = r.maxUs = r.p50Us = r.p99Us = rank == 1 ? 80.0 : 100.0;
    r.busGbs = 10;
    r.bins[metrics::timeBin(rank == 1 ? 80'000 : 100'000)] = 10;
    s.collectives.push_back(r);
  }
  return analyze(s, 0.2);
}

/// Three communicators judged: "dp" stalled on rank 3, "<tp>" with a straggler.
Live hungLive() {
  Live l;
  l.stateFilesSeen = l.stateFiles = 4;
  l.comms = 3;
  l.asOf = "2025-12-03 13:53:20 UTC";
  l.hangCommand = "nccl-pilot hang /m";
  l.stalls.push_back({"0xd9", "dp", "4711", 4, "AllReduce #40, 4M bytes", 6.25, "3",
                      "rank 3 never launched AllReduce #40 on comm dp"});
  l.stragglers.push_back({"0x7", "<tp>", "", 2, 3, 4, 0.1234});
  return l;
}

TEST(MonitorReport, WithoutLiveStateTheOutputIsAsBefore) {
  const Analysis a = twoRanks();
  const std::string text = reportText(a, 0.2);
  EXPECT_EQ(reportText(a, 0.2, Live{}), text);
  EXPECT_EQ(text.find("\nlive:"), std::string::npos);
  EXPECT_TRUE(Contains(text, "drift: none below 80%"));
  HtmlOptions o;
  const std::string page = reportHtml(a, o);
  EXPECT_EQ(reportHtml(a, o, Live{}), page);
  EXPECT_EQ(page.find("<h2>live</h2>"), std::string::npos);
  EXPECT_EQ(page.find("stalled now"), std::string::npos);
}

TEST(MonitorReport, TheTextSaysEachStallInOneLineAndEachStraggler) {
  const std::string text = reportText(twoRanks(), 0.2, hungLive());
  EXPECT_TRUE(Contains(text,
                       "\nlive: 4 state file(s), 3 communicator(s) as of 2025-12-03 13:53:20 UTC: "
                       "1 stalled\n"
                       "  STALLED comm 0xd9 \"dp\" (4 ranks, job 4711): AllReduce #40, 4M bytes, "
                       "stalled 6.2 s; suspects 3; why: rank 3 never launched AllReduce #40 on "
                       "comm dp; every rank: nccl-pilot hang /m\n"
                       "  straggler (last export window): comm 0x7 \"<tp>\": rank 2 (the shortest "
                       "in 3 of 4 groups): the others lost 0.123 ms per operation waiting for it\n"
                       "  stragglers: none in the other 2 communicator(s)\n\n"
                       "comm 0x1 \"dp\""));
  EXPECT_TRUE(Contains(text, "drift: none below 80%"));
}

TEST(MonitorReport, ThePageHasTheLiveSectionEscaped) {
  const std::string page = reportHtml(twoRanks(), HtmlOptions{}, hungLive());
  EXPECT_TRUE(Contains(page, "<div><b>1</b>stalled now</div><div><b>1</b>stragglers now</div>"));
  EXPECT_TRUE(Contains(page, "<h2>live</h2>"));
  EXPECT_TRUE(Contains(page,
                       "<p class=\"warn\"><b>STALLED</b> comm 0xd9 &quot;dp&quot; (4 ranks, job "
                       "4711): AllReduce #40, 4M bytes, stalled 6.2 s; suspects 3<br>why: rank 3 "
                       "never launched AllReduce #40 on comm dp<br>every rank: <code>nccl-pilot "
                       "hang /m</code></p>"));
  EXPECT_TRUE(Contains(page,
                       "<tr class=\"warn\"><td>0x7 &quot;&lt;tp&gt;&quot;</td><td>–</td>"
                       "<td class=\"num\">2</td><td class=\"num\">3 / 4</td>"
                       "<td class=\"num\">0.123</td></tr>"));
  EXPECT_EQ(page.find("<tp>"), std::string::npos);
  // Before the communicators' own sections.
  EXPECT_LT(page.find("<h2>live</h2>"), page.find("<h2>comm 0x1"));
}

TEST(MonitorReport, NothingStalledNoStragglerIsOneVerdictLine) {
  Live l;
  l.stateFilesSeen = l.stateFiles = 2;
  l.comms = l.measured = 1;
  l.asOf = "t";
  const std::string text = reportText(twoRanks(), 0.2, l);
  EXPECT_TRUE(Contains(text,
                       "live: 2 state file(s), 1 communicator(s) as of t: nothing stalled\n"
                       "  stragglers: none in the last export windows\n"));
  EXPECT_EQ(text.find("STALLED"), std::string::npos);
  EXPECT_TRUE(Contains(reportHtml(twoRanks(), HtmlOptions{}, l),
                       "<p class=\"verdict\">stragglers: none in the last export windows</p>"));
  // Before any export window closed, no straggler was looked for: not "none".
  l.measured = 0;
  EXPECT_TRUE(Contains(reportText(twoRanks(), 0.2, l),
                       "  stragglers: not measured yet (no export window has closed"));
}

TEST(MonitorReport, UnusableStateFilesAreOneLine) {
  Live l;
  l.stateFilesSeen = 3;
  const std::string text = reportText(twoRanks(), 0.2, l);
  EXPECT_TRUE(
      Contains(text, "\nlive: none of the 3 state file(s) could be used (notes above)\n\n"));
  EXPECT_EQ(text.find("stragglers"), std::string::npos);
}

TEST(MonitorReport, LiveStateWithoutSummariesHasNoDriftLine) {
  const std::string text = reportText(Analysis{}, 0.2, hungLive());
  EXPECT_TRUE(Contains(text, "STALLED comm 0xd9"));
  EXPECT_EQ(text.find("drift"), std::string::npos);
}

}  // namespace
}  // namespace pilot::cli::monitor
