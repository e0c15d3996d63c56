// Pairing GPUs with NICs by PCIe distance, and the flat-VM repair.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/topology/model.h"

namespace pilot::topology {

struct GpuNicPair {
  int gpu = -1;           ///< index into Machine::gpus
  std::vector<int> nics;  ///< indices into Machine::nics; several = rails
  PathType path = PathType::SYS;
  std::string why;  ///< one line: "same PCIe switch 0000:07:00.0", "shares NIC with ..."
};

/// Deterministic: each GPU gets the NIC(s) at its best path type; GPUs with the same best set
/// split it (more NICs than GPUs -> rails; fewer -> GPUs share, contiguously, in bus-id order).
/// Only NICs that can carry NCCL traffic are considered (RDMA devices, else Ethernet with a
/// PCI device); a machine without NICs gets no pairs.
std::vector<GpuNicPair> pairGpusWithNics(const Machine& machine);

/// The NICs pairing considers (indices into Machine::nics, sorted by bus id then name): RDMA
/// devices with a PCI device if there are any, else the other NICs with a PCI device; a NIC
/// whose state is "DOWN" never.
std::vector<int> eligibleNics(const Machine& machine);

/// One line per pair, "GPU 0 0000:03:00.0 -> mlx5_0 (0000:04:00.0) | PIX: ...", or a single
/// line saying there are none. For `nccl-pilot topo` and the golden files.
std::string describePairs(const Machine& machine, const std::vector<GpuNicPair>& pairs);

struct RepairResult {
  Machine machine;  ///< with synthetic switches inserted
  bool repaired = false;
  std::vector<std::string> actions;  ///< one line per synthetic switch
};

/// Flat-VM repair: when a GPU and its paired NIC (same NUMA node) reach each other only through
/// root ports or a host bridge (no real switch), insert a synthetic switch (class 0x060400, bus
/// id ffff:ff:NN.0, which exists on no machine) holding both, as Azure's files do, so NCCL sees
/// them as PIX and enables GPU Direct RDMA. Pairs already PIX/PXB are left alone. GPUs sharing
/// a NIC go under one switch with it; all functions of a NIC device move together. The pairs'
/// `path` fields describe the input: call pairGpusWithNics on the result for the new ones.
/// When repairFlatTopology runs: Auto = only on a virtual machine (on bare metal a GPU and a
/// NIC meeting at the CPU really are PHB apart, and NCCL is right to keep GPU Direct RDMA off).
enum class RepairPolicy { Auto, On, Off };
/// "auto", "on"/"1"/"true"/"yes", "off"/"0"/"false"/"no" (case-insensitive).
std::optional<RepairPolicy> parseRepairPolicy(std::string_view text);

/// Why the machine looks virtual: detection's evidence (Machine::hypervisor), or bridges only
/// hypervisors emulate (QEMU/Red Hat 1b36, Microsoft 1414, VMware 15ad, Xen 5853). "" if none.
std::string virtualizationEvidence(const Machine& machine);

/// Whether the policy lets the repair run on this machine; *why gets one line either way.
bool shouldRepair(RepairPolicy policy, const Machine& machine, std::string* why);

RepairResult repairFlatTopology(const Machine& machine, const std::vector<GpuNicPair>& pairs);

}  // namespace pilot::topology
