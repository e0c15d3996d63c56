// `nccl-pilot doctor --job DIR` as a user runs it on jobs written here: exit 1 on the issue's
// job with its lines in doctor's format, 0 on a healthy one, 2 on usage errors and on a
// directory without records; --json that parses; and the one line `monitor` and `hang` add
// when the same directory holds a FAIL, with their exit statuses unchanged.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "job_support.h"
#include "text_file.h"

namespace pilot::doctor {
namespace {

struct Ran {
  int status = -1;
  std::string out, err;
};

using testsupport::slurp;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class JobCli : public testing::JobDirTest {
 protected:
  Ran run(std::vector<std::string> args) {
    args.insert(args.begin(), PILOT_NCCL_PILOT_BIN);
    const std::string out = dir_ + ".out", err = dir_ + ".err";
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
      dup2(open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      char* envp[] = {nullptr};
      execve(argv[0], argv.data(), envp);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    Ran r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return r;
  }

  /// A live state file for `r` as the profiler writes it: comm 0xd9 of 4 ranks, AllReduce #39
  /// completed, nothing in flight (hang: nothing stalled).
  void writeState(const provenance::ProcessRecord& r, int rank) {
    const std::string text =
        "{\"format\":\"nccl-pilot-state\",\"version\":1,\"node\":\"" + r.node +
        "\",\"pid\":" + std::to_string(r.pid) +
        ",\"job\":\"4711\",\"library\":\"t\",\"written_ms\":1764769999700,\"next_due_ms\":"
        "1764770000700,\"stall_s\":2,\"final\":false,\"comms\":[{\"comm\":\"0xd9\",\"comm_"
        "name\":\"dp\",\"rank\":" +
        std::to_string(rank) +
        ",\"nranks\":4,\"n_nodes\":2,\"ops\":{\"AllReduce\":[40,40]},\"sends\":{},\"recvs\":{},"
        "\"in_flight\":0,\"last\":{\"op\":\"AllReduce\",\"seq\":39,\"bytes\":4194304,\"peer\":-1,"
        "\"age_s\":6.0},\"last_done_age_s\":6.0,\"oldest\":null,\"waiting_s\":0,\"stalled\":"
        "false,\"window\":{\"s\":30,\"keys\":[]}}]}\n";
    testing::writeText(dir_ + "/nccl_pilot_" + r.node + "_" + std::to_string(r.pid) + ".state.json",
                       text);
  }

  /// The issue's job (or, healthy, the same job without its faults), with summaries and
  /// live state files beside the records.
  void writeJob(bool healthy) {
    std::vector<provenance::ProcessRecord> job = testing::issueJob();
    if (healthy) {
      for (provenance::ProcessRecord& r : job) {
        provenance::ProcessRecord clean = testing::rankRecord(r.node, r.pid, r.rank);
        testing::set(&clean, "NCCL_SOCKET_IFNAME", "eth0");
        r = clean;
      }
    }
    for (size_t i = 0; i < job.size(); ++i) {
      testing::writeRecord(dir_, job[i]);
      testing::writeSummary(dir_, job[i], {testing::commLine("0xd9", job[i], i, 4)});
      writeState(job[i], static_cast<int>(i));
    }
  }
};

TEST_F(JobCli, IssueJobExitsOneWithLinesInDoctorsFormat) {
  writeJob(/*healthy=*/false);
  const Ran r = run({"doctor", "--job", dir_});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  const std::vector<std::string> all = lines(r.out);
  ASSERT_GE(all.size(), 8u) << r.out;
  EXPECT_EQ(all[0], "nccl-pilot doctor --job " + dir_ +
                        ": 4 ranks on 2 nodes, compared within comm 0xd9 (4 ranks)");
  const std::string text = r.out;
  EXPECT_NE(text.find("\nFAIL  job-nccl      NCCL 2.28.3 on rank 3 (node-b) | the other 3 ranks "
                      "run 2.28.9 (majority); its library: /opt/nccl-2.28.3/lib/libnccl.so.2 | "
                      "fix: run one NCCL on every rank"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nFAIL  job-libnccl   2 libnccl mapped in rank 1 (node-a) | "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nWARN  job-settings  NCCL_PROTO=LL128 (dangerous) on rank 2 (node-b) | "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nWARN  job-settings  NCCL_SOCKET_IFNAME=eth1 on rank 3 (node-b) | the "
                      "other 3 ranks have eth0 (majority) | fix: "),
            std::string::npos)
      << text;
  for (const std::string& l : all) {
    if (l.rfind("FAIL", 0) == 0 || l.rfind("WARN", 0) == 0) {
      EXPECT_EQ(l.find("rank 0 ("), std::string::npos) << l;
      EXPECT_EQ(l.find("ranks 0"), std::string::npos) << l;
    }
  }
  EXPECT_EQ(all.back().rfind("summary: ", 0), 0u) << all.back();
  EXPECT_NE(all.back().find("FAIL, 0 SKIP (exit 1)"), std::string::npos) << all.back();
}

TEST_F(JobCli, JsonParsesAndCarriesEveryRank) {
  writeJob(/*healthy=*/false);
  const Ran r = run({"doctor", "--job", dir_, "--json"});
  EXPECT_EQ(r.status, 1) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["job"], dir_);
  ASSERT_EQ(j["ranks"].size(), 4u);
  EXPECT_EQ(j["ranks"][3]["rank"], 3);
  EXPECT_EQ(j["ranks"][3]["node"], "node-b");
  EXPECT_EQ(j["ranks"][3]["nccl_version"], "2.28.3");
  EXPECT_EQ(j["ranks"][1]["libraries"].size(), 2u);
  EXPECT_EQ(j["summary"]["exit"], 1);
  EXPECT_EQ(j["summary"]["ranks"], 4);
  EXPECT_EQ(j["summary"]["nodes"], 2);
  EXPECT_GE(j["summary"]["fail"].get<int>(), 2);
  bool libnccl = false;
  for (const nlohmann::json& c : j["checks"]) {
    ASSERT_TRUE(c.contains("id") && c.contains("status") && c.contains("subject") &&
                c.contains("evidence") && c.contains("fix"));
    libnccl |= c["id"] == "job-libnccl" && c["status"] == "FAIL";
  }
  EXPECT_TRUE(libnccl) << r.out;
  EXPECT_TRUE(j["notes"].is_array());
}

TEST_F(JobCli, HealthyJobExitsZero) {
  writeJob(/*healthy=*/true);
  const Ran r = run({"doctor", "--job", dir_});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  for (const std::string& l : lines(r.out)) {
    EXPECT_TRUE(l.rfind("nccl-pilot doctor --job ", 0) == 0 || l.rfind("PASS  job-", 0) == 0 ||
                l.rfind("summary: 6 PASS, 0 WARN, 0 FAIL, 0 SKIP (exit 0)", 0) == 0)
        << l;
  }
}

TEST_F(JobCli, UsageErrorsAndNoRecordsExitTwo) {
  Ran r = run({"doctor", "--job", dir_});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no nccl-pilot provenance record under " + dir_), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("NCCL_PILOT_METRICS_DIR on every rank"), std::string::npos) << r.err;
  EXPECT_EQ(run({"doctor", "--job", dir_ + "/missing"}).status, 2);
  writeJob(/*healthy=*/true);
  EXPECT_EQ(run({"doctor", "--job", dir_, "--compare", dir_}).status, 2);
  EXPECT_EQ(run({"doctor", "--job", dir_, "--only", "env"}).status, 2);
  EXPECT_EQ(run({"doctor", "--job", dir_, "--fingerprint", dir_}).status, 2);
  r = run({"doctor", "--job"});
  EXPECT_EQ(r.status, 2) << r.err;
}

TEST_F(JobCli, HangAndMonitorSayAFailInOneLineAndKeepTheirExitStatus) {
  const std::string now = "--now=1764770000000";
  writeJob(/*healthy=*/true);
  const Ran hangHealthy = run({"hang", dir_, now});
  const Ran monitorHealthy = run({"monitor", dir_});
  EXPECT_EQ(count(hangHealthy.out, "doctor --job"), 0u) << hangHealthy.out;
  EXPECT_EQ(count(monitorHealthy.out, "doctor --job"), 0u) << monitorHealthy.out;
  const nlohmann::json healthyJson = nlohmann::json::parse(run({"hang", dir_, now, "--json"}).out);
  EXPECT_TRUE(healthyJson["job_audit"].is_null()) << healthyJson.dump();

  writeJob(/*healthy=*/false);
  const Ran hang = run({"hang", dir_, now});
  EXPECT_EQ(hang.status, hangHealthy.status) << hang.out << hang.err;
  EXPECT_EQ(count(hang.out, "doctor --job: FAIL"), 1u) << hang.out;
  const std::string headline =
      "doctor --job: FAIL NCCL 2.28.3 on rank 3 (node-b), majority 2.28.9 "
      "(and 2 more FAIL; nccl-pilot doctor --job " +
      dir_ + ")\n";
  EXPECT_NE(hang.out.find(headline), std::string::npos) << hang.out;
  // Nothing else changes: the output is the healthy one plus that line.
  EXPECT_EQ(hang.out, hangHealthy.out + headline);
  const Ran hangJson = run({"hang", dir_, now, "--json"});
  EXPECT_EQ(hangJson.status, hangHealthy.status);
  const nlohmann::json j = nlohmann::json::parse(hangJson.out);
  EXPECT_EQ(j["job_audit"], headline.substr(0, headline.size() - 1));

  const Ran monitor = run({"monitor", dir_});
  EXPECT_EQ(monitor.status, monitorHealthy.status) << monitor.err;
  EXPECT_EQ(monitor.out, monitorHealthy.out + headline);
}

}  // namespace
}  // namespace pilot::doctor
