// provenance/: what each NCCL_* name is, nccl.conf as NCCL reads it, and the record's JSON line
// and series read back.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "pilot/provenance/conf_files.h"
#include "pilot/provenance/nccl_settings.h"
#include "pilot/provenance/record.h"

namespace pilot::provenance {
namespace {

SettingClass classOf(const char* name, const char* value, bool rdma = false) {
  return classifySetting(name, value, rdma).cls;
}

TEST(SettingClass, ProtocolsForcedAreDebugAndLl128IsDangerous) {
  EXPECT_EQ(classOf("NCCL_PROTO", "LL128"), SettingClass::Dangerous);
  EXPECT_EQ(classOf("NCCL_PROTO", "Simple,ll128"), SettingClass::Dangerous);
  EXPECT_EQ(classOf("NCCL_PROTO", "^LL128"), SettingClass::Debug);
  EXPECT_EQ(classOf("NCCL_PROTO", "Simple"), SettingClass::Debug);
  EXPECT_NE(classifySetting("NCCL_PROTO", "LL128").why.find("nccl#790"), std::string::npos);
  EXPECT_EQ(classOf("NCCL_ALGO", "Ring"), SettingClass::Debug);
}

TEST(SettingClass, SwitchesCountOnlyWhenOn) {
  EXPECT_EQ(classOf("NCCL_P2P_DISABLE", "1"), SettingClass::Debug);
  EXPECT_EQ(classOf("NCCL_P2P_DISABLE", "0"), SettingClass::Nccl);
  EXPECT_EQ(classOf("NCCL_SHM_DISABLE", "1"), SettingClass::Debug);
  // IB off is a plain setting on an Ethernet host, a debugging switch where RDMA is up.
  EXPECT_EQ(classOf("NCCL_IB_DISABLE", "1", false), SettingClass::Nccl);
  EXPECT_EQ(classOf("NCCL_IB_DISABLE", "1", true), SettingClass::Debug);
  EXPECT_EQ(classOf("NCCL_IB_DISABLE", "0", true), SettingClass::Nccl);
}

TEST(SettingClass, NamesOfOthersOursDeprecatedAndTypos) {
  EXPECT_EQ(classOf("NCCL_SOCKET_IFNAME", "eth0"), SettingClass::Nccl);
  EXPECT_EQ(classOf("NCCL_PILOT_METRICS_DIR", "/x"), SettingClass::Pilot);
  EXPECT_EQ(classOf("NCCL_SHARP_DISABLE", "1"), SettingClass::Other);
  const Classification old = classifySetting("NCCL_IB_GDR_LEVEL", "PHB");
  EXPECT_EQ(old.cls, SettingClass::Deprecated);
  EXPECT_EQ(old.closest, "NCCL_NET_GDR_LEVEL");
  EXPECT_EQ(classOf("NCCL_ASYNC_ERROR_HANDLING", "1"), SettingClass::Deprecated);
  const Classification typo = classifySetting("NCCL_SOCKET_IFNAM", "eth0");
  EXPECT_EQ(typo.cls, SettingClass::Unknown);
  EXPECT_EQ(typo.closest, "NCCL_SOCKET_IFNAME");
  const Classification far = classifySetting("NCCL_COMPLETELY_MADE_UP_THING", "1");
  EXPECT_EQ(far.cls, SettingClass::Unknown);
  EXPECT_EQ(far.closest, "");
}

TEST(SettingClass, NamesRoundTrip) {
  for (SettingClass c :
       {SettingClass::Nccl, SettingClass::Pilot, SettingClass::Other, SettingClass::Debug,
        SettingClass::Dangerous, SettingClass::Deprecated, SettingClass::Unknown}) {
    SettingClass back = SettingClass::Nccl;
    ASSERT_TRUE(parseClassName(className(c), &back)) << className(c);
    EXPECT_EQ(back, c);
  }
  SettingClass unused;
  EXPECT_FALSE(parseClassName("risky", &unused));
}

TEST(SettingClass, ValuesThatDifferByDesign) {
  EXPECT_TRUE(differsByDesign("NCCL_TOPO_FILE", "/proc/self/fd/7"));
  EXPECT_FALSE(differsByDesign("NCCL_TOPO_FILE", "/etc/topo.xml"));
  EXPECT_TRUE(differsByDesign("NCCL_HOSTID", "a"));
  EXPECT_FALSE(differsByDesign("NCCL_SOCKET_IFNAME", "eth1"));
}

TEST(NcclConf, FilesInNcclsOrder) {
  EXPECT_EQ(ncclConfFiles(std::nullopt, "/home/u"),
            (std::vector<std::string>{"/home/u/.nccl.conf", "/etc/nccl.conf"}));
  EXPECT_EQ(ncclConfFiles(std::string("/x.conf"), "/home/u"),
            (std::vector<std::string>{"/x.conf", "/etc/nccl.conf"}));
  // An empty NCCL_CONF_FILE is as if unset.
  EXPECT_EQ(ncclConfFiles(std::string(""), "/home/u", "/r"),
            (std::vector<std::string>{"/home/u/.nccl.conf", "/r/etc/nccl.conf"}));
  EXPECT_EQ(ncclConfFiles(std::nullopt, ""), (std::vector<std::string>{"/etc/nccl.conf"}));
}

TEST(NcclConf, LinesAsNcclReadsThem) {
  const auto lines = parseNcclConf(
      "# a comment\nNCCL_DEBUG=WARN\r\nno equals sign\n NCCL_X = y \n=v\n"
      "NCCL_SOCKET_IFNAME==ens1f0\nNCCL_EMPTY=\n#NCCL_OFF=1");
  const std::vector<std::pair<std::string, std::string>> want = {
      {"NCCL_DEBUG", "WARN"},  // the CR dropped
      {" NCCL_X ", " y "},     // nothing trimmed: NCCL sets the name with its spaces
      {"", "v"},
      {"NCCL_SOCKET_IFNAME", "=ens1f0"},
      {"NCCL_EMPTY", ""}};
  EXPECT_EQ(lines, want);
  const auto cut = parseNcclConf("NCCL_LONG=" + std::string(3000, 'v'));
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0].second.size(), 1023u);
}

ProcessRecord sample() {
  ProcessRecord r;
  r.node = "node-a";
  r.pid = 42;
  r.writtenMs = 1700000000000;
  r.rank = "1";
  r.rankFrom = "RANK";
  r.pilotVersion = "0.1.0";
  r.nccl = {"/opt/nccl/lib/libnccl.so.2", "2.28.9"};
  r.ncclHow = "the caller of init";
  r.libraries = {{"/opt/nccl/lib/libnccl.so.2", "2.28.9"}, {"/cupy/libnccl.so.2", "2.27.5"}};
  r.pluginSettings = {{"NCCL_NET_PLUGIN", "pilot"}};
  r.plugins = {{"net", 10, "/p/libnccl-net-pilot.so"}, {"tuner", 5, "/p/libnccl-net-pilot.so"}};
  r.confFiles = {"/etc/nccl.conf"};
  Setting proto;
  proto.name = "NCCL_PROTO";
  proto.value = "LL128";
  proto.cls = SettingClass::Dangerous;
  proto.why = "forces LL128";
  Setting quoted;
  quoted.name = "NCCL_SOCKET_IFNAME";
  quoted.value = "eth\"0\\\n";
  quoted.source = "/etc/nccl.conf";
  Setting typo;
  typo.name = "NCCL_SOCKET_IFNAM";
  typo.value = "eth0";
  typo.cls = SettingClass::Unknown;
  typo.closest = "NCCL_SOCKET_IFNAME";
  r.settings = {proto, quoted, typo};
  return r;
}

TEST(Record, JsonLineReadsBack) {
  const std::string line = renderRecordJson(sample());
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["kind"], "provenance");
  EXPECT_EQ(j["format"], kRecordFormat);
  EXPECT_EQ(j["node"], "node-a");
  EXPECT_EQ(j["pid"], 42);
  EXPECT_EQ(j["rank"], "1");
  EXPECT_EQ(j["nccl"]["version"], "2.28.9");
  EXPECT_EQ(j["nccl"]["path"], "/opt/nccl/lib/libnccl.so.2");
  ASSERT_EQ(j["libraries"].size(), 2u);
  EXPECT_EQ(j["libraries"][1]["version"], "2.27.5");
  EXPECT_EQ(j["plugin_settings"]["NCCL_NET_PLUGIN"], "pilot");
  EXPECT_EQ(j["plugins"][1]["kind"], "tuner");
  EXPECT_EQ(j["plugins"][1]["abi"], 5);
  ASSERT_EQ(j["settings"].size(), 3u);
  EXPECT_EQ(j["settings"][0]["class"], "dangerous");
  EXPECT_EQ(j["settings"][1]["value"], "eth\"0\\\n");
  EXPECT_EQ(j["settings"][1]["source"], "/etc/nccl.conf");
  EXPECT_EQ(j["settings"][2]["closest"], "NCCL_SOCKET_IFNAME");
}

TEST(Record, SeriesCarryVersionsAsLabels) {
  const std::string text = renderRecordPrometheus(sample());
  EXPECT_NE(text.find("nccl_pilot_process_info{node=\"node-a\",pid=\"42\",rank=\"1\","
                      "nccl_version=\"2.28.9\",nccl_path=\"/opt/nccl/lib/libnccl.so.2\","),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("libnccl_copies=\"2\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("path=\"/cupy/libnccl.so.2\",version=\"2.27.5\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("class=\"dangerous\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("class=\"unknown\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("class=\"debug\"} 0\n"), std::string::npos);
}

TEST(Record, OwnProblemsNameEachKind) {
  const std::string problems = ownProblems(sample());
  EXPECT_NE(problems.find("2 libnccl mapped"), std::string::npos) << problems;
  EXPECT_NE(problems.find("/cupy/libnccl.so.2 (2.27.5)"), std::string::npos);
  EXPECT_NE(problems.find("NCCL_PROTO=LL128 (dangerous"), std::string::npos);
  EXPECT_NE(problems.find("NCCL_SOCKET_IFNAM (NCCL_SOCKET_IFNAME?)"), std::string::npos);
  ProcessRecord clean = sample();
  clean.libraries.resize(1);
  clean.settings = {clean.settings[1]};
  EXPECT_EQ(ownProblems(clean), "");
}

TEST(Record, LauncherRankInOrderOfPrecedence) {
  std::map<std::string, std::string> env = {
      {"SLURM_PROCID", "7"}, {"RANK", "3"}, {"SLURM_LOCALID", "1"}};
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  LauncherRank r = launcherRank(lookup);
  EXPECT_EQ(r.rank, "3");
  EXPECT_EQ(r.from, "RANK");
  EXPECT_EQ(r.local, "1");
  env["RANK"] = "three";  // not a number: the next launcher's
  r = launcherRank(lookup);
  EXPECT_EQ(r.rank, "7");
  EXPECT_EQ(r.from, "SLURM_PROCID");
  env.clear();
  EXPECT_EQ(launcherRank(lookup).rank, "");
}

}  // namespace
}  // namespace pilot::provenance
