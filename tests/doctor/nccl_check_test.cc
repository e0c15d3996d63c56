// nccl: the judgement of what the probe found (fake facts here; doctor_cli_test runs the real
// probe against this machine's libnccl.so.2 and the built plugin).
#include <gtest/gtest.h>

#include "test_support.h"

namespace pilot::doctor {
namespace {

using testing::contains;
using testing::dump;
using testing::matching;
using testing::of;
using testing::runOn;

PluginResolution ours(const std::string& variable, std::optional<std::string> value) {
  PluginResolution r;
  r.variable = variable;
  r.value = std::move(value);
  r.path = "/opt/nccl-pilot/lib/libnccl-net-pilot.so";
  r.name = "Pilot";
  r.netAbis = {6, 7, 8, 9, 10, 11, 12};
  r.tunerAbis = {2, 3, 4, 5, 6};
  r.abiTaken = variable == "NCCL_NET_PLUGIN" ? 11 : 5;
  r.digest = "fnv1a64:00000000000000aa";
  return r;
}

NcclFacts healthy() {
  NcclFacts f;
  f.loaded = NcclCopy{"/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.9", "2.28.9",
                      "dlopen(libnccl.so.2) and ncclGetVersion"};
  f.plugins = {ours("NCCL_NET_PLUGIN", "pilot"), ours("NCCL_TUNER_PLUGIN", "pilot")};
  PluginResolution profiler;
  profiler.variable = "NCCL_PROFILER_PLUGIN";
  profiler.tried = {"libnccl-profiler.so"};
  profiler.error = "libnccl-profiler.so: cannot open shared object file";
  f.plugins.push_back(profiler);
  f.toolVersion = "nccl-pilot 0.1.0";
  return f;
}

DoctorReport withFacts(NcclFacts facts) {
  Probes p;
  p.nccl = [facts](const Environment&) { return facts; };
  return runOn("baremetal-repaired", {}, {"nccl"}, p);
}

TEST(Nccl, OneNcclAndOurPluginPass) {
  const DoctorReport r = withFacts(healthy());
  EXPECT_EQ(matching(r, "nccl", Verdict::Pass).size(), 4u) << dump(r);
  const auto lib = matching(r, "nccl", Verdict::Pass, "libnccl.so.2");
  ASSERT_EQ(lib.size(), 1u);
  EXPECT_TRUE(contains(lib[0].evidence, "2.28.9"));
  const auto net = matching(r, "nccl", Verdict::Pass, "NCCL_NET_PLUGIN=pilot");
  ASSERT_EQ(net.size(), 1u);
  EXPECT_TRUE(contains(net[0].evidence, "name \"Pilot\", exports ncclNetPlugin_v* v6..v12"));
  EXPECT_TRUE(contains(net[0].evidence, "nccl-pilot's library; this tool is nccl-pilot 0.1.0"));
  EXPECT_TRUE(contains(net[0].evidence, "NCCL 2.28.9 takes v11"));
  EXPECT_TRUE(
      contains(matching(r, "nccl", Verdict::Pass, "NCCL_PROFILER_PLUGIN (unset)")[0].evidence,
               "NCCL uses the net plugin library's profiler, else none"));
  EXPECT_EQ(r.facts.at("nccl.version"), "2.28.9");
}

TEST(Nccl, ANetPluginNameThatLoadsNothingFails) {
  NcclFacts f = healthy();
  f.plugins[0] = PluginResolution{};
  f.plugins[0].variable = "NCCL_NET_PLUGIN";
  f.plugins[0].value = "pilto";
  f.plugins[0].tried = {"pilto", "libnccl-net-pilto.so"};
  f.plugins[0].error = "libnccl-net-pilto.so: cannot open shared object file";
  const DoctorReport r = withFacts(f);
  const auto fails = matching(r, "nccl", Verdict::Fail, "NCCL_NET_PLUGIN=pilto");
  ASSERT_EQ(fails.size(), 1u) << dump(r);
  EXPECT_TRUE(contains(fails[0].evidence, "tried pilto, libnccl-net-pilto.so"));
  EXPECT_TRUE(
      contains(fails[0].evidence, "its internal IB and Socket transports, without an error"));
  EXPECT_TRUE(contains(fails[0].fix, "libnccl-net-NAME.so"));
}

TEST(Nccl, APluginNcclCannotTakeFails) {
  NcclFacts f = healthy();
  f.plugins[0].abiTaken = 0;
  EXPECT_EQ(matching(withFacts(f), "nccl", Verdict::Fail, "NCCL_NET_PLUGIN").size(), 1u);
  NcclFacts g = healthy();
  g.plugins[0].netAbis.clear();
  const auto fails = matching(withFacts(g), "nccl", Verdict::Fail, "NCCL_NET_PLUGIN");
  ASSERT_EQ(fails.size(), 1u);
  EXPECT_TRUE(contains(fails[0].evidence, "finds no ncclNetPlugin_v* symbol"));
}

TEST(Nccl, AMissingTunerFallsBackAndWarns) {
  NcclFacts f = healthy();
  f.plugins[1] = PluginResolution{};
  f.plugins[1].variable = "NCCL_TUNER_PLUGIN";
  f.plugins[1].value = "/opt/missing.so";
  f.plugins[1].tried = {"/opt/missing.so"};
  EXPECT_EQ(matching(withFacts(f), "nccl", Verdict::Warn, "NCCL_TUNER_PLUGIN").size(), 1u);
}

TEST(Nccl, SeveralVersionsInSightWarn) {
  NcclFacts f = healthy();
  f.others.push_back(NcclCopy{"/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2",
                              "2.21.5", "Python wheel nvidia-nccl-cu12"});
  const auto warns = matching(withFacts(f), "nccl", Verdict::Warn, "libnccl.so.2");
  ASSERT_EQ(warns.size(), 1u);
  EXPECT_TRUE(contains(warns[0].evidence, "2.21.5, Python wheel nvidia-nccl-cu12"));
  EXPECT_TRUE(contains(warns[0].fix, "NCCL_DEBUG=VERSION"));
  // The same version twice is fine.
  f.others[0].version = "2.28.9";
  EXPECT_EQ(matching(withFacts(f), "nccl", Verdict::Pass, "libnccl.so.2").size(), 1u);
}

TEST(Nccl, NoNcclAndOldNcclWarn) {
  NcclFacts none = healthy();
  none.loaded.reset();
  none.loadError = "libnccl.so.2: cannot open shared object file";
  const DoctorReport r = withFacts(none);
  EXPECT_EQ(matching(r, "nccl", Verdict::Warn, "libnccl.so.2").size(), 1u) << dump(r);
  EXPECT_EQ(r.facts.at("nccl.version"), "none");
  NcclFacts old = healthy();
  old.loaded->version = "2.18.6";
  EXPECT_TRUE(contains(matching(withFacts(old), "nccl", Verdict::Warn, "libnccl.so.2")[0].evidence,
                       "serves NCCL 2.21 and later"));
}

TEST(Nccl, ARecordedTreeIsNotProbed) {
  const DoctorReport r = runOn("baremetal-repaired", {}, {"nccl"});
  ASSERT_EQ(of(r, "nccl").size(), 1u);
  EXPECT_EQ(of(r, "nccl")[0].verdict, Verdict::Skip);
}

}  // namespace
}  // namespace pilot::doctor
