// The built libnccl-net-pilot.so driven as NCCL drives a net plugin (research/net.md §1-2):
// every exported version is initialised like its NCCL release does it, reports 0 devices, and
// hands NCCL a topology file through NCCL_TOPO_FILE once per process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "net_host.h"
#include "pilot/version.h"

namespace nethost {
namespace {

constexpr int kVersions[] = {6, 7, 8, 9, 10, 11, 12};
constexpr const char* kTopoHeader = "<system version=\"1\">";

std::string topoFile() {
  const char* value = std::getenv("NCCL_TOPO_FILE");
  return value == nullptr ? std::string() : value;
}

/// The descriptor behind "/proc/self/fd/N", or -1.
int procFd(const std::string& path) {
  const std::string prefix = "/proc/self/fd/";
  if (path.compare(0, prefix.size(), prefix) != 0) return -1;
  return std::atoi(path.c_str() + prefix.size());
}

/// What NCCL does after init when devices() is 0: v11+ finalizes the context (2.30).
void finalizeLikeNccl(void* symbol, int version, void* ctx) {
  if (version >= 11) {
    EXPECT_EQ(static_cast<NetPerComm*>(symbol)->finalize(ctx), Success);
  }
}

int devicesOf(void* symbol) {
  int ndev = -1;
  EXPECT_EQ(static_cast<NetOld*>(symbol)->devices(&ndev), Success);  // same slot in every version
  return ndev;
}

/// Slots NCCL must find NULL: irecvConsumed (v7+; NCCL calls it for host plugins when set) and
/// makeVDevice (v9+; NULL keeps the physical devices).
bool mayBeNull(int version, int slot) {
  const int irecvConsumed = 18, makeVDevice = 19;
  return (version >= 7 && slot == irecvConsumed) || (version >= 9 && slot == makeVDevice);
}

TEST(NetPluginSurface, ExportsEveryVersionNamedPilotWithNoEmptySlot) {
  inChild([] {
    void* module = openModule();
    ASSERT_NE(module, nullptr);
    for (int version : kVersions) {
      SCOPED_TRACE("v" + std::to_string(version));
      void* symbol = netSymbol(module, version);
      ASSERT_NE(symbol, nullptr);
      EXPECT_STREQ(static_cast<NetOld*>(symbol)->name, "Pilot");
      void* const* slots = static_cast<void* const*>(symbol);
      for (int i = 0; i < slotCount(version); ++i) {
        EXPECT_EQ(slots[i] == nullptr, mayBeNull(version, i)) << "slot " << i;
      }
    }
    EXPECT_EQ(netSymbol(module, 5), nullptr);
    EXPECT_EQ(netSymbol(module, 13), nullptr);
  });
}

class EveryVersion : public ::testing::TestWithParam<int> {};

TEST_P(EveryVersion, InitSucceedsReportsNoDeviceAndWritesTheTopologyFile) {
  const int version = GetParam();
  inChild([version] {
    useRecordedMachine();
    void* module = openModule();
    ASSERT_NE(module, nullptr);
    void* symbol = netSymbol(module, version);
    ASSERT_NE(symbol, nullptr);
    void* ctx = nullptr;
    ASSERT_EQ(initLikeNccl(symbol, version, &ctx), Success) << dumpLogs();
    EXPECT_EQ(ctx, nullptr) << "no device: NCCL falls back and may free the context twice";
    EXPECT_EQ(devicesOf(symbol), 0);

    const std::string path = topoFile();
    const int fd = procFd(path);
    ASSERT_GE(fd, 0) << "NCCL_TOPO_FILE='" << path << "'\n" << dumpLogs();
    const std::string xml = readFile(path);
    EXPECT_EQ(xml.rfind(kTopoHeader, 0), 0u) << xml.substr(0, 200);
    EXPECT_EQ(countLogs(LogWarn, {}), 0) << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"NET/Pilot", "NCCL_TOPO_FILE=" + path}), 1) << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"NET/Pilot", std::string("nccl-pilot ") + pilot::kVersion}), 1)
        << dumpLogs();
    finalizeLikeNccl(symbol, version, ctx);
  });
}

TEST_P(EveryVersion, CallsNeedingADeviceFailWithoutCrashing) {
  const int version = GetParam();
  inChild([version] {
    setenv("NCCL_PILOT_TOPO", "0", 1);
    void* module = openModule();
    ASSERT_NE(module, nullptr);
    void* symbol = netSymbol(module, version);
    void* ctx = nullptr;
    ASSERT_EQ(initLikeNccl(symbol, version, &ctx), Success);
    char props[256] = {};
    EXPECT_EQ(static_cast<NetOld*>(symbol)->getProperties(0, props), InternalError);
    char handle[128] = {};
    void* comm = nullptr;
    if (version >= 11) {
      auto* net = static_cast<NetPerComm*>(symbol);
      EXPECT_EQ(net->listen(ctx, 0, handle, &comm), InternalError);
      void* devHandle = nullptr;
      EXPECT_EQ(net->connect(ctx, 0, handle, &comm, &devHandle), InternalError);
      EXPECT_EQ(net->isend(nullptr, nullptr, 0, 0, nullptr, nullptr, &comm), InternalError);
      int done = 0;
      EXPECT_EQ(net->test(nullptr, &done, nullptr), InternalError);
      EXPECT_EQ(net->closeSend(nullptr), InternalError);
    } else {
      EXPECT_EQ(static_cast<NetOld*>(symbol)->listen(0, handle, &comm), InternalError);
    }
    EXPECT_EQ(comm, nullptr);
    EXPECT_GE(countLogs(LogWarn, {"NET/Pilot", "no network devices"}), 1) << dumpLogs();
    finalizeLikeNccl(symbol, version, ctx);
  });
}

INSTANTIATE_TEST_SUITE_P(Net, EveryVersion, ::testing::ValuesIn(kVersions),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return "v" + std::to_string(param.param);
                         });

TEST(NetPluginInit, TwoCommunicatorsDetectOnce) {
  for (int version : {6, 12}) {
    SCOPED_TRACE("v" + std::to_string(version));
    inChild([version] {
      useRecordedMachine();
      void* symbol = netSymbol(openModule(), version);
      ASSERT_NE(symbol, nullptr);
      void* first = nullptr;
      void* second = nullptr;
      ASSERT_EQ(initLikeNccl(symbol, version, &first, 1), Success);
      const std::string path = topoFile();
      ASSERT_EQ(initLikeNccl(symbol, version, &second, 2), Success);
      EXPECT_EQ(topoFile(), path) << "the second init must not write another file";
      EXPECT_EQ(first, nullptr);  // topology-only: no context (SurvivesTheFallbackOfNccl2289)
      EXPECT_EQ(second, nullptr);
      EXPECT_EQ(countLogs(LogInfo, {"NCCL_TOPO_FILE=/proc/self/fd/"}), 1) << dumpLogs();
      EXPECT_EQ(countLogs(LogInfo, {"topology-only mode"}), 1) << dumpLogs();
      finalizeLikeNccl(symbol, version, first);
      finalizeLikeNccl(symbol, version, second);
    });
  }
}

TEST(NetPluginInit, ConcurrentCommunicatorsAllSeeTheFile) {
  inChild([] {
    useRecordedMachine();
    void* symbol = netSymbol(openModule(), 12);
    ASSERT_NE(symbol, nullptr);
    constexpr int kThreads = 8;
    std::vector<void*> contexts(kThreads, nullptr);
    std::vector<std::string> seen(kThreads);
    std::vector<int> results(kThreads, -1);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        results[t] = initLikeNccl(symbol, 12, &contexts[t], static_cast<uint64_t>(t));
        seen[t] = topoFile();  // init returned: the file must already be in place
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(results[t], Success);
      EXPECT_EQ(seen[t], topoFile());
      finalizeLikeNccl(symbol, 12, contexts[t]);
    }
    EXPECT_EQ(procFd(topoFile()) >= 0, true) << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"NCCL_TOPO_FILE=/proc/self/fd/"}), 1) << dumpLogs();
  });
}

TEST(NetPluginInit, FinalizeAcceptsTheNullContextOfAFailedInit) {
  // NCCL 2.28.9 calls finalize(comm->netContext) on every init failure path.
  inChild([] {
    void* symbol = netSymbol(openModule(), 11);
    ASSERT_NE(symbol, nullptr);
    EXPECT_EQ(static_cast<NetPerComm*>(symbol)->finalize(nullptr), Success);
  });
}

TEST(NetPluginInit, SurvivesTheFallbackOfNccl2289) {
  // NCCL 2.28.9 with a plugin that reports 0 devices: finalize(comm->netContext), then IB's
  // init fails without writing comm->netContext and IB's finalize free()s it again. On a real
  // H200 this aborted every rank ("double free detected in tcache 2") until init stopped
  // handing out a context with no device.
  inChild([] {
    useRecordedMachine();
    void* symbol = netSymbol(openModule(), 11);
    ASSERT_NE(symbol, nullptr);
    void* netContext = nullptr;
    ASSERT_EQ(initLikeNccl(symbol, 11, &netContext), Success) << dumpLogs();
    ASSERT_EQ(devicesOf(symbol), 0);
    EXPECT_EQ(static_cast<NetPerComm*>(symbol)->finalize(netContext), Success);
    free(netContext);  // ncclIbFinalize(comm->netContext)
  });
}

TEST(NetPluginInit, WorksWithoutALogger) {
  inChild([] {
    setenv("NCCL_PILOT_HWLOC_XML", "/nonexistent/hwloc.xml", 1);  // a WARN with nowhere to go
    void* symbol = netSymbol(openModule(), 9);
    ASSERT_NE(symbol, nullptr);
    EXPECT_EQ(static_cast<NetOld*>(symbol)->init(nullptr), Success);
    EXPECT_EQ(devicesOf(symbol), 0);
  });
}

TEST(NetPluginTopology, PresetTopoFileIsKept) {
  inChild([] {
    useRecordedMachine();
    setenv("NCCL_TOPO_FILE", "/etc/nccl/my-topology.xml", 1);
    void* symbol = netSymbol(openModule(), 12);
    void* ctx = nullptr;
    ASSERT_EQ(initLikeNccl(symbol, 12, &ctx), Success);
    EXPECT_EQ(topoFile(), "/etc/nccl/my-topology.xml");
    EXPECT_EQ(
        countLogs(LogInfo, {"NET/Pilot", "NCCL_TOPO_FILE=/etc/nccl/my-topology.xml", "keeping it"}),
        1)
        << dumpLogs();
    EXPECT_EQ(countLogs(LogWarn, {}), 0) << dumpLogs();
    finalizeLikeNccl(symbol, 12, ctx);
  });
}

TEST(NetPluginTopology, DeadInheritedProcFdIsReplaced) {
  inChild([] {
    useRecordedMachine();
    int pipeFds[2];
    ASSERT_EQ(pipe(pipeFds), 0);  // a number reused for a pipe: not a file NCCL could read
    const std::string stale = "/proc/self/fd/" + std::to_string(pipeFds[0]);
    setenv("NCCL_TOPO_FILE", stale.c_str(), 1);
    void* symbol = netSymbol(openModule(), 8);
    void* ctx = nullptr;
    ASSERT_EQ(initLikeNccl(symbol, 8, &ctx), Success);
    EXPECT_NE(topoFile(), stale);
    EXPECT_EQ(readFile(topoFile()).rfind(kTopoHeader, 0), 0u) << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {stale, "replacing it"}), 1) << dumpLogs();
    close(pipeFds[0]);
    close(pipeFds[1]);
  });
}

TEST(NetPluginTopology, DisabledWritesNothing) {
  inChild([] {
    useRecordedMachine();
    setenv("NCCL_PILOT_TOPO", "0", 1);
    void* symbol = netSymbol(openModule(), 12);
    void* ctx = nullptr;
    ASSERT_EQ(initLikeNccl(symbol, 12, &ctx), Success);
    EXPECT_EQ(std::getenv("NCCL_TOPO_FILE"), nullptr);
    EXPECT_EQ(countLogs(LogInfo, {"NET/Pilot", "NCCL_PILOT_TOPO=0"}), 1) << dumpLogs();
    EXPECT_EQ(devicesOf(symbol), 0);
    finalizeLikeNccl(symbol, 12, ctx);
  });
}

TEST(NetPluginTopology, MissingHwlocXmlIsOneWarnAndInitStillSucceeds) {
  inChild([] {
    setenv("NCCL_PILOT_HWLOC_XML", "/nonexistent/pilot/hwloc.xml", 1);
    setenv("NCCL_PILOT_SYSFS_ROOT", PILOT_EMPTY_SYSFS_ROOT, 1);
    void* symbol = netSymbol(openModule(), 10);
    void* ctx = nullptr;
    ASSERT_EQ(initLikeNccl(symbol, 10, &ctx), Success);
    EXPECT_EQ(devicesOf(symbol), 0);
    EXPECT_EQ(std::getenv("NCCL_TOPO_FILE"), nullptr);
    EXPECT_EQ(countLogs(LogWarn, {}), 1) << dumpLogs();
    EXPECT_EQ(countLogs(LogWarn, {"NET/Pilot", "topology detection failed",
                                  "NCCL detects the machine on its own"}),
              1)
        << dumpLogs();
  });
}

TEST(NetPluginTopology, DumpGetsACopy) {
  inChild([] {
    useRecordedMachine();
    const std::string dir = makeTempDir();
    const std::string dump = dir + "/topo.xml";
    setenv("NCCL_PILOT_TOPO_DUMP", dump.c_str(), 1);
    void* symbol = netSymbol(openModule(), 12);
    void* ctx = nullptr;
    ASSERT_EQ(initLikeNccl(symbol, 12, &ctx), Success);
    const std::string copy = readFile(dump);
    EXPECT_EQ(copy, readFile(topoFile()));
    EXPECT_EQ(copy.rfind(kTopoHeader, 0), 0u);
    EXPECT_EQ(countLogs(LogInfo, {"NCCL_PILOT_TOPO_DUMP=" + dump}), 1) << dumpLogs();
    finalizeLikeNccl(symbol, 12, ctx);
    unlink(dump.c_str());
    rmdir(dir.c_str());
  });
}

TEST(NetPluginTopology, UnwritableDumpIsAWarnNotAFailure) {
  inChild([] {
    useRecordedMachine();
    setenv("NCCL_PILOT_TOPO_DUMP", "/nonexistent/dir/topo.xml", 1);
    void* symbol = netSymbol(openModule(), 12);
    void* ctx = nullptr;
    ASSERT_EQ(initLikeNccl(symbol, 12, &ctx), Success);
    EXPECT_EQ(procFd(topoFile()) >= 0, true) << dumpLogs();
    EXPECT_EQ(countLogs(LogWarn, {"NET/Pilot", "NCCL_PILOT_TOPO_DUMP"}), 1) << dumpLogs();
    finalizeLikeNccl(symbol, 12, ctx);
  });
}

TEST(NetPluginTopology, TheFileSurvivesExecAndCannotBeChanged) {
  inChild([] {
    useRecordedMachine();
    void* symbol = netSymbol(openModule(), 12);
    void* ctx = nullptr;
    ASSERT_EQ(initLikeNccl(symbol, 12, &ctx), Success);
    const int fd = procFd(topoFile());
    ASSERT_GE(fd, 3) << dumpLogs();
    EXPECT_EQ(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0) << "an exec'ed child inherits NCCL_TOPO_FILE";
    const int seals = fcntl(fd, F_GET_SEALS);
    EXPECT_NE(seals & F_SEAL_WRITE, 0);
    const int writable = open(topoFile().c_str(), O_WRONLY);
    EXPECT_TRUE(writable < 0 || write(writable, "x", 1) < 0);
    if (writable >= 0) close(writable);
    finalizeLikeNccl(symbol, 12, ctx);
  });
}

/// devices() after a v12 init with `env` set (and NCCL_PILOT_TRANSPORT unset: the default).
int devicesWith(const std::vector<std::pair<const char*, std::string>>& env) {
  setenv("NCCL_PILOT_TOPO", "0", 1);
  unsetenv("NCCL_PILOT_TRANSPORT");
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  for (const auto& [name, value] : env) setenv(name, value.c_str(), 1);
  void* symbol = netSymbol(openModule(), 12);
  void* ctx = nullptr;
  EXPECT_EQ(initLikeNccl(symbol, 12, &ctx), Success);
  const int n = devicesOf(symbol);
  finalizeLikeNccl(symbol, 12, ctx);
  return n;
}

const std::string kRoce = std::string(PILOT_TOPOLOGY_DATA) + "/kvm-flat-2gpu-2nic";
const std::string kInfiniband = std::string(PILOT_TOPOLOGY_DATA) + "/baremetal-2gpu-2nic-switch";

/// A new sysfs root holding `files` (a path inside the root, and its one line), nothing else.
std::string sysfsTree(const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string root = makeTempDir();
  for (const auto& [path, line] : files) {
    const std::filesystem::path file = std::filesystem::path(root) / path;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << line << "\n";
    EXPECT_EQ(readFile(file.string()), line + "\n") << file;
  }
  return root;
}

/// A sysfs tree with one RDMA port in `state` (as the kernel writes it, "1: DOWN").
std::string rdmaTree(const std::string& state) {
  const std::string port = "sys/class/infiniband/mlx5_0/ports/1";
  return sysfsTree({{port + "/state", state}, {port + "/link_layer", "InfiniBand"}});
}

TEST(NetPluginTransport, AutoIsTheDefaultAndLeavesEthernetToNcclsSocket) {
  // No RDMA: NCCL's own Socket transport moves the data (ours measured slower on bulk steps).
  inChild([] {
    EXPECT_EQ(devicesWith({{"NCCL_PILOT_SYSFS_ROOT", PILOT_EMPTY_SYSFS_ROOT}}), 0) << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"NET/Pilot", "transport auto: topology-only mode",
                                  "NCCL's Socket transport", "no RDMA device",
                                  "NCCL_PILOT_TRANSPORT=socket"}),
              1)
        << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"socket transport on"}), 0) << dumpLogs();
  });
  inChild([] {
    const std::string down = rdmaTree("1: DOWN");
    EXPECT_EQ(devicesWith({{"NCCL_PILOT_SYSFS_ROOT", down}}), 0) << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"transport auto: topology-only mode", "NCCL's Socket transport",
                                  "no RDMA port ACTIVE (mlx5_0 port 1 DOWN, InfiniBand)"}),
              1)
        << dumpLogs();
    std::system(("rm -rf " + down).c_str());
  });
  // NCCL_IB_DISABLE=1 and an NCCL_IB_HCA naming no port that is up: NCCL falls back to its
  // own Socket, and so does auto.
  inChild([] {
    EXPECT_EQ(devicesWith({{"NCCL_PILOT_SYSFS_ROOT", kRoce}, {"NCCL_IB_DISABLE", "1"}}), 0)
        << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"NCCL's Socket transport", "NCCL_IB_DISABLE=1"}), 1)
        << dumpLogs();
  });
  inChild([] {
    EXPECT_EQ(devicesWith({{"NCCL_PILOT_SYSFS_ROOT", kRoce}, {"NCCL_IB_HCA", "=mlx5_7"}}), 0)
        << dumpLogs();
  });
}

/// A sysfs root whose /proc says TCP's congestion control is `cc` (no RDMA device).
std::string congestionTree(const std::string& cc) {
  return sysfsTree({{"proc/sys/net/ipv4/tcp_congestion_control", cc}});
}

TEST(NetPluginTransport, AutoNamesWhenOptingInPaysOnBulkToo) {
  // Under cubic our transport measured faster on bulk steps as well: the INFO line says so, and
  // the choice stays NCCL's Socket (a node-local setting never decides the transport).
  inChild([] {
    const std::string cubic = congestionTree("cubic");
    EXPECT_EQ(devicesWith({{"NCCL_PILOT_SYSFS_ROOT", cubic}}), 0) << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"NCCL's Socket transport", "NCCL_PILOT_TRANSPORT=socket",
                                  "congestion control cubic as here, on bulk steps too"}),
              1)
        << dumpLogs();
    std::system(("rm -rf " + cubic).c_str());
  });
  inChild([] {
    const std::string bbr = congestionTree("bbr");
    EXPECT_EQ(devicesWith({{"NCCL_PILOT_SYSFS_ROOT", bbr}}), 0) << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"NCCL's Socket transport", "faster below 512K"}), 1)
        << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"cubic"}), 0) << dumpLogs();
    std::system(("rm -rf " + bbr).c_str());
  });
}

TEST(NetPluginTransport, AutoLeavesTheDataToNcclsIbWhereAnRdmaPortIsActive) {
  inChild([] {
    EXPECT_EQ(devicesWith({{"NCCL_PILOT_SYSFS_ROOT", kRoce}}), 0) << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"NET/Pilot", "transport auto: topology-only mode",
                                  "mlx5_0 port 1 ACTIVE, Ethernet"}),
              1)
        << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"socket transport on"}), 0) << dumpLogs();
  });
  inChild([] {
    EXPECT_EQ(devicesWith({{"NCCL_PILOT_SYSFS_ROOT", kInfiniband}}), 0) << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"transport auto: topology-only mode", "InfiniBand"}), 1)
        << dumpLogs();
  });
  inChild([] {
    const std::string active = rdmaTree("4: ACTIVE");
    EXPECT_EQ(devicesWith({{"NCCL_PILOT_SYSFS_ROOT", active}}), 0) << dumpLogs();
    std::system(("rm -rf " + active).c_str());
  });
}

TEST(NetPluginTransport, AutoGivesTcpWhereNcclNetNamesThisPlugin) {
  // NCCL_NET=Pilot: the user asked for this plugin's network by name; with 0 devices NCCL
  // would have no network at all.
  inChild([] {
    EXPECT_EQ(devicesWith({{"NCCL_PILOT_SYSFS_ROOT", kInfiniband}, {"NCCL_NET", "Pilot"}}), 1)
        << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"transport auto: our TCP transport", "NCCL_NET=Pilot"}), 1)
        << dumpLogs();
  });
  inChild([] {
    EXPECT_EQ(
        devicesWith({{"NCCL_PILOT_SYSFS_ROOT", PILOT_EMPTY_SYSFS_ROOT}, {"NCCL_NET", "pilot"}}), 1)
        << dumpLogs();
  });
  // Another network by name (NCCL's own Socket) is not ours: 0 devices.
  inChild([] {
    EXPECT_EQ(
        devicesWith({{"NCCL_PILOT_SYSFS_ROOT", PILOT_EMPTY_SYSFS_ROOT}, {"NCCL_NET", "Socket"}}), 0)
        << dumpLogs();
  });
}

TEST(NetPluginTransport, SocketAndNoneForceEitherWay) {
  inChild([] {
    EXPECT_EQ(devicesWith({{"NCCL_PILOT_SYSFS_ROOT", kRoce}, {"NCCL_PILOT_TRANSPORT", "socket"}}),
              1)
        << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"transport auto"}), 0) << dumpLogs();
  });
  inChild([] {
    EXPECT_EQ(devicesWith({{"NCCL_PILOT_SYSFS_ROOT", PILOT_EMPTY_SYSFS_ROOT},
                           {"NCCL_PILOT_TRANSPORT", "None"}}),
              0);
    EXPECT_EQ(countLogs(LogInfo, {"topology-only mode"}), 1) << dumpLogs();
  });
}

TEST(NetPluginTransport, UnknownValueIsAWarnAndTheDefaultHolds) {
  inChild([] {
    setenv("NCCL_PILOT_TOPO", "0", 1);
    setenv("NCCL_PILOT_TRANSPORT", "rdma", 1);
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    setenv("NCCL_PILOT_SYSFS_ROOT", PILOT_EMPTY_SYSFS_ROOT, 1);
    void* symbol = netSymbol(openModule(), 7);
    void* ctx = nullptr;
    ASSERT_EQ(initLikeNccl(symbol, 7, &ctx), Success);
    EXPECT_EQ(devicesOf(symbol), 0);  // auto: no RDMA, NCCL's Socket
    EXPECT_EQ(countLogs(LogWarn, {"NCCL_PILOT_TRANSPORT=rdma", "auto|none|socket", "using auto"}),
              1)
        << dumpLogs();
    EXPECT_EQ(countLogs(LogInfo, {"transport auto: topology-only mode"}), 1) << dumpLogs();
  });
}

}  // namespace
}  // namespace nethost
