#include "machines.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

namespace pilot::topology::test {
namespace {

BusId bus(const std::string& text) {
  std::optional<BusId> b = BusId::parse(text);
  EXPECT_TRUE(b.has_value()) << text;
  return b.value_or(BusId{});
}

}  // namespace

MachineBuilder::MachineBuilder(std::string source) {
  m_.source = std::move(source);
}

MachineBuilder& MachineBuilder::cpu(int numa, const std::string& affinity,
                                    const std::string& vendor, int family, int model) {
  CpuNode c;
  c.numaId = numa;
  c.arch = "x86_64";
  c.vendor = vendor;
  c.familyId = family;
  c.modelId = model;
  c.affinity = affinity;
  m_.cpus.push_back(c);
  return *this;
}

int MachineBuilder::add(PciNode node) {
  if (node.parent >= 0 && node.numaNode < 0) node.numaNode = m_.pci[node.parent].numaNode;
  m_.pci.push_back(std::move(node));
  return static_cast<int>(m_.pci.size()) - 1;
}

int MachineBuilder::hostBridge(int numa) {
  PciNode n;
  n.kind = PciKind::HostBridge;
  n.numaNode = numa;
  return add(n);
}

int MachineBuilder::rootPort(int parent, const std::string& b) {
  PciNode n;
  n.kind = PciKind::RootPort;
  n.parent = parent;
  n.busId = bus(b);
  n.classCode = 0x060400;
  n.vendor = 0x8086;
  n.device = 0x352a;
  n.linkSpeed = "16.0 GT/s PCIe";
  n.linkWidth = 16;
  return add(n);
}

int MachineBuilder::bridge(int parent, const std::string& b, const std::string& speed, int width) {
  PciNode n;
  n.kind = PciKind::Switch;
  n.parent = parent;
  n.busId = bus(b);
  n.classCode = 0x060400;
  n.vendor = 0x1000;  // Broadcom PEX, as on JUWELS Booster and DGX A100
  n.device = 0xc010;
  n.subsystemVendor = 0x1000;
  n.subsystemDevice = 0x100b;
  n.linkSpeed = speed;
  n.linkWidth = width;
  return add(n);
}

int MachineBuilder::endpoint(int parent, const std::string& b, uint32_t classCode,
                             const std::string& speed, int width) {
  PciNode n;
  n.parent = parent;
  n.busId = bus(b);
  n.classCode = classCode;
  n.linkSpeed = speed;
  n.linkWidth = width;
  return add(n);
}

int MachineBuilder::gpu(int parent, const std::string& b, const std::string& speed, int width) {
  const int i = endpoint(parent, b, 0x030200, speed, width);
  m_.pci[i].vendor = 0x10de;  // A100 SXM4
  m_.pci[i].device = 0x20b0;
  m_.pci[i].subsystemVendor = 0x10de;
  m_.pci[i].subsystemDevice = 0x134f;
  m_.gpus.push_back(Gpu{i, 80, "A100-SXM4-40GB", {}});
  return i;
}

int MachineBuilder::nic(int parent, const std::string& b, const std::string& name, bool rdma,
                        const std::string& speed, int width) {
  const int i = endpoint(parent, b, rdma ? 0x020700 : 0x020000, speed, width);
  m_.pci[i].vendor = rdma ? 0x15b3 : 0x8086;  // ConnectX-6 HDR, or an Intel i350 port
  m_.pci[i].device = rdma ? 0x101b : 0x1521;
  Nic n;
  n.pci = i;
  n.name = name;
  n.rdma = rdma;
  n.state = "ACTIVE";
  n.linkLayer = rdma ? LinkLayer::InfiniBand : LinkLayer::Ethernet;
  n.speedMbps = rdma ? 200000 : 1000;
  m_.nics.push_back(n);
  return i;
}

Machine MachineBuilder::build() const {
  Machine m = m_;
  auto busOf = [&](int pci) { return *m.pci[pci].busId; };
  std::stable_sort(m.gpus.begin(), m.gpus.end(),
                   [&](const Gpu& a, const Gpu& b) { return busOf(a.pci) < busOf(b.pci); });
  std::stable_sort(m.nics.begin(), m.nics.end(), [&](const Nic& a, const Nic& b) {
    if (busOf(a.pci) != busOf(b.pci)) return busOf(a.pci) < busOf(b.pci);
    return a.name < b.name;
  });
  return m;
}

Machine bareMetalSwitches() {
  MachineBuilder b("hand-built: bare metal, 2 sockets, GPU + NIC per PCIe switch");
  b.cpu(0, "00000000,ffffffff").cpu(1, "ffffffff,00000000");
  // Root port -> switch (upstream port, two downstream ports) -> GPU and NIC; buses x1..x4.
  auto group = [&](int hb, const std::string& rootPort, char bus, const std::string& nic) {
    const std::string pre = std::string("0000:") + bus;
    const int usp = b.bridge(b.rootPort(hb, rootPort), pre + "1:00.0");
    b.gpu(b.bridge(usp, pre + "2:00.0"), pre + "3:00.0");
    b.nic(b.bridge(usp, pre + "2:01.0"), pre + "4:00.0", nic);
  };
  const int hb0 = b.hostBridge(0);
  group(hb0, "0000:00:01.0", '0', "mlx5_0");
  group(hb0, "0000:00:03.0", '1', "mlx5_1");
  b.endpoint(b.rootPort(hb0, "0000:00:1c.0"), "0000:20:00.0", 0x010802);  // NVMe: not written
  b.nic(b.rootPort(hb0, "0000:00:1d.0"), "0000:21:00.0", "eno1", false, "5.0 GT/s PCIe", 4);
  const int hb1 = b.hostBridge(1);
  group(hb1, "0000:80:01.0", '8', "mlx5_2");
  group(hb1, "0000:80:03.0", '9', "mlx5_3");
  return b.build();
}

Machine flatKvm() {
  MachineBuilder b("hand-built: KVM q35 guest, every device behind its own root port");
  b.cpu(0, "0000ffff");
  const int hb = b.hostBridge(0);
  b.gpu(b.rootPort(hb, "0000:00:02.0"), "0000:01:00.0");
  b.gpu(b.rootPort(hb, "0000:00:02.1"), "0000:02:00.0");
  b.nic(b.rootPort(hb, "0000:00:02.2"), "0000:03:00.0", "mlx5_0");
  b.nic(b.rootPort(hb, "0000:00:02.3"), "0000:04:00.0", "mlx5_1");
  b.nic(hb, "0000:00:03.0", "eth0", false, "", 0);  // virtio-net on the root bus
  return b.build();
}

Machine flatRootBusShared() {
  MachineBuilder b("hand-built: guest without root ports or NUMA, 2 GPUs and 1 NIC");
  b.cpu(-1);
  const int hb = b.hostBridge(-1);
  b.gpu(hb, "0000:00:05.0");
  b.gpu(hb, "0000:00:06.0");
  b.nic(hb, "0000:00:07.0", "mlx5_0");
  return b.build();
}

Machine rails() {
  MachineBuilder b("hand-built: 2 switches, each 1 GPU + 2 NICs (rails)");
  b.cpu(0, "ffffffff");
  const std::string gen5 = "32.0 GT/s PCIe";
  const int hb = b.hostBridge(0);
  auto group = [&](const std::string& rootPort, char bus, const std::string& nicA,
                   const std::string& nicB) {
    const std::string pre = std::string("0000:") + bus;
    const int usp = b.bridge(b.rootPort(hb, rootPort), pre + "1:00.0", gen5);
    b.gpu(b.bridge(usp, pre + "2:00.0", gen5), pre + "3:00.0", gen5);
    b.nic(b.bridge(usp, pre + "2:01.0", gen5), pre + "4:00.0", nicA, true, gen5);
    b.nic(b.bridge(usp, pre + "2:02.0", gen5), pre + "5:00.0", nicB, true, gen5);
  };
  group("0000:00:01.0", '0', "mlx5_0", "mlx5_1");
  group("0000:00:02.0", '1', "mlx5_2", "mlx5_3");
  return b.build();
}

Machine sharing() {
  MachineBuilder b("hand-built: 4 GPUs and 1 NIC behind one switch");
  b.cpu(0, "ffffffff");
  const int usp = b.bridge(b.rootPort(b.hostBridge(0), "0000:00:01.0"), "0000:01:00.0");
  for (int g = 0; g < 4; ++g) {
    b.gpu(b.bridge(usp, "0000:02:0" + std::to_string(g) + ".0"),
          "0000:0" + std::to_string(3 + g) + ":00.0");
  }
  b.nic(b.bridge(usp, "0000:02:04.0"), "0000:07:00.0", "mlx5_0");
  return b.build();
}

Machine crossSocket() {
  MachineBuilder b("hand-built: NIC on socket 0 only, GPUs on both");
  b.cpu(0, "00000000,ffffffff").cpu(1, "ffffffff,00000000");
  const int usp0 = b.bridge(b.rootPort(b.hostBridge(0), "0000:00:01.0"), "0000:01:00.0");
  b.gpu(b.bridge(usp0, "0000:02:00.0"), "0000:03:00.0");
  b.nic(b.bridge(usp0, "0000:02:01.0"), "0000:04:00.0", "mlx5_0");
  const int usp1 = b.bridge(b.rootPort(b.hostBridge(1), "0000:80:01.0"), "0000:81:00.0");
  b.gpu(b.bridge(usp1, "0000:82:00.0"), "0000:83:00.0");
  return b.build();
}

Machine noNics() {
  MachineBuilder b("hand-built: 2 GPUs, no NIC");
  b.cpu(0, "ffffffff");
  const int usp = b.bridge(b.rootPort(b.hostBridge(0), "0000:00:01.0"), "0000:01:00.0");
  b.gpu(b.bridge(usp, "0000:02:00.0"), "0000:03:00.0");
  b.gpu(b.bridge(usp, "0000:02:01.0"), "0000:04:00.0");
  return b.build();
}

Machine dualPortNic() {
  MachineBuilder b("hand-built: dual-port CX-6 Dx (RoCE) next to a GPU");
  b.cpu(0, "ffffffff", "AuthenticAMD", 25, 1);
  const int usp = b.bridge(b.rootPort(b.hostBridge(0), "0000:00:01.1"), "0000:01:00.0");
  b.gpu(b.bridge(usp, "0000:02:00.0"), "0000:03:00.0");
  const int dsp = b.bridge(usp, "0000:02:01.0");
  // Listed port 2 first: the writer must not care about the order detection found them in.
  for (const char* port : {"1", "0"}) {
    b.nic(dsp, std::string("0000:04:00.") + port, std::string("mlx5_") + port);
    b.last().classCode = 0x020000;
    b.last().device = 0x101d;
  }
  Machine m = b.build();
  for (Nic& n : m.nics) n.linkLayer = LinkLayer::Ethernet;
  return m;
}

Machine unknownLinks() {
  MachineBuilder b("hand-built: link speed and width unknown on some nodes");
  b.cpu(0, "ffffffff");
  const int rp = b.rootPort(b.hostBridge(0), "0000:00:01.0");
  b.last().linkSpeed = "";
  const int usp = b.bridge(rp, "0000:01:00.0", "", 0);
  b.gpu(b.bridge(usp, "0000:02:00.0", "32.0 GT/s PCIe", 16), "0000:03:00.0", "", 0);
  b.nic(b.bridge(usp, "0000:02:01.0", "", 0), "0000:04:00.0", "mlx5_0", true, "64 GT/s", 8);
  return b.build();
}

Machine manyGpus(int count) {
  MachineBuilder b("hand-built: " + std::to_string(count) + " GPUs on one root bus");
  b.cpu(0, "ffffffff");
  const int hb = b.hostBridge(0);
  for (int i = 0; i < count; ++i) {
    char text[32];
    std::snprintf(text, sizeof text, "0000:%02x:%02x.0", (1 + i / 32) & 0xff, i % 32);
    b.gpu(hb, text);
  }
  return b.build();
}

std::vector<std::pair<std::string, Machine>> handBuiltMachines() {
  return {{"bare-metal-switches", bareMetalSwitches()},
          {"flat-kvm", flatKvm()},
          {"flat-root-bus-shared", flatRootBusShared()},
          {"rails", rails()},
          {"sharing", sharing()},
          {"cross-socket", crossSocket()},
          {"no-nics", noNics()},
          {"dual-port-nic", dualPortNic()},
          {"unknown-links", unknownLinks()}};
}

}  // namespace pilot::topology::test
