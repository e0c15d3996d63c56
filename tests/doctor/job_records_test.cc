// `doctor --job`'s reader on what a metrics directory holds after a job: per-node subfolders,
// the same record in the .provenance.json and the summary, one line per copy of the library,
// and files that are truncated, not JSON, foreign, of the wrong types, of a newer format or too
// large: one note each naming the file, and every other record kept.
#include "job_support.h"

namespace pilot::doctor {
namespace {

using testing::rankRecord;

class JobRecords_ : public testing::JobDirTest {
 protected:
  /// The one note naming `file`; fails unless there is exactly one.
  std::string noteOf(const JobRecords& r, const std::string& file) {
    std::vector<std::string> found;
    for (const std::string& n : r.notes) {
      if (n.rfind(dir_ + "/" + file, 0) == 0) found.push_back(n);
    }
    EXPECT_EQ(found.size(), 1u) << file << ": " << ::testing::PrintToString(r.notes);
    return found.empty() ? "" : found[0];
  }
};

TEST_F(JobRecords_, BadFilesAreOneNoteEachAndTheRestIsKept) {
  const std::string good = provenance::renderRecordJson(rankRecord("n", 1, "0"));
  testing::writeRecord(dir_ + "/node-a", rankRecord("n", 1, "0"));
  testing::writeRecord(dir_ + "/node-b/deeper", rankRecord("n", 2, "1"));
  testing::writeText(dir_ + "/nccl_pilot_cut_3.provenance.json", good.substr(0, 100));
  testing::writeText(dir_ + "/nccl_pilot_garbage_4.provenance.json", "hello, world\n");
  testing::writeText(dir_ + "/nccl_pilot_foreign_5.provenance.json",
                     R"({"kind":"process","node":"x","pid":5})"
                     "\n");
  std::string wrong = good;
  wrong.replace(wrong.find("\"pid\":1"), 7, "\"pid\":\"1\"");
  testing::writeText(dir_ + "/nccl_pilot_wrong_6.provenance.json", wrong + "\n");
  std::string nested = provenance::renderRecordJson(rankRecord("n", 7, "2"));
  nested.replace(nested.find("\"version\":\"2.28.9\""), 18, "\"version\":2.28");
  testing::writeText(dir_ + "/nccl_pilot_nested_7.provenance.json", nested + "\n");
  std::string future = provenance::renderRecordJson(rankRecord("n", 8, "3"));
  future.replace(future.find("\"format\":1"), 10, "\"format\":2,\"gpus\":[1,2]");
  future.replace(future.find("\"table\":\"\""), 10, "\"table\":{\"new\":1}");
  testing::writeText(dir_ + "/nccl_pilot_future_8.provenance.json", future + "\n");
  testing::writeText(dir_ + "/nccl_pilot_other_9.jsonl", "{\"a\": 1}\n{\"kind\":\"provenance\"}\n");
  testing::writeText(dir_ + "/nccl_pilot_empty_10.provenance.json", "");
  testing::writeText(dir_ + "/unrelated.json", "not ours, not read");

  const JobRecords r = readJobRecords({dir_});
  EXPECT_EQ(r.filesRead, 10u);
  ASSERT_EQ(r.processes.size(), 3u) << ::testing::PrintToString(r.notes);
  EXPECT_EQ(r.processes[0].record.pid, 1);
  EXPECT_EQ(r.processes[1].record.pid, 2);
  EXPECT_EQ(r.processes[2].record.pid, 8);
  EXPECT_EQ(r.processes[2].format, 2);
  EXPECT_EQ(r.processes[2].record.table, "");  // another type in a newer format: left empty
  EXPECT_EQ(r.processes[2].record.nccl.version, "2.28.9");
  EXPECT_EQ(r.notes.size(), 8u) << ::testing::PrintToString(r.notes);
  EXPECT_EQ(noteOf(r, "nccl_pilot_cut_3.provenance.json"),
            dir_ +
                "/nccl_pilot_cut_3.provenance.json:1: cut short at byte 100 (truncated or "
                "half-written)");
  EXPECT_EQ(noteOf(r, "nccl_pilot_garbage_4.provenance.json"),
            dir_ + "/nccl_pilot_garbage_4.provenance.json:1: not JSON (at byte 1)");
  EXPECT_EQ(noteOf(r, "nccl_pilot_foreign_5.provenance.json"),
            dir_ +
                "/nccl_pilot_foreign_5.provenance.json:1: kind \"process\", not a provenance "
                "record");
  EXPECT_EQ(noteOf(r, "nccl_pilot_wrong_6.provenance.json"),
            dir_ + "/nccl_pilot_wrong_6.provenance.json:1: \"pid\" is not an integer");
  EXPECT_EQ(noteOf(r, "nccl_pilot_nested_7.provenance.json"),
            dir_ + "/nccl_pilot_nested_7.provenance.json:1: \"nccl.version\" is not a string");
  EXPECT_EQ(noteOf(r, "nccl_pilot_future_8.provenance.json"),
            dir_ +
                "/nccl_pilot_future_8.provenance.json: format 2, newer than this reader's 1: "
                "the fields it knows are read");
  EXPECT_EQ(noteOf(r, "nccl_pilot_other_9.jsonl"),
            dir_ +
                "/nccl_pilot_other_9.jsonl:1: not an nccl-pilot summary (its first line has "
                "no \"kind\")");
  EXPECT_EQ(noteOf(r, "nccl_pilot_empty_10.provenance.json"),
            dir_ + "/nccl_pilot_empty_10.provenance.json: empty");
}

TEST_F(JobRecords_, TheSameRecordInTheFileAndTheSummaryIsOneProcess) {
  provenance::ProcessRecord older = rankRecord("n", 1, "0");
  older.plugins = {{"net", 10, "/opt/a.so"}};
  provenance::ProcessRecord newer = older;
  newer.writtenMs += 5;
  newer.plugins = {{"tuner", 5, "/opt/b.so"}};  // another copy of the library, its own plugin
  newer.nccl.version = "2.28.9-newer";
  testing::writeText(
      dir_ + "/nccl_pilot_n_1.provenance.json",
      provenance::renderRecordJson(older) + "\n" + provenance::renderRecordJson(newer) + "\n");
  testing::writeSummary(dir_, older, {"{\"kind\":\"collective\",\"comm\":\"0x1\"}"});
  const JobRecords r = readJobRecords({dir_});
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_TRUE(r.notes.empty()) << ::testing::PrintToString(r.notes);
  const provenance::ProcessRecord& kept = r.processes[0].record;
  EXPECT_EQ(kept.nccl.version, "2.28.9-newer");
  ASSERT_EQ(kept.plugins.size(), 2u);
  EXPECT_EQ(kept.plugins[0].kind, "tuner");
  EXPECT_EQ(kept.plugins[1].kind, "net");
  EXPECT_EQ(r.processes[0].file, dir_ + "/nccl_pilot_n_1.provenance.json:2");
}

TEST_F(JobRecords_, SummariesGiveCommunicatorMembershipAndBadLinesANote) {
  const provenance::ProcessRecord a = rankRecord("n", 1, ""), b = rankRecord("n", 2, "");
  testing::writeSummary(dir_, a, {testing::commLine("0xc", a, 0, 2)});
  testing::writeSummary(dir_, b,
                        {testing::commLine("0xc", b, 1, 2), testing::commLine("0xd", b, 3, 2),
                         "{\"kind\":\"communicator\",\"comm\":"});
  const JobRecords r = readJobRecords({dir_});
  ASSERT_EQ(r.comms.size(), 1u);
  ASSERT_EQ(r.comms.at("0xc").size(), 2u);
  EXPECT_EQ(r.comms.at("0xc")[1].rank, 1);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], dir_ +
                            "/nccl_pilot_n_2.jsonl:4: rank 3 of a communicator of 2 (and 1 "
                            "more in this file)");
}

TEST_F(JobRecords_, SizesAreBounded) {
  std::string big = provenance::renderRecordJson(rankRecord("n", 1, "0"));
  big.insert(big.find("\"table\":\"\"") + 9, std::string(kJobMaxTextBytes + 10, 't'));
  testing::writeText(dir_ + "/nccl_pilot_long_1.provenance.json", big + "\n");
  testing::writeText(dir_ + "/nccl_pilot_huge_2.provenance.json",
                     std::string(kJobMaxRecordFileBytes + 1, ' '));
  testing::writeText(dir_ + "/nccl_pilot_line_3.jsonl",
                     "{\"kind\":\"process\"}\n{\"kind\":\"provenance\",\"x\":\"" +
                         std::string(kJobMaxLineBytes, 'x') + "\"}\n");
  provenance::ProcessRecord many = rankRecord("n", 4, "1");
  for (int i = 0; i < 300; ++i) testing::set(&many, "NCCL_X" + std::to_string(i), "1");
  testing::writeRecord(dir_, many);
  const JobRecords r = readJobRecords({dir_});
  ASSERT_EQ(r.processes.size(), 2u) << ::testing::PrintToString(r.notes);
  EXPECT_EQ(r.processes[0].record.table.size(), kJobMaxTextBytes);
  EXPECT_EQ(r.processes[1].record.settings.size(), provenance::kMaxSettings);
  EXPECT_EQ(r.processes[1].record.settingsDropped, 300 - provenance::kMaxSettings);
  ASSERT_EQ(r.notes.size(), 2u) << ::testing::PrintToString(r.notes);
  EXPECT_EQ(r.notes[0], dir_ +
                            "/nccl_pilot_huge_2.provenance.json: larger than 4 MiB: not a "
                            "record of ours");
  EXPECT_EQ(r.notes[1], dir_ + "/nccl_pilot_line_3.jsonl:2: a line longer than 1 MiB");
}

TEST_F(JobRecords_, AMissingInputIsANote) {
  const JobRecords r = readJobRecords({dir_ + "/nope"});
  EXPECT_TRUE(r.processes.empty());
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], dir_ + "/nope: no such file or directory");
}

}  // namespace
}  // namespace pilot::doctor
