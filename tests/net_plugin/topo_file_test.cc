// provideTopologyFile with a fake detection and a recording environment writer: the decisions
// (disabled, user file, failure, written), the memfd, the repair and the dump, no dlopen.
#include "pilot/topology/topo_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace pilot::topology {
namespace {

using Kind = TopoFileOutcome::Kind;

struct Line {
  LogLevel level;
  std::string text;
};

class RecordingLogger final : public Logger {
 public:
  void write(LogLevel level, unsigned long, const char*, int, const std::string& message) override {
    lines.push_back({level, message});
  }
  int count(LogLevel level, const std::string& needle = "") const {
    int n = 0;
    for (const Line& l : lines) n += l.level == level && l.text.find(needle) != std::string::npos;
    return n;
  }
  std::string all() const {
    std::string s;
    for (const Line& l : lines)
      s += (l.level == LogLevel::Warn ? "WARN " : "INFO ") + l.text + "\n";
    return s;
  }
  std::vector<Line> lines;
};

class RecordingWriter final : public EnvironmentWriter {
 public:
  bool set(const char* name, const std::string& value) override {
    if (fail) return false;
    values[name] = value;
    return true;
  }
  std::map<std::string, std::string> values;
  bool fail = false;
};

EnvLookup mapEnv(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// A flat VM: one NUMA node, a GPU and an HDR HCA each behind its own root port of one host
/// bridge, so they meet at the host bridge (PHB) and the repair has work to do.
Machine flatVm() {
  Machine m;
  m.source = "test machine";
  m.hypervisor = "CPU flag hypervisor";
  CpuNode cpu;
  cpu.numaId = 0;
  cpu.arch = "x86_64";
  cpu.vendor = "GenuineIntel";
  cpu.familyId = 6;
  cpu.modelId = 143;
  cpu.affinity = "ffffffff";
  m.cpus.push_back(cpu);
  auto add = [&](PciKind kind, const char* bus, int parent, uint32_t classCode) {
    PciNode node;
    node.kind = kind;
    if (bus != nullptr) node.busId = BusId::parse(bus);
    node.parent = parent;
    node.numaNode = 0;
    node.classCode = classCode;
    node.linkSpeed = "16.0 GT/s PCIe";
    node.linkWidth = 16;
    m.pci.push_back(node);
    return static_cast<int>(m.pci.size()) - 1;
  };
  const int host = add(PciKind::HostBridge, nullptr, -1, 0x060000);
  const int port1 = add(PciKind::RootPort, "0000:00:01.0", host, 0x060400);
  const int gpuPci = add(PciKind::Endpoint, "0000:01:00.0", port1, 0x030200);
  const int port2 = add(PciKind::RootPort, "0000:00:02.0", host, 0x060400);
  const int nicPci = add(PciKind::Endpoint, "0000:02:00.0", port2, 0x020700);
  Gpu gpu;
  gpu.pci = gpuPci;
  gpu.sm = 80;
  m.gpus.push_back(gpu);
  Nic nic;
  nic.pci = nicPci;
  nic.name = "mlx5_0";
  nic.netdev = "ib0";
  nic.rdma = true;
  nic.state = "ACTIVE";
  nic.linkLayer = LinkLayer::InfiniBand;
  nic.speedMbps = 200000;
  m.nics.push_back(nic);
  m.notes.push_back("NVML not used: test");
  return m;
}

class ProvideTopologyFile : public ::testing::Test {
 protected:
  void TearDown() override {
    if (outcome.fd >= 0) close(outcome.fd);
  }
  TopoFileOutcome run(std::map<std::string, std::string> vars, Expected<Machine> machine) {
    outcome = provideTopologyFile(mapEnv(std::move(vars)), log, writer, [&] {
      ++detections;
      return machine;
    });
    return outcome;
  }

  RecordingLogger log;
  RecordingWriter writer;
  int detections = 0;
  TopoFileOutcome outcome;
};

TEST_F(ProvideTopologyFile, WritesTheRepairedMachineIntoAMemfd) {
  run({}, flatVm());
  ASSERT_EQ(outcome.kind, Kind::Written) << log.all();
  EXPECT_EQ(detections, 1);
  ASSERT_GE(outcome.fd, 3);
  EXPECT_EQ(outcome.path, "/proc/self/fd/" + std::to_string(outcome.fd));
  EXPECT_EQ(writer.values["NCCL_TOPO_FILE"], outcome.path);
  const std::string xml = readAll(outcome.path);
  EXPECT_EQ(xml.rfind("<system version=\"1\">", 0), 0u) << xml;
  EXPECT_NE(xml.find("ffff:ff:01.0"), std::string::npos) << "synthetic switch\n" << xml;
  EXPECT_EQ(fcntl(outcome.fd, F_GETFD) & FD_CLOEXEC, 0);
  // One INFO summary: counts, the pair with its path before and after, the repair, the path.
  EXPECT_EQ(log.count(LogLevel::Warn), 0) << log.all();
  EXPECT_EQ(log.count(LogLevel::Info, "NCCL_TOPO_FILE=" + outcome.path), 1) << log.all();
  EXPECT_NE(outcome.summary.find("1 GPU(s), 1 NIC(s)"), std::string::npos) << outcome.summary;
  EXPECT_NE(outcome.summary.find("0000:01:00.0->mlx5_0 PHB->PIX"), std::string::npos)
      << outcome.summary;
  EXPECT_NE(outcome.summary.find("repaired"), std::string::npos) << outcome.summary;
  EXPECT_NE(outcome.summary.find("test machine"), std::string::npos) << outcome.summary;
  EXPECT_EQ(log.count(LogLevel::Info, "topology repair: ffff:ff:01.0"), 1) << log.all();
  EXPECT_EQ(log.count(LogLevel::Info, "topology: NVML not used: test"), 1) << log.all();
}

TEST_F(ProvideTopologyFile, FlatBareMetalIsNotRepairedUnlessForced) {
  // The same flat tree without any sign of a hypervisor: GPU and NIC really meet at the CPU.
  Machine bare = flatVm();
  bare.hypervisor.clear();
  run({}, bare);
  ASSERT_EQ(outcome.kind, Kind::Written) << log.all();
  EXPECT_EQ(readAll(outcome.path).find("ffff:ff:"), std::string::npos);
  EXPECT_NE(outcome.summary.find("PHB; bare metal"), std::string::npos) << outcome.summary;

  for (const char* forced : {"on", "1"}) {
    TearDown();
    run({{"NCCL_PILOT_TOPO_REPAIR", forced}}, bare);
    ASSERT_EQ(outcome.kind, Kind::Written) << log.all();
    EXPECT_NE(readAll(outcome.path).find("ffff:ff:01.0"), std::string::npos) << forced;
  }
}

TEST_F(ProvideTopologyFile, MalformedRepairSettingWarnsAndUsesAuto) {
  run({{"NCCL_PILOT_TOPO_REPAIR", "maybe"}}, flatVm());
  ASSERT_EQ(outcome.kind, Kind::Written) << log.all();
  EXPECT_EQ(log.count(LogLevel::Warn, "NCCL_PILOT_TOPO_REPAIR=maybe is not auto, on or off"), 1)
      << log.all();
  EXPECT_NE(readAll(outcome.path).find("ffff:ff:01.0"), std::string::npos);
}

TEST_F(ProvideTopologyFile, RepairOffWritesTheMachineAsDetected) {
  run({{"NCCL_PILOT_TOPO_REPAIR", "0"}}, flatVm());
  ASSERT_EQ(outcome.kind, Kind::Written) << log.all();
  EXPECT_EQ(readAll(outcome.path).find("ffff:ff:"), std::string::npos);
  EXPECT_NE(outcome.summary.find("0000:01:00.0->mlx5_0 PHB; repair off"), std::string::npos)
      << outcome.summary;
}

TEST_F(ProvideTopologyFile, DisabledDoesNotDetect) {
  run({{"NCCL_PILOT_TOPO", "off"}}, flatVm());
  EXPECT_EQ(outcome.kind, Kind::Disabled);
  EXPECT_EQ(detections, 0);
  EXPECT_TRUE(writer.values.empty());
  EXPECT_EQ(log.count(LogLevel::Info, "NCCL_PILOT_TOPO=0"), 1) << log.all();
}

TEST_F(ProvideTopologyFile, MalformedSwitchIsAWarnAndTheDefault) {
  run({{"NCCL_PILOT_TOPO", "maybe"}}, flatVm());
  EXPECT_EQ(outcome.kind, Kind::Written) << log.all();
  EXPECT_EQ(log.count(LogLevel::Warn, "NCCL_PILOT_TOPO=maybe is not a boolean"), 1) << log.all();
}

TEST_F(ProvideTopologyFile, UserFileIsKept) {
  run({{"NCCL_TOPO_FILE", "/opt/topo/azure-ndv5.xml"}}, flatVm());
  EXPECT_EQ(outcome.kind, Kind::UserFileKept);
  EXPECT_EQ(outcome.path, "/opt/topo/azure-ndv5.xml");
  EXPECT_EQ(detections, 0);
  EXPECT_TRUE(writer.values.empty());
  EXPECT_EQ(log.count(LogLevel::Info, "NCCL_TOPO_FILE=/opt/topo/azure-ndv5.xml"), 1) << log.all();
}

TEST_F(ProvideTopologyFile, OpenFileBehindProcFdIsKept) {
  // `NCCL_TOPO_FILE=/proc/self/fd/3 app 3<topo.xml`: a user's redirect, not a stale number.
  const int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  run({{"NCCL_TOPO_FILE", path}}, flatVm());
  close(fd);
  EXPECT_EQ(outcome.kind, Kind::UserFileKept);
  EXPECT_EQ(detections, 0);
}

TEST_F(ProvideTopologyFile, ClosedProcFdIsReplaced) {
  const int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  close(fd);  // the number is free now, as in a child that did not inherit the descriptor
  const std::string stale = "/proc/self/fd/" + std::to_string(fd);
  run({{"NCCL_TOPO_FILE", stale}}, flatVm());
  EXPECT_EQ(outcome.kind, Kind::Written) << log.all();
  EXPECT_EQ(detections, 1);
  EXPECT_EQ(log.count(LogLevel::Info, "replacing it"), 1) << log.all();
}

TEST_F(ProvideTopologyFile, OurOwnFileFromAnEarlierLoadIsKept) {
  run({}, flatVm());
  ASSERT_EQ(outcome.kind, Kind::Written);
  const TopoFileOutcome first = outcome;
  RecordingWriter again;
  RecordingLogger log2;
  const TopoFileOutcome second =
      provideTopologyFile(mapEnv({{"NCCL_TOPO_FILE", first.path}}), log2, again,
                          [] { return Expected<Machine>(flatVm()); });
  EXPECT_EQ(second.kind, Kind::UserFileKept);
  EXPECT_EQ(log2.count(LogLevel::Info, "nccl-pilot topology file already given"), 1) << log2.all();
}

TEST_F(ProvideTopologyFile, NoGpuWritesNothing) {
  Machine cpuOnly = flatVm();
  cpuOnly.gpus.clear();
  run({}, cpuOnly);
  EXPECT_EQ(outcome.kind, Kind::NoGpu);
  EXPECT_TRUE(writer.values.empty());
  EXPECT_EQ(log.count(LogLevel::Warn), 0) << log.all();
  EXPECT_EQ(log.count(LogLevel::Info, "no GPU found (test machine, 1 NIC(s)); no topology file"), 1)
      << log.all();
}

TEST_F(ProvideTopologyFile, DetectionFailureIsOneWarn) {
  run({}, Error{"cannot open /x.xml"});
  EXPECT_EQ(outcome.kind, Kind::Failed);
  EXPECT_TRUE(writer.values.empty());
  ASSERT_EQ(log.count(LogLevel::Warn), 1) << log.all();
  EXPECT_EQ(log.count(LogLevel::Warn,
                      "topology detection failed: cannot open /x.xml; NCCL detects the machine "
                      "on its own"),
            1)
      << log.all();
}

TEST_F(ProvideTopologyFile, WriterFailureIsOneWarnAndClosesTheFile) {
  writer.fail = true;
  run({}, flatVm());
  EXPECT_EQ(outcome.kind, Kind::Failed);
  EXPECT_EQ(outcome.fd, -1);
  EXPECT_EQ(log.count(LogLevel::Warn), 1) << log.all();
  EXPECT_EQ(log.count(LogLevel::Warn, "cannot set NCCL_TOPO_FILE"), 1) << log.all();
}

TEST_F(ProvideTopologyFile, XmlWriterRefusalIsOneWarn) {
  Machine big = flatVm();
  // More GPUs than an NCCL file may hold nodes: the writer refuses, NCCL detects on its own.
  for (int i = 0; i < 300; ++i) {
    PciNode node;
    node.kind = PciKind::Endpoint;
    node.busId = BusId{0, static_cast<uint8_t>(0x10 + i / 8), static_cast<uint8_t>(i % 8), 0};
    node.parent = 0;
    node.numaNode = 0;
    node.classCode = 0x030200;
    node.linkSpeed = "16.0 GT/s PCIe";
    node.linkWidth = 16;
    big.pci.push_back(node);
    Gpu gpu;
    gpu.pci = static_cast<int>(big.pci.size()) - 1;
    big.gpus.push_back(gpu);
  }
  run({}, big);
  EXPECT_EQ(outcome.kind, Kind::Failed);
  EXPECT_TRUE(writer.values.empty());
  EXPECT_EQ(log.count(LogLevel::Warn), 1) << log.all();
  EXPECT_EQ(log.count(LogLevel::Warn, "cannot write the NCCL topology file"), 1) << log.all();
}

TEST_F(ProvideTopologyFile, DumpIsACopyAndItsFailureOnlyAWarn) {
  char dir[] = "/tmp/pilot-topo-dump-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string dump = std::string(dir) + "/copy.xml";
  run({{"NCCL_PILOT_TOPO_DUMP", dump}}, flatVm());
  ASSERT_EQ(outcome.kind, Kind::Written);
  EXPECT_EQ(readAll(dump), readAll(outcome.path));
  EXPECT_EQ(log.count(LogLevel::Warn), 0) << log.all();
  unlink(dump.c_str());
  rmdir(dir);

  close(outcome.fd);
  outcome = {};
  log.lines.clear();
  run({{"NCCL_PILOT_TOPO_DUMP", std::string(dir) + "/gone/copy.xml"}}, flatVm());
  EXPECT_EQ(outcome.kind, Kind::Written);
  EXPECT_EQ(log.count(LogLevel::Warn, "cannot write NCCL_PILOT_TOPO_DUMP="), 1) << log.all();
}

TEST(DetectOptionsFromEnv, ReadsRootAndXml) {
  DetectOptions none = detectOptionsFromEnv(mapEnv({}));
  EXPECT_EQ(none.sysfsRoot, "/");
  EXPECT_EQ(none.hwlocXml, "");
  DetectOptions set = detectOptionsFromEnv(
      mapEnv({{"NCCL_PILOT_SYSFS_ROOT", " /rec/a "}, {"NCCL_PILOT_HWLOC_XML", "/x.xml"}}));
  EXPECT_EQ(set.sysfsRoot, "/rec/a");
  EXPECT_EQ(set.hwlocXml, "/x.xml");
}

}  // namespace
}  // namespace pilot::topology
