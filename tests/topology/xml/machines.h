// Hand-built machines for the pairing, repair and writer tests: each mirrors a real shape (bare
// metal with PCIe switches, a flat KVM guest, rails, a shared NIC, ...), built the way detection
// builds them: host bridge -> root port -> switch upstream port -> downstream port -> device.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pilot/topology/model.h"

namespace pilot::topology::test {

class MachineBuilder {
 public:
  explicit MachineBuilder(std::string source);
  /// A NUMA node with an x86 CPU (SPR by default).
  MachineBuilder& cpu(int numa, const std::string& affinity = "",
                      const std::string& vendor = "GenuineIntel", int family = 6, int model = 143);
  int hostBridge(int numa);
  int rootPort(int parent, const std::string& bus);
  /// One bridge of a switch (an upstream or a downstream port).
  int bridge(int parent, const std::string& bus, const std::string& speed = "16.0 GT/s PCIe",
             int width = 16);
  int endpoint(int parent, const std::string& bus, uint32_t classCode,
               const std::string& speed = "16.0 GT/s PCIe", int width = 16);
  int gpu(int parent, const std::string& bus, const std::string& speed = "16.0 GT/s PCIe",
          int width = 16);
  int nic(int parent, const std::string& bus, const std::string& name, bool rdma = true,
          const std::string& speed = "16.0 GT/s PCIe", int width = 16);
  /// The last added node, for tweaks.
  PciNode& last() { return m_.pci.back(); }
  /// gpus and nics in the model's order (bus id, then name).
  Machine build() const;

 private:
  int add(PciNode node);
  Machine m_;
};

/// Every hand-built machine the golden tests record, by name.
std::vector<std::pair<std::string, Machine>> handBuiltMachines();

Machine bareMetalSwitches();  ///< 2 sockets, 4x (GPU + HDR NIC behind one switch): PIX
Machine flatKvm();            ///< q35 guest: 2 GPUs + 2 NICs, each behind its own root port: PHB
Machine flatRootBusShared();  ///< guest without root ports or NUMA: 2 GPUs share 1 NIC
Machine rails();              ///< 2 switches, each 1 GPU + 2 NICs
Machine sharing();            ///< 4 GPUs and 1 NIC behind one switch
Machine crossSocket();        ///< the only NIC is on the other socket for GPU 1: SYS
Machine noNics();             ///< GPUs only
Machine dualPortNic();        ///< a CX-6 Dx with ports at .0 and .1 next to a GPU
Machine unknownLinks();       ///< link speed/width unknown on some nodes
Machine manyGpus(int count);  ///< `count` GPUs on one root bus (node limit tests)

}  // namespace pilot::topology::test
