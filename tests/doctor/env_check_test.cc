// env: unknown names with the closest known one, values NCCL misreads or rejects, nccl-pilot's
// own settings, and settings that contradict the recorded machine.
#include <gtest/gtest.h>

#include "test_support.h"

namespace pilot::doctor {
namespace {

using testing::contains;
using testing::dump;
using testing::matching;
using testing::of;
using testing::runOn;

DoctorReport envOn(const std::string& tree, std::map<std::string, std::string> env,
                   bool fileReadable = true) {
  Probes p;
  p.fileReadable = [fileReadable](const std::string&) { return fileReadable; };
  return runOn(tree, std::move(env), {"env"}, p);
}

/// The one env finding whose subject starts with `name`.
Finding only(const DoctorReport& r, const std::string& name) {
  std::vector<Finding> found;
  for (const Finding& f : of(r, "env")) {
    if (f.subject.rfind(name, 0) == 0) found.push_back(f);
  }
  EXPECT_EQ(found.size(), 1u) << dump(r);
  return found.empty() ? Finding{} : found[0];
}

TEST(Env, CleanEnvironmentPasses) {
  const DoctorReport r = envOn("baremetal-repaired", {{"NCCL_DEBUG", "INFO"},
                                                      {"NCCL_IB_HCA", "mlx5"},
                                                      {"NCCL_SOCKET_IFNAME", "ibp"},
                                                      {"NCCL_NET_GDR_LEVEL", "PHB"},
                                                      {"NCCL_PILOT_TOPO_REPAIR", "off"},
                                                      {"NCCL_ASYNC_ERROR_HANDLING", "1"},
                                                      {"PATH", "/usr/bin"}});
  ASSERT_EQ(of(r, "env").size(), 1u) << dump(r);
  EXPECT_EQ(of(r, "env")[0].verdict, Verdict::Pass);
  EXPECT_TRUE(contains(of(r, "env")[0].evidence, "6 set"));
}

TEST(Env, TyposNameTheClosestVariable) {
  const DoctorReport r = envOn("baremetal-repaired", {{"NCCL_SOCKET_IFNAM", "ib"},
                                                      {"NCCL_IB_HCAS", "mlx5_0"},
                                                      {"NCCL_DEBUG_SUBSYSTEM", "INIT"},
                                                      {"NCCL_PILOT_TUNER_TABEL", "/t"},
                                                      {"NCCL_XYZZY_QUUX", "1"}});
  const Finding ifname = only(r, "NCCL_SOCKET_IFNAM=");
  EXPECT_EQ(ifname.verdict, Verdict::Warn);
  EXPECT_TRUE(contains(ifname.evidence, "likely a typo of NCCL_SOCKET_IFNAME"));
  EXPECT_EQ(ifname.fix, "rename it NCCL_SOCKET_IFNAME");
  EXPECT_TRUE(contains(only(r, "NCCL_IB_HCAS=").evidence, "typo of NCCL_IB_HCA"));
  EXPECT_TRUE(contains(only(r, "NCCL_DEBUG_SUBSYSTEM=").evidence, "typo of NCCL_DEBUG_SUBSYS"));
  EXPECT_TRUE(
      contains(only(r, "NCCL_PILOT_TUNER_TABEL=").evidence, "typo of NCCL_PILOT_TUNER_TABLE"));
  const Finding far = only(r, "NCCL_XYZZY_QUUX=");
  EXPECT_TRUE(contains(far.evidence, "ignored (or a newer release's)")) << far.evidence;
}

TEST(Env, RenamedVariable) {
  const Finding f =
      only(envOn("baremetal-repaired", {{"NCCL_IB_GDR_LEVEL", "PXB"}}), "NCCL_IB_GDR_LEVEL=");
  EXPECT_EQ(f.fix, "rename it NCCL_NET_GDR_LEVEL");
}

TEST(Env, ValuesNcclMisreadsOrRejects) {
  const DoctorReport r = envOn("baremetal-repaired", {{"NCCL_IB_DISABLE", "true"},
                                                      {"NCCL_IB_TIMEOUT", "40"},
                                                      {"NCCL_IB_TC", "0106"},
                                                      {"NCCL_IB_SL", "3"},
                                                      {"NCCL_DEBUG", "INFOO"},
                                                      {"NCCL_NET_GDR_LEVEL", "PHX"},
                                                      {"NCCL_P2P_LEVEL", "3"}});
  const Finding disable = only(r, "NCCL_IB_DISABLE=");
  EXPECT_EQ(disable.verdict, Verdict::Warn);
  EXPECT_TRUE(contains(disable.evidence, "NCCL reads it with strtoll as 0"));
  const Finding timeout = only(r, "NCCL_IB_TIMEOUT=");
  EXPECT_EQ(timeout.verdict, Verdict::Fail);
  EXPECT_TRUE(contains(timeout.evidence, "outside 0..31"));
  EXPECT_TRUE(contains(only(r, "NCCL_IB_TC=").evidence, "as 70"));  // octal 0106
  EXPECT_TRUE(contains(only(r, "NCCL_DEBUG=").evidence, "NCCL prints nothing"));
  EXPECT_TRUE(contains(only(r, "NCCL_NET_GDR_LEVEL=").evidence, "not one of LOC"));
  for (const Finding& f : of(r, "env")) {
    EXPECT_FALSE(contains(f.subject, "NCCL_IB_SL")) << f.subject;
    EXPECT_FALSE(contains(f.subject, "NCCL_P2P_LEVEL")) << f.subject;
  }
}

TEST(Env, BoundsThatContradictEachOther) {
  const DoctorReport r = envOn("baremetal-repaired", {{"NCCL_MIN_NCHANNELS", "32"},
                                                      {"NCCL_MAX_NCHANNELS", "16"},
                                                      {"NCCL_SOCKET_NTHREADS", "8"},
                                                      {"NCCL_NSOCKS_PERTHREAD", "16"}});
  EXPECT_TRUE(contains(only(r, "NCCL_MIN_NCHANNELS=").evidence, "above NCCL_MAX_NCHANNELS=16"));
  EXPECT_TRUE(contains(only(r, "NCCL_SOCKET_NTHREADS=").evidence, "128 sockets per connection"));
}

TEST(Env, PilotSettingsAreReadAsTheLibraryReadsThem) {
  const DoctorReport r = envOn(
      "baremetal-repaired", {{"NCCL_PILOT_TOPO_REPAIR", "maybe"}, {"NCCL_PILOT_TUNER", "perhaps"}});
  EXPECT_TRUE(contains(only(r, "NCCL_PILOT_TOPO_REPAIR").evidence, "is not one of auto|on|off"));
  EXPECT_TRUE(contains(only(r, "NCCL_PILOT_TUNER").evidence, "is not a boolean"));
}

TEST(Env, IbHcaNamingAbsentDevices) {
  const Finding none =
      only(envOn("baremetal-repaired", {{"NCCL_IB_HCA", "mlx4_0"}}), "NCCL_IB_HCA=");
  EXPECT_EQ(none.verdict, Verdict::Fail);
  EXPECT_TRUE(contains(none.evidence, "names mlx4_0, which no RDMA port matches"));
  EXPECT_TRUE(contains(none.evidence, "mlx5_0:1, mlx5_1:1, mlx5_2:1"));
  EXPECT_TRUE(contains(none.evidence, "falls back to sockets"));
  const Finding some =
      only(envOn("baremetal-repaired", {{"NCCL_IB_HCA", "=mlx5_0,mlx5_9:1"}}), "NCCL_IB_HCA=");
  EXPECT_EQ(some.verdict, Verdict::Warn);
  EXPECT_TRUE(contains(some.evidence, "names mlx5_9:1"));
  const Finding port =
      only(envOn("baremetal-repaired", {{"NCCL_IB_HCA", "mlx5_0:2"}}), "NCCL_IB_HCA=");
  EXPECT_EQ(port.verdict, Verdict::Fail);
}

TEST(Env, SocketIfnameMatchingNoInterfaceFails) {
  const Finding f =
      only(envOn("baremetal-repaired", {{"NCCL_SOCKET_IFNAME", "eth0"}}), "NCCL_SOCKET_IFNAME=");
  EXPECT_EQ(f.verdict, Verdict::Fail);
  EXPECT_TRUE(contains(f.evidence, "(ibp155s0, ibp156s0, ibp25s0, lo)"));
  // Exclusions and prefixes as NCCL reads them.
  EXPECT_EQ(
      of(envOn("baremetal-repaired", {{"NCCL_SOCKET_IFNAME", "^lo,docker"}}), "env")[0].verdict,
      Verdict::Pass);
}

TEST(Env, UnreadableTopoFileAndTable) {
  const DoctorReport r = envOn(
      "baremetal-repaired",
      {{"NCCL_TOPO_FILE", "/nowhere/topo.xml"}, {"NCCL_PILOT_TUNER_TABLE", "/nowhere/t.table"}},
      /*fileReadable=*/false);
  EXPECT_TRUE(contains(only(r, "NCCL_TOPO_FILE=").evidence, "detects the topology itself"));
  EXPECT_EQ(only(r, "NCCL_PILOT_TUNER_TABLE=").verdict, Verdict::Warn);
}

TEST(Env, IbSwitchedOffWhileIbPortsAreUp) {
  const Finding f = only(envOn("baremetal-repaired", {{"NCCL_IB_DISABLE", "1"}}), "NCCL's network");
  EXPECT_EQ(f.verdict, Verdict::Warn);
  EXPECT_TRUE(contains(f.evidence,
                       "NCCL_IB_DISABLE=1: NCCL's IB transport is off, although "
                       "mlx5_0 port 1 ACTIVE, InfiniBand"))
      << f.evidence;
  const Finding net = only(envOn("baremetal-repaired", {{"NCCL_NET", "Socket"}}), "NCCL's network");
  EXPECT_TRUE(contains(net.evidence, "NCCL_NET=Socket"));
  // On a machine whose ports are down the switch changes nothing.
  testing::TreeCopy copy("roce-v1-only");
  copy.write("sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  Probes p;
  const DoctorReport quiet = copy.run({{"NCCL_IB_DISABLE", "1"}}, {"env"}, p);
  EXPECT_EQ(of(quiet, "env")[0].verdict, Verdict::Pass) << dump(quiet);
}

}  // namespace
}  // namespace pilot::doctor
