// What every check shares: the machine detected once from the SysfsRoot, its GPU<->NIC pairs,
// the RDMA ports and the fabric NCCL will use (topology/fabric.h), the environment and probes,
// and where findings, notes and fingerprint facts go. Not public API (doctor.h is).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pilot/doctor/doctor.h"
#include "pilot/topology/affinity.h"
#include "pilot/topology/fabric.h"
#include "pilot/topology/model.h"
#include "pilot/topology/sources.h"

namespace pilot::doctor::detail {

struct Context {
  Context(const DoctorInputs& in, DoctorReport& out);

  const DoctorInputs& inputs;
  topology::SysfsRoot sysfs;
  EnvLookup env;
  std::optional<topology::Machine> machine;  ///< nullopt when sysfs had no PCI tree
  std::string detectionError;
  std::vector<topology::GpuNicPair> pairs;
  std::vector<topology::RdmaPort> ports;
  topology::FabricChoice fabric;
  std::string virtualization;  ///< why this looks like a VM; "" on bare metal

  void add(const char* check, Verdict verdict, std::string subject, std::string evidence,
           std::string fix = "");
  void note(std::string line) { report.notes.push_back(std::move(line)); }
  void fact(const std::string& key, std::string value) { report.facts[key] = std::move(value); }

  /// "GPU0 0000:18:00.0", "mlx5_0 (0000:19:00.0)", "0000:17:01.0".
  std::string gpuName(int gpu) const;
  std::string nicName(int nic) const;
  std::string busOf(int pci) const;
  /// The sysfs path of a PCI node's function as the kernel names it (/sys/bus/pci/devices/BDF).
  std::string pciSysfsPath(int pci) const;

  DoctorReport& report;
};

// ---- PCI paths (paths.cc) ----

/// The bridge's role, from its place in the tree: root ports sit under a host bridge, and below
/// them switch upstream and downstream ports alternate (NCCL's own walk keeps every second one).
enum class BridgeRole { None, RootPort, SwitchUpstream, SwitchDownstream };
BridgeRole bridgeRole(const topology::Machine& m, int pci);
const char* bridgeRoleName(BridgeRole role);

/// The bridges whose ACS decides where peer-to-peer traffic between two PCI nodes goes: those
/// strictly below the node where their paths meet (a switch's internal bus does not pass its
/// upstream port's ACS logic), every bridge above both when they meet at a host bridge, none
/// when they sit under different host bridges (the traffic crosses the CPUs anyway).
std::vector<int> bridgesBetween(const topology::Machine& m, int pciA, int pciB);

/// A bridge NCCL's traffic crosses, with the device pairs whose path it lies on.
struct PathBridge {
  int pci = -1;
  std::vector<std::string> paths;  ///< "GPU0 0000:18:00.0 <-> mlx5_0 (0000:19:00.0)"
  std::vector<int> nics;           ///< the NICs (Machine::nics) at the end of those paths
};
/// Every bridge between a GPU and its paired NIC(s), and between GPUs that share a PCIe switch,
/// in bus-id order.
std::vector<PathBridge> bridgesOnNcclPaths(const Context& ctx);

// ---- the checks, in checkIds() order ----
void checkPcieAcs(Context& ctx);      // pcie_checks.cc
void checkPcieLink(Context& ctx);     // pcie_checks.cc
void checkIommu(Context& ctx);        // iommu_gdr_checks.cc
void checkGdr(Context& ctx);          // iommu_gdr_checks.cc
void checkRdmaPorts(Context& ctx);    // rdma_checks.cc
void checkRoce(Context& ctx);         // rdma_checks.cc
void checkNuma(Context& ctx);         // host_checks.cc
void checkMemlock(Context& ctx);      // host_checks.cc
void checkCpuGovernor(Context& ctx);  // host_checks.cc
void checkNccl(Context& ctx);         // nccl_check.cc
void checkEnv(Context& ctx);          // env_check.cc

}  // namespace pilot::doctor::detail
