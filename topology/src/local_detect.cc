// The detection the plugin and `nccl-pilot topo` share: every source that is present, with a
// note for each one that is not, and a pair's path type looked up again after the repair.
#include <algorithm>

#include "pilot/topology/topo_file.h"

namespace pilot::topology {

DetectOptions detectOptionsFromEnv(const EnvLookup& env) {
  DetectOptions options;
  if (auto root = readText(env, setting::kSysfsRoot)) options.sysfsRoot = *root;
  if (auto xml = readText(env, setting::kHwlocXml)) options.hwlocXml = *xml;
  return options;
}

Expected<Machine> detectLocalMachine(const DetectOptions& options) {
  std::string whyNoHwloc;
  std::shared_ptr<const HwlocLibrary> hwloc;
  if (options.useHwloc) hwloc = loadHwlocDynamic(&whyNoHwloc);
  Expected<Machine> detected = detectMachine(options, hwloc);
  if (!detected.ok()) return detected;
  Machine& machine = detected.value();
  if (options.useHwloc && hwloc == nullptr && !whyNoHwloc.empty()) {
    machine.notes.push_back("hwloc not used: " + whyNoHwloc);
  }

  // NVML and libibverbs describe the machine we run on. Mixing them into a recorded machine
  // (an hwloc XML export, a replayed sysfs tree) would attach this host's facts to another's.
  const bool live =
      options.hwlocXml.empty() && (options.sysfsRoot.empty() || options.sysfsRoot == "/");
  if (!live) {
    machine.notes.push_back(
        "NVML and libibverbs not consulted: the machine is a recording, not this host");
    return detected;
  }
  std::string whyNoNvml;
  if (std::unique_ptr<GpuInfoSource> nvml = loadNvml(&whyNoNvml)) {
    nvml->enrich(machine);
  } else if (!whyNoNvml.empty()) {
    machine.notes.push_back("NVML not used: " + whyNoNvml);
  }
  std::string whyNoVerbs;
  checkVerbsVisibility(machine, &whyNoVerbs);
  if (!whyNoVerbs.empty()) machine.notes.push_back("libibverbs not used: " + whyNoVerbs);
  return detected;
}

namespace {

int findPciByBusId(const Machine& m, const PciNode& node) {
  if (!node.busId) return -1;
  for (size_t i = 0; i < m.pci.size(); ++i) {
    if (m.pci[i].busId && *m.pci[i].busId == *node.busId) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

PathType pairPathOn(const Machine& before, const GpuNicPair& pair, const Machine& after) {
  if (pair.gpu < 0 || static_cast<size_t>(pair.gpu) >= before.gpus.size()) return pair.path;
  const int gpuPci = before.gpus[static_cast<size_t>(pair.gpu)].pci;
  if (gpuPci < 0) return pair.path;
  const int gpuAfter = findPciByBusId(after, before.pci.at(static_cast<size_t>(gpuPci)));
  if (gpuAfter < 0) return pair.path;
  bool any = false;
  PathType worst = PathType::PIX;
  for (int nic : pair.nics) {
    if (nic < 0 || static_cast<size_t>(nic) >= before.nics.size()) continue;
    const int nicPci = before.nics[static_cast<size_t>(nic)].pci;
    if (nicPci < 0) continue;
    const int nicAfter = findPciByBusId(after, before.pci.at(static_cast<size_t>(nicPci)));
    if (nicAfter < 0) continue;
    worst = std::max(worst, classifyPath(after, gpuAfter, nicAfter));
    any = true;
  }
  return any ? worst : pair.path;
}

}  // namespace pilot::topology
