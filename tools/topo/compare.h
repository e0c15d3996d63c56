// `nccl-pilot topo --compare DUMP.xml`: our machine against an NCCL topology dump
// (NCCL_TOPO_DUMP_FILE) or any NCCL XML: devices on one side only, and per GPU-NIC pair the
// PCIe path type each side implies (nvidia-smi vocabulary, classifyPath on both machines).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pilot/topology/affinity.h"
#include "pilot/topology/model.h"

namespace pilot::cli {

struct PairPaths {
  std::string gpu;  ///< bus id
  std::string nic;  ///< our name for it (the dump's when only the dump names it)
  topology::PathType ours = topology::PathType::SYS;
  topology::PathType theirs = topology::PathType::SYS;
  bool paired = false;  ///< one of our GPU-NIC pairs (the rest are listed only when they differ)
  bool differs() const { return ours != theirs; }
};

struct TopoComparison {
  std::vector<std::string> gpusOnlyOurs, gpusOnlyDump;  ///< bus ids
  std::vector<std::string> nicsOnlyOurs, nicsOnlyDump;  ///< "name (bus id)"
  std::vector<PairPaths> pairs;
  bool differs() const;
};

/// NICs are matched by the bus id NCCL uses for them (function 0: ports merged), else by name.
/// `pairs` are ours, made on `ours`.
TopoComparison compareMachines(const topology::Machine& ours,
                               const std::vector<topology::GpuNicPair>& pairs,
                               const topology::Machine& dump);

void printComparisonText(std::ostream& out, const TopoComparison& c, const std::string& dumpPath,
                         bool repaired);
nlohmann::ordered_json comparisonJson(const TopoComparison& c, const std::string& dumpPath);

}  // namespace pilot::cli
