// `nccl-pilot doctor` as a user runs it: the done-when trees (a FAIL for the ACS bridge, the x8
// NIC and the DOWN port, exit 1; the repaired tree passing them, exit 0), usage errors (exit 2),
// the distributed check on fingerprints with one odd node, and the live probes against this
// machine's libnccl.so.2 and the built plugin.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "text_file.h"

namespace pilot::doctor {
namespace {

struct Result {
  int status = -1;
  std::string out, err;
};

using testsupport::slurp;

class DoctorCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pilot-doctor-cli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// Runs nccl-pilot with exactly `env` as its environment.
  Result run(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), PILOT_NCCL_PILOT_BIN);
    const std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    const pid_t pid = fork();
    if (pid == 0) {
      int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      std::vector<char*> argv, envp;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      for (std::string& v : env) envp.push_back(v.data());
      envp.push_back(nullptr);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    Result r;
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  static nlohmann::json parsed(const Result& r) {
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
    return j;
  }

  /// The checks of `id` with `status` whose subject contains `subject`.
  static std::vector<nlohmann::json> checks(const nlohmann::json& j, const std::string& id,
                                            const std::string& status,
                                            const std::string& subject = "") {
    std::vector<nlohmann::json> out;
    for (const nlohmann::json& c : j["checks"]) {
      if (c["id"] == id && c["status"] == status &&
          c["subject"].get<std::string>().find(subject) != std::string::npos)
        out.push_back(c);
    }
    return out;
  }

  std::string dir_;
};

TEST_F(DoctorCli, FaultyTreeFailsOnTheAcsBridgeTheX8NicAndTheDownPort) {
  const Result r = run({"doctor", "--sysfs-root", testing::tree("baremetal-faulty"), "--json"});
  EXPECT_EQ(r.status, 1) << r.err;
  const nlohmann::json j = parsed(r);
  ASSERT_EQ(checks(j, "pcie-acs", "FAIL").size(), 1u) << r.out;
  EXPECT_NE(checks(j, "pcie-acs", "FAIL")[0]["subject"].get<std::string>().find("0000:17:00.0"),
            std::string::npos);
  ASSERT_EQ(checks(j, "pcie-link", "FAIL").size(), 1u) << r.out;
  EXPECT_EQ(checks(j, "pcie-link", "FAIL")[0]["subject"], "mlx5_0 (0000:19:00.0)");
  ASSERT_EQ(checks(j, "rdma-port", "FAIL").size(), 1u) << r.out;
  EXPECT_EQ(checks(j, "rdma-port", "FAIL")[0]["subject"], "mlx5_1 port 1");
  EXPECT_GE(j["summary"]["fail"].get<int>(), 3);
  EXPECT_EQ(j["summary"]["exit"], 1);
  for (const nlohmann::json& c : j["checks"]) {
    ASSERT_TRUE(c.contains("id") && c.contains("status") && c.contains("subject") &&
                c.contains("evidence") && c.contains("fix"));
  }
}

TEST_F(DoctorCli, RepairedTreePassesThoseChecksAndExitsZero) {
  const Result r = run({"doctor", "--sysfs-root", testing::tree("baremetal-repaired"), "--json"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  const nlohmann::json j = parsed(r);
  for (const char* id :
       {"pcie-acs", "pcie-link", "rdma-port", "iommu", "gdr", "numa", "memlock", "cpu-governor"}) {
    EXPECT_FALSE(checks(j, id, "PASS").empty()) << id;
    EXPECT_TRUE(checks(j, id, "FAIL").empty()) << id;
    EXPECT_TRUE(checks(j, id, "WARN").empty()) << id << "\n" << r.out;
  }
  EXPECT_EQ(j["summary"]["fail"], 0);
}

TEST_F(DoctorCli, TextIsOneLinePerFindingWithASummary) {
  const Result r =
      run({"doctor", "--sysfs-root", testing::tree("baremetal-faulty"), "--only", "rdma-port"});
  EXPECT_EQ(r.status, 1);
  std::istringstream lines(r.out);
  std::string line;
  std::vector<std::string> all;
  while (std::getline(lines, line)) all.push_back(line);
  ASSERT_EQ(all.size(), 5u) << r.out;  // header, 3 ports, summary
  EXPECT_EQ(all[0].rfind("nccl-pilot doctor: sysfs ", 0), 0u) << all[0];
  EXPECT_EQ(all[2].rfind("FAIL  rdma-port     mlx5_1 port 1 | state DOWN", 0), 0u) << all[2];
  EXPECT_NE(all[2].find(" | fix: "), std::string::npos);
  EXPECT_EQ(all[4], "summary: 1 PASS, 1 WARN, 1 FAIL, 0 SKIP (exit 1)");
}

TEST_F(DoctorCli, UsageErrorsExitTwo) {
  Result r = run({"doctor", "--only", "pcie-acs,bogus"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown check 'bogus' (checks: pcie-acs, pcie-link"), std::string::npos)
      << r.err;
  r = run({"doctor", "--compare", dir_, "--fingerprint", dir_});
  EXPECT_EQ(r.status, 2) << r.err;
  r = run({"doctor", "--no-such-flag"});
  EXPECT_EQ(r.status, 2);
}

TEST_F(DoctorCli, CompareNamesTheOddNode) {
  const std::string fp = dir_ + "/fingerprints";
  for (const char* n : {"node-a", "node-b", "node-c", "node-d"}) {
    const Result r = run({"doctor", "--sysfs-root", testing::tree("baremetal-repaired"),
                          "--fingerprint", fp, "--node", n});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(std::string("wrote ") + fp + "/" + n + ".json"), std::string::npos);
  }
  Result agree = run({"doctor", "--compare", fp});
  EXPECT_EQ(agree.status, 0) << agree.out;
  EXPECT_NE(agree.out.find("result: all 4 nodes agree"), std::string::npos) << agree.out;
  // The fifth node is the faulty machine; its name comes from the tree's hostname.
  ASSERT_EQ(run({"doctor", "--sysfs-root", testing::tree("baremetal-faulty"), "--fingerprint", fp})
                .status,
            1);
  ASSERT_TRUE(std::filesystem::exists(fp + "/gpu-node-17.json"));
  std::ofstream(fp + "/garbage.json") << "{\"format\": \"something else\"}";
  const Result text = run({"doctor", "--compare", fp});
  EXPECT_EQ(text.status, 1);
  EXPECT_NE(text.out.find("result: odd nodes: gpu-node-17\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("DIFF  gpu-node-17  status.pcie-acs = FAIL (majority PASS on 4 of 5 "
                          "nodes) | 0000:17:00.0"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("DIFF  gpu-node-17  rdma.mlx5_1:1 = DOWN"), std::string::npos);
  EXPECT_NE(text.out.find("UNREADABLE " + fp + "/garbage.json: not a doctor fingerprint"),
            std::string::npos)
      << text.out;
  const nlohmann::json j = parsed(run({"doctor", "--compare", fp, "--json"}));
  EXPECT_EQ(j["nodes"], 5);
  EXPECT_EQ(j["odd_nodes"], nlohmann::json::array({"gpu-node-17"}));
  bool link = false;
  for (const nlohmann::json& d : j["differences"]) {
    EXPECT_EQ(d["node"], "gpu-node-17");
    link = link || (d["key"] == "status.pcie-link" && d["value"] == "FAIL");
  }
  EXPECT_TRUE(link) << j.dump(2);
  EXPECT_EQ(run({"doctor", "--compare", dir_ + "/empty-and-missing"}).status, 1);
}

TEST_F(DoctorCli, LiveProbesFindThisMachinesNcclAndTheBuiltPlugin) {
  const std::string plugin = PILOT_PLUGIN_LIB;
  Result r = run({"doctor", "--only", "nccl", "--json"},
                 {"NCCL_NET_PLUGIN=" + plugin, "NCCL_TUNER_PLUGIN=none"});
  const nlohmann::json j = parsed(r);
  const auto net = checks(j, "nccl", "PASS", "NCCL_NET_PLUGIN=" + plugin);
  ASSERT_EQ(net.size(), 1u) << r.out;
  const std::string evidence = net[0]["evidence"];
  EXPECT_NE(evidence.find("name \"Pilot\", exports ncclNetPlugin_v* v6..v12"), std::string::npos)
      << evidence;
  EXPECT_EQ(checks(j, "nccl", "PASS", "NCCL_TUNER_PLUGIN=none").size(), 1u) << r.out;
  // This machine's NCCL, when it has one, is named with the version ncclGetVersion reports.
  void* nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  const auto lib = checks(j, "nccl", nccl ? "PASS" : "WARN", "libnccl.so.2");
  ASSERT_EQ(lib.size(), 1u) << r.out;
  if (nccl != nullptr) {
    using GetVersion = int (*)(int*);
    int code = 0;
    reinterpret_cast<GetVersion>(dlsym(nccl, "ncclGetVersion"))(&code);
    const std::string version = std::to_string(code / 10000) + "." +
                                std::to_string(code % 10000 / 100) + "." +
                                std::to_string(code % 100);
    EXPECT_NE(lib[0]["evidence"].get<std::string>().find(version), std::string::npos) << r.out;
    EXPECT_NE(evidence.find("takes v"), std::string::npos) << evidence;
  }
  EXPECT_EQ(r.status, 0) << r.out;
  // A mistyped plugin name loads nothing: NCCL would silently fall back.
  r = run({"doctor", "--only", "nccl"}, {"NCCL_NET_PLUGIN=pilto"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("FAIL  nccl          NCCL_NET_PLUGIN=pilto | nothing loads (tried pilto, "
                       "libnccl-net-pilto.so"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace pilot::doctor
