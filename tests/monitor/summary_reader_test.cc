// readSummaries on hand-written lines: a number a field cannot hold makes its line a note naming
// file and line (UBSan found the conversion under tests/fuzz/metrics_summary_fuzz), the rest
// is read.
#include "monitor/summary_reader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace pilot::cli::monitor {
namespace {

TEST(MonitorSummaryReader, NumbersPastAFieldsRangeAreNotesNotValues) {
  const std::string file = ::testing::TempDir() + "/nccl_pilot_huge.jsonl";
  std::ofstream(file) << R"({"kind":"communicator","comm":"0x1","rank":1,"nranks":2,"seen":5}
{"kind":"collective","comm":"0x1","rank":1e300,"nranks":2,"calls":3}
{"kind":"collective","comm":"0x1","rank":1,"nranks":2,"calls":3,"bins":[[1e300,3]]}
{"kind":"collective","comm":"0x1","rank":1,"nranks":2,"calls":-1e300}
{"kind":"collective","comm":"0x1","rank":1,"nranks":2,"calls":3,"bins":[[2,3]]}
)";
  Expected<Summaries> s = readSummaries({file});
  std::remove(file.c_str());
  ASSERT_TRUE(s.ok()) << s.error();
  ASSERT_EQ(s->comms.size(), 1u);
  ASSERT_EQ(s->collectives.size(), 1u);
  EXPECT_EQ(s->collectives[0].calls, 3u);
  EXPECT_EQ(s->collectives[0].bins[2], 3u);
  ASSERT_EQ(s->notes.size(), 3u);
  for (int line = 2; line <= 4; ++line) {
    EXPECT_NE(s->notes[line - 2].find(file + ":" + std::to_string(line) + ": not a summary line"),
              std::string::npos)
        << s->notes[line - 2];
  }
  EXPECT_NE(s->notes[0].find("(rank is out of range)"), std::string::npos) << s->notes[0];
}

}  // namespace
}  // namespace pilot::cli::monitor
