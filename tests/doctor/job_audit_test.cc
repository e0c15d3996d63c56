// `doctor --job`'s checks on jobs written here: the issue's 4-rank job (FAILs naming ranks 1
// and 3, WARNs naming 2 and 3, rank 0 never named as odd), a healthy job (PASS only), the
// groups taken from the summaries' communicators, ties, duplicate and missing ranks, and a job
// of 1000 ranks whose lines stay short.
#include <memory>
#include <regex>

#include "job_support.h"

namespace pilot::doctor {
namespace {

using testing::issueJob;
using testing::rankRecord;

struct Audited {
  JobRecords records;
  JobAudit audit;
};

std::unique_ptr<Audited> auditDir(const std::string& dir) {
  auto out = std::make_unique<Audited>();
  out->records = readJobRecords({dir});
  out->audit = auditJob(out->records, dir);
  return out;
}

std::string line(const Finding& f) {
  return std::string(verdictName(f.verdict)) + " " + f.check + " " + f.subject + " | " +
         f.evidence + (f.fix.empty() ? "" : " | fix: " + f.fix);
}

std::string dump(const JobAudit& a) {
  std::string out = a.scope + "\n";
  for (const Finding& f : a.findings) out += line(f) + "\n";
  for (const std::string& n : a.notes) out += "note: " + n + "\n";
  return out;
}

std::vector<Finding> having(const JobAudit& a, const std::string& check, Verdict v,
                            const std::string& subject = "") {
  std::vector<Finding> out;
  for (const Finding& f : a.findings) {
    if (f.check == check && f.verdict == v && f.subject.find(subject) != std::string::npos)
      out.push_back(f);
  }
  return out;
}

/// Whether the text names rank N ("rank 0 (", "ranks 0-2", "ranks 0 (", ", 0 (").
bool namesRank(const std::string& text, int rank) {
  const std::string n = std::to_string(rank);
  return std::regex_search(text, std::regex("ranks? ([0-9]+-)?" + n + "[ ,(-]|, " + n + "[ (-]"));
}

class JobAudit_ : public testing::JobDirTest {};

TEST_F(JobAudit_, IssueJobFailsOnRanks1And3WarnsOn2And3AndNeverNamesRank0) {
  writeAll(issueJob());
  const auto a = auditDir(dir_);
  const JobAudit& audit = a->audit;
  ASSERT_EQ(audit.ranks.size(), 4u);
  EXPECT_EQ(audit.scope, "4 ranks on 2 nodes, compared across the job");

  const auto version = having(audit, "job-nccl", Verdict::Fail, "NCCL 2.28.3 on rank 3 (node-b)");
  ASSERT_EQ(version.size(), 1u) << dump(audit);
  EXPECT_EQ(version[0].evidence.rfind("the other 3 ranks run 2.28.9 (majority)", 0), 0u)
      << version[0].evidence;
  EXPECT_NE(version[0].evidence.find("/opt/nccl-2.28.3/lib/libnccl.so.2"), std::string::npos);
  EXPECT_EQ(having(audit, "job-nccl", Verdict::Fail, "NCCL from /opt/nccl-2.28.3").size(), 1u);

  const auto copies = having(audit, "job-libnccl", Verdict::Fail);
  ASSERT_EQ(copies.size(), 1u) << dump(audit);
  EXPECT_EQ(copies[0].subject, "2 libnccl mapped in rank 1 (node-a)");
  EXPECT_NE(copies[0].evidence.find("cupy/libnccl.so.2 (2.27.5)"), std::string::npos);
  EXPECT_NE(copies[0].evidence.find(testing::kSystemNccl + " (2.28.9)"), std::string::npos);

  const auto proto =
      having(audit, "job-settings", Verdict::Warn, "NCCL_PROTO=LL128 (dangerous) on rank 2");
  ASSERT_EQ(proto.size(), 1u) << dump(audit);
  EXPECT_NE(proto[0].subject.find("(node-b)"), std::string::npos);
  const auto ifname = having(audit, "job-settings", Verdict::Warn, "NCCL_SOCKET_IFNAME=eth1");
  ASSERT_EQ(ifname.size(), 1u) << dump(audit);
  EXPECT_EQ(ifname[0].subject, "NCCL_SOCKET_IFNAME=eth1 on rank 3 (node-b)");
  EXPECT_EQ(ifname[0].evidence, "the other 3 ranks have eth0 (majority)");

  for (const Finding& f : audit.findings) {
    if (f.verdict == Verdict::Pass) continue;
    EXPECT_FALSE(namesRank(f.subject + " | " + f.evidence, 0)) << line(f);
  }
  EXPECT_FALSE(having(audit, "job-table", Verdict::Pass).empty()) << dump(audit);
  EXPECT_EQ(exitStatus(summarize(audit.findings)), 1);
  const std::string headline = jobAuditHeadline(audit);
  EXPECT_EQ(headline.rfind("doctor --job: FAIL NCCL 2.28.3 on rank 3 (node-b), majority 2.28.9 "
                           "(and 2 more FAIL; nccl-pilot doctor --job " +
                               dir_ + ")",
                           0),
            0u)
      << headline;
  EXPECT_EQ(headline.find('\n'), std::string::npos);
}

TEST_F(JobAudit_, RankNamingHelperSeesRanges) {
  // The check above is only as good as namesRank: it must see rank 0 where it is.
  EXPECT_TRUE(namesRank("NCCL 2.28.3 on rank 0 (node-a)", 0));
  EXPECT_TRUE(namesRank("on ranks 0-2 (node-a)", 0));
  EXPECT_TRUE(namesRank("on ranks 3 (node-b), 0 (node-a)", 0));
  EXPECT_FALSE(namesRank("on rank 10 (node-a); ranks 1-3 (node-b)", 0));
}

TEST_F(JobAudit_, HealthyJobPassesEveryCheck) {
  for (int rank = 0; rank < 4; ++rank) {
    provenance::ProcessRecord r =
        rankRecord(rank < 2 ? "node-a" : "node-b", 100 + rank, std::to_string(rank));
    testing::set(&r, "NCCL_SOCKET_IFNAME", "eth0");
    testing::set(&r, "NCCL_TOPO_FILE", "/proc/self/fd/" + std::to_string(7 + rank));
    // Copies of the library list their plugins in the order NCCL loaded them: no difference.
    if (rank == 2) std::swap(r.plugins[0], r.plugins[1]);
    testing::writeRecord(dir_, r);
  }
  const auto a = auditDir(dir_);
  for (const Finding& f : a->audit.findings) EXPECT_EQ(f.verdict, Verdict::Pass) << line(f);
  for (const char* id :
       {"job-records", "job-nccl", "job-libnccl", "job-table", "job-plugins", "job-settings"}) {
    EXPECT_EQ(having(a->audit, id, Verdict::Pass).size(), 1u) << id << "\n" << dump(a->audit);
  }
  const auto nccl = having(a->audit, "job-nccl", Verdict::Pass);
  ASSERT_EQ(nccl.size(), 1u);
  EXPECT_EQ(nccl[0].subject, "4 ranks on 2 nodes");
  EXPECT_EQ(nccl[0].evidence, "NCCL 2.28.9 from " + testing::kSystemNccl + " everywhere");
  EXPECT_EQ(having(a->audit, "job-plugins", Verdict::Pass)[0].evidence,
            "net v10, tuner v5 of nccl-pilot 0.1.0 everywhere");
  EXPECT_TRUE(a->audit.notes.empty()) << dump(a->audit);
  EXPECT_EQ(jobAuditHeadline(a->audit), "");
}

TEST_F(JobAudit_, CommunicatorsFromTheSummariesAreTheGroups) {
  // Two communicators of two processes each, no launcher rank: versions differ only across.
  std::vector<provenance::ProcessRecord> job;
  for (int i = 0; i < 4; ++i) job.push_back(rankRecord(i < 2 ? "node-a" : "node-b", 10 + i, ""));
  job[2].nccl.version = job[3].nccl.version = "2.27.5";
  job[2].libraries[0].version = job[3].libraries[0].version = "2.27.5";
  for (int i = 0; i < 4; ++i) {
    testing::writeSummary(dir_, job[i],
                          {testing::commLine(i < 2 ? "0xaa" : "0xbb", job[i], i % 2, 2)});
  }
  auto a = auditDir(dir_);
  EXPECT_TRUE(having(a->audit, "job-nccl", Verdict::Fail).empty()) << dump(a->audit);
  EXPECT_EQ(a->audit.scope, "4 ranks on 2 nodes, compared within 2 communicators");
  // Ranks of two communicators: each named with its pid, and no duplicate rank to warn of.
  EXPECT_EQ(a->audit.ranks[0].label, "rank 0 (node-a, pid 10)");
  EXPECT_EQ(a->audit.ranks[0].rankFrom, "comm 0xaa");
  EXPECT_TRUE(having(a->audit, "job-records", Verdict::Warn).empty()) << dump(a->audit);
  // The same job with one process of 0xaa on 2.27.5 too: a tie inside 0xaa.
  job[1].nccl.version = "2.27.5";
  testing::writeSummary(dir_, job[1], {testing::commLine("0xaa", job[1], 1, 2)});
  a = auditDir(dir_);
  const auto split =
      having(a->audit, "job-nccl", Verdict::Fail, "NCCL versions differ in comm 0xaa");
  ASSERT_EQ(split.size(), 1u) << dump(a->audit);
  EXPECT_EQ(split[0].evidence.find("majority"), std::string::npos) << split[0].evidence;
  EXPECT_EQ(having(a->audit, "job-nccl", Verdict::Fail).size(), 1u) << dump(a->audit);
}

TEST_F(JobAudit_, WithoutCommunicatorsTheJobIsOneGroupAndATieNamesBothSides) {
  std::vector<provenance::ProcessRecord> job;
  for (int i = 0; i < 4; ++i) {
    job.push_back(rankRecord(i < 2 ? "node-a" : "node-b", 10 + i, std::to_string(i)));
  }
  job[2].nccl.version = job[3].nccl.version = "2.27.5";
  writeAll(job);
  const auto a = auditDir(dir_);
  const auto split = having(a->audit, "job-nccl", Verdict::Fail);
  ASSERT_EQ(split.size(), 1u) << dump(a->audit);
  EXPECT_EQ(split[0].subject, "NCCL versions differ");
  EXPECT_EQ(split[0].evidence,
            "NCCL 2.27.5 on ranks 2-3 (node-b); NCCL 2.28.9 on ranks 0-1 (node-a); no value is "
            "held by more than half of the 4 ranks");
  EXPECT_EQ(jobAuditHeadline(a->audit).find("majority"), std::string::npos);
}

TEST_F(JobAudit_, SettingsSetOnSomeRanksOnlyAndClassesAreNamedOnce) {
  std::vector<provenance::ProcessRecord> job;
  for (int i = 0; i < 5; ++i)
    job.push_back(rankRecord("n" + std::to_string(i / 2), 10 + i, std::to_string(i)));
  testing::set(&job[4], "NCCL_BUFFSIZE", "8388608", "/etc/nccl.conf");
  for (auto& r : job) testing::set(&r, "NCCL_SOCKT_IFNAME", "eth0");  // a typo on every rank
  testing::set(&job[1], "NCCL_ENV_PLUGIN", "/opt/env.so");
  job[1].envPlugin = "/opt/env.so";
  writeAll(job);
  const auto a = auditDir(dir_);
  const auto buff = having(a->audit, "job-settings", Verdict::Warn, "NCCL_BUFFSIZE=8388608");
  ASSERT_EQ(buff.size(), 1u) << dump(a->audit);
  EXPECT_EQ(buff[0].subject, "NCCL_BUFFSIZE=8388608 on rank 4 (n2)");
  EXPECT_EQ(buff[0].evidence, "the other 4 ranks do not set it (majority); set in /etc/nccl.conf");
  const auto typo = having(a->audit, "job-settings", Verdict::Warn, "NCCL_SOCKT_IFNAME (unknown)");
  ASSERT_EQ(typo.size(), 1u) << dump(a->audit);
  EXPECT_EQ(typo[0].subject, "NCCL_SOCKT_IFNAME (unknown) on ranks 0-1 (n0), 2-3 (n1), 4 (n2)");
  EXPECT_NE(typo[0].evidence.find("NCCL_SOCKET_IFNAME"), std::string::npos) << typo[0].evidence;
  EXPECT_EQ(having(a->audit, "job-settings", Verdict::Warn, "(env plugin) on rank 1 (n0)").size(),
            1u)
      << dump(a->audit);
  EXPECT_EQ(exitStatus(summarize(a->audit.findings)), 0);
}

TEST_F(JobAudit_, TablesPluginsAndPilotVersionsAreCompared) {
  std::vector<provenance::ProcessRecord> job;
  for (int i = 0; i < 3; ++i) {
    job.push_back(rankRecord("n", 10 + i, std::to_string(i)));
    job.back().table = "/shared/h100.table";
    job.back().tableSha256 = std::string(64, 'a');
  }
  job[2].tableSha256.clear();  // a rank without the table counts as differing
  job[2].table.clear();
  job[1].plugins[0].abi = 9;
  job[1].pilotVersion = "0.0.9";
  writeAll(job);
  const auto a = auditDir(dir_);
  const auto table = having(a->audit, "job-table", Verdict::Fail);
  ASSERT_EQ(table.size(), 1u) << dump(a->audit);
  EXPECT_EQ(table[0].subject, "no tuning table on rank 2 (n)");
  EXPECT_EQ(table[0].evidence, "the other 2 ranks use sha256 aaaaaaaaaaaa (majority)");
  EXPECT_EQ(
      having(a->audit, "job-plugins", Verdict::Warn, "net plugin at ABI v9 on rank 1 (n)").size(),
      1u)
      << dump(a->audit);
  EXPECT_EQ(having(a->audit, "job-plugins", Verdict::Warn, "nccl-pilot 0.0.9 on rank 1 (n)").size(),
            1u)
      << dump(a->audit);
}

TEST_F(JobAudit_, DuplicateAndMissingRanksAreWarnings) {
  std::vector<provenance::ProcessRecord> job = {rankRecord("a", 1, "0"), rankRecord("a", 2, "1"),
                                                rankRecord("b", 3, "1"), rankRecord("b", 4, "5")};
  writeAll(job);
  const auto a = auditDir(dir_);
  const auto dup =
      having(a->audit, "job-records", Verdict::Warn, "rank 1 on more than one process");
  ASSERT_EQ(dup.size(), 1u) << dump(a->audit);
  EXPECT_EQ(dup[0].subject, "rank 1 on more than one process: ranks 1 (a, pid 2), 1 (b, pid 3)");
  EXPECT_NE(dup[0].evidence.find("two jobs' files in one directory"), std::string::npos);
  const auto missing = having(a->audit, "job-records", Verdict::Warn, "no record from");
  ASSERT_EQ(missing.size(), 1u) << dump(a->audit);
  EXPECT_EQ(missing[0].subject, "no record from ranks 2-4");
}

TEST_F(JobAudit_, ARestartIntoTheSameDirectoryIsOneFinding) {
  // torchrun restarted all 8 ranks of two nodes: each rank again on its node with a new pid.
  for (int rank = 0; rank < 8; ++rank) {
    const std::string node = "n" + std::to_string(rank / 4);
    writeAll({rankRecord(node, 100 + rank, std::to_string(rank)),
              rankRecord(node, 200 + rank, std::to_string(rank))});
  }
  const auto a = auditDir(dir_);
  const auto dup = having(a->audit, "job-records", Verdict::Warn, "on more than one process");
  ASSERT_EQ(dup.size(), 1u) << dump(a->audit);
  EXPECT_EQ(dup[0].subject.rfind("ranks 0-7 on more than one process each: ", 0), 0u)
      << dup[0].subject;
  EXPECT_NE(dup[0].evidence.find("a restart into the same directory"), std::string::npos);
}

TEST_F(JobAudit_, ANodeWhoseEveryRankDiffersIsNamedAsTheNode) {
  // 32 ranks round-robin over 4 nodes (rank r on node r % 4): node n2's 8 ranks run 2.28.3.
  for (int rank = 0; rank < 32; ++rank) {
    provenance::ProcessRecord r =
        rankRecord("n" + std::to_string(rank % 4), 1000 + rank, std::to_string(rank));
    if (rank % 4 == 2) r.nccl.version = "2.28.3";
    testing::writeRecord(dir_, r);
  }
  const auto a = auditDir(dir_);
  const auto odd =
      having(a->audit, "job-nccl", Verdict::Fail, "NCCL 2.28.3 on every rank of node n2 (8)");
  ASSERT_EQ(odd.size(), 1u) << dump(a->audit);
  EXPECT_EQ(odd[0].subject.find("rank 6"), std::string::npos) << odd[0].subject;
}

TEST_F(JobAudit_, AThousandRanksGiveShortLines) {
  // Every 7th rank on another NCCL, every rank its own NCCL_IB_HCA, every 3rd a debug switch.
  for (int rank = 0; rank < 1000; ++rank) {
    provenance::ProcessRecord r =
        rankRecord("gpu-node-" + std::to_string(rank / 8), 1000 + rank, std::to_string(rank));
    if (rank % 7 == 3) r.nccl.version = "2.28.3";
    testing::set(&r, "NCCL_IB_HCA", "mlx5_" + std::to_string(rank));
    if (rank % 3 == 0) testing::set(&r, "NCCL_ALGO", "Ring");
    if (rank % 11 == 0) testing::set(&r, "NCCL_TYPO_" + std::to_string(rank), "1");
    testing::writeRecord(dir_, r);
  }
  const auto a = auditDir(dir_);
  ASSERT_EQ(a->audit.ranks.size(), 1000u);
  EXPECT_LE(a->audit.findings.size(), 60u) << dump(a->audit);
  for (const Finding& f : a->audit.findings) EXPECT_LE(line(f).size(), 1500u) << line(f);
  const auto odd =
      having(a->audit, "job-nccl", Verdict::Fail, "NCCL 2.28.3 on ranks 3 (gpu-node-0)");
  ASSERT_EQ(odd.size(), 1u) << dump(a->audit);
  EXPECT_NE(odd[0].subject.find(" and 135 more"), std::string::npos) << odd[0].subject;
  EXPECT_NE(dump(a->audit).find("more WARN findings of job-settings"), std::string::npos);
  EXPECT_LE(jobAuditHeadline(a->audit).size(), 400u);
}

}  // namespace
}  // namespace pilot::doctor
