// Handing our topology file to NCCL: detect once per process, write the XML into a memfd and
// point NCCL_TOPO_FILE at /proc/self/fd/N before NCCL reads it — unless the user set
// NCCL_TOPO_FILE, or NCCL_PILOT_TOPO=0. Never fails: a problem is one WARN and NCCL detects.
#pragma once

#include <functional>
#include <string>

#include "pilot/core/config.h"
#include "pilot/core/log.h"
#include "pilot/topology/sources.h"

namespace pilot::topology {

/// Sets an environment variable for the whole process. Production swaps in a copied environ
/// array (other threads may be in getenv: setenv is not safe against them); tests record.
class EnvironmentWriter {
 public:
  virtual ~EnvironmentWriter() = default;
  virtual bool set(const char* name, const std::string& value) = 0;
};
EnvironmentWriter& processEnvironmentWriter();

struct TopoFileOutcome {
  enum class Kind { Written, UserFileKept, Disabled, Failed } kind = Kind::Failed;
  std::string path;     ///< "/proc/self/fd/N" when written; the user's path when kept
  std::string summary;  ///< the INFO/WARN line that was logged
};

/// `detect` is injectable so tests run on recorded machines; production passes a function that
/// calls detectMachine with the NCCL_PILOT_HWLOC_XML / sysfs options.
using DetectFn = std::function<Expected<Machine>()>;

TopoFileOutcome provideTopologyFile(const EnvLookup& env, Logger& log, EnvironmentWriter& writer,
                                    const DetectFn& detect);

}  // namespace pilot::topology
