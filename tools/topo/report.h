// What `nccl-pilot topo` shows: the machine as NCCL will see it (after the flat-VM repair when
// one happened) as an `nvidia-smi topo -m` style matrix with its legends, the GPU-NIC pairs
// with their path before and after repair, the repair actions and detection notes; or the same
// facts as one JSON document.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pilot/topology/affinity.h"
#include "pilot/topology/model.h"

namespace pilot::cli {

struct TopoView {
  topology::Machine detected;
  std::vector<topology::GpuNicPair> pairs;       ///< made on `detected`
  std::optional<topology::RepairResult> repair;  ///< absent when the policy says no repair
  std::string repairWhy;                         ///< why the repair ran or did not

  /// The machine written for NCCL: the repaired copy when the repair changed anything.
  const topology::Machine& forNccl() const;
  bool repaired() const { return repair && repair->repaired; }
};

/// Pairs the detected machine and repairs it when the policy allows (topology::shouldRepair).
TopoView buildTopoView(topology::Machine detected, topology::RepairPolicy policy);

/// Linux cpumap ("ffffffff,00000000", most significant word first) as a cpulist ("32-63"),
/// the way nvidia-smi prints CPU affinity. "N/A" when empty or malformed.
std::string cpumapToList(const std::string& cpumap);

/// One matrix cell between two GPUs: "NV#" when NVLink joins them, else the PCIe path type.
std::string gpuGpuCell(const topology::Machine& m, int gpuA, int gpuB);

void printTopoText(std::ostream& out, const TopoView& view);
nlohmann::ordered_json topoJson(const TopoView& view);

}  // namespace pilot::cli
