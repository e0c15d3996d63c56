// Where a Machine comes from. Every source sits behind an interface so tests replay recorded
// machines: hwloc (live, or from an `lstopo --of xml` export), sysfs under a root directory,
// libibverbs and NVML loaded with dlopen (the plugin must load in images without them).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pilot/core/result.h"
#include "pilot/topology/model.h"

namespace pilot::topology {

/// All /sys and /proc reads go through this. root "/" in production, a recorded tree in tests.
class SysfsRoot {
 public:
  explicit SysfsRoot(std::string root) : root_(std::move(root)) {}
  const std::string& root() const { return root_; }
  /// Path under the root: path("/sys/bus/pci") -> "<root>/sys/bus/pci".
  std::string path(const std::string& absolute) const;
  /// First line, trimmed; nullopt if unreadable. Reads at most 64 KiB.
  std::optional<std::string> readLine(const std::string& absolute) const;
  std::optional<std::string> readAll(const std::string& absolute, size_t limit = 1 << 20) const;
  /// Entry names of a directory, sorted; empty if unreadable.
  std::vector<std::string> list(const std::string& absolute) const;
  /// Symlinks resolved, returned as an absolute path *inside* the root ("/sys/devices/...").
  std::optional<std::string> resolve(const std::string& absolute) const;

 private:
  std::string root_;
};

/// hwloc's entry points we use, filled from a dlopen'ed libhwloc.so.15 (nothing links hwloc, so
/// the plugin loads where it is missing). Opaque here; defined in topology/src.
struct HwlocLibrary;
/// nullptr (and *whyNot set) when libhwloc.so.15 is missing or is not a 2.x API.
std::shared_ptr<const HwlocLibrary> loadHwlocDynamic(std::string* whyNot);

struct DetectOptions {
  std::string sysfsRoot = "/";  ///< for sysfs facts (link speed/width, IB ports, cpuinfo)
  std::string hwlocXml;         ///< non-empty: read this hwloc XML export instead of the machine
  bool useHwloc = true;         ///< false: sysfs only
};

/// Detects the machine: hwloc for the tree (live or XML) when available, sysfs for facts hwloc
/// does not carry (max link speed/width, RDMA port state), else sysfs alone. Optional libraries
/// missing is a note, not an error; an unusable hwloc XML file is an error naming the file.
///  - hwlocXml set: that file through hwloc, nothing from sysfs (it describes another machine);
///    link speed/width are estimated from hwloc's link rate (a note says so).
///  - else, hwloc given, useHwloc and sysfsRoot "/": hwloc live, completed from sysfs.
///  - else (no hwloc, or a recorded tree as sysfsRoot): detectFromSysfs, with a note saying why.
/// NVML (loadNvml()->enrich) and the verbs cross-check (checkVerbsVisibility) are separate steps.
Expected<Machine> detectMachine(const DetectOptions& options,
                                std::shared_ptr<const HwlocLibrary> hwloc);

/// From sysfs alone (the fallback, and the way tests replay recorded trees).
Expected<Machine> detectFromSysfs(const SysfsRoot& sysfs);

/// GPU facts only NVML knows (sm, name, NVLink peers). Implementations: dlopen'ed NVML, or a
/// fake in tests. enrich() fills what it can and adds a note for each GPU NVML does not know.
class GpuInfoSource {
 public:
  virtual ~GpuInfoSource() = default;
  virtual void enrich(Machine& machine) const = 0;
};
/// nullptr (and *whyNot set) when libnvidia-ml.so.1 is missing or nvmlInit_v2 fails.
std::unique_ptr<GpuInfoSource> loadNvml(std::string* whyNot);

/// Cross-checks RDMA devices found in sysfs against what userspace libibverbs can list: a
/// device the kernel has but verbs cannot see (missing provider in a container) gets a note.
/// *whyNot says why libibverbs could not be asked (a note too, when there are RDMA devices).
void checkVerbsVisibility(Machine& machine, std::string* whyNot);
/// The same check against a given device list (what ibv_get_device_list named).
void checkVerbsVisibility(Machine& machine, const std::vector<std::string>& verbsDevices);

}  // namespace pilot::topology
