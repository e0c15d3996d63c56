// Handing our topology file to NCCL: detect once per process, write the XML into a memfd and
// point NCCL_TOPO_FILE at /proc/self/fd/N before NCCL reads it — unless the user set
// NCCL_TOPO_FILE, or NCCL_PILOT_TOPO=0. Never fails: a problem is one WARN and NCCL detects.
#pragma once

#include <functional>
#include <string>

#include "pilot/core/config.h"
#include "pilot/core/log.h"
#include "pilot/topology/affinity.h"
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
  /// NoGpu: detection found no GPU, so a file could only repeat (or get wrong) what NCCL
  /// finds itself; nothing is written.
  enum class Kind { Written, UserFileKept, Disabled, NoGpu, Failed } kind = Kind::Failed;
  std::string path;     ///< "/proc/self/fd/N" when written; the user's path when kept
  std::string summary;  ///< the INFO/WARN line that was logged
  int fd = -1;          ///< the memfd when written; stays open for the life of the process
};

/// `detect` is injectable so tests run on recorded machines; production passes a function that
/// calls detectLocalMachine with the NCCL_PILOT_HWLOC_XML / sysfs options.
using DetectFn = std::function<Expected<Machine>()>;

/// NCCL_PILOT_TOPO=0 -> Disabled. NCCL_TOPO_FILE set -> UserFileKept (unless it is a dead
/// /proc/self/fd/N inherited from a parent, which is replaced). No GPU detected -> NoGpu
/// (INFO). Otherwise detect, pair, repair
/// (NCCL_PILOT_TOPO_REPAIR), write the XML into a memfd and set NCCL_TOPO_FILE through
/// `writer` -> Written; NCCL_PILOT_TOPO_DUMP gets a copy. Any problem -> Failed with one WARN.
/// Logs under the NET and GRAPH subsystems; never throws for a detection or I/O problem.
TopoFileOutcome provideTopologyFile(const EnvLookup& env, Logger& log, EnvironmentWriter& writer,
                                    const DetectFn& detect);

/// The options the plugin detects with: NCCL_PILOT_SYSFS_ROOT (default "/") and
/// NCCL_PILOT_HWLOC_XML.
DetectOptions detectOptionsFromEnv(const EnvLookup& env);

/// Detection as the plugin does it (and `nccl-pilot topo`): detectMachine with a dlopen'ed
/// hwloc, then NVML facts and the libibverbs cross-check. Those two ask the live machine, so
/// they run only when the options describe it (no hwloc XML, sysfs root "/"); what could not be
/// consulted becomes a note.
Expected<Machine> detectLocalMachine(const DetectOptions& options);

/// A pair's path type on `after`, a repaired copy of `before` (the machine the pair was made
/// on). The GPU and NICs are found again by bus id and name, so the repair may renumber nodes.
/// Several NICs: the worst of their paths.
PathType pairPathOn(const Machine& before, const GpuNicPair& pair, const Machine& after);

}  // namespace pilot::topology
