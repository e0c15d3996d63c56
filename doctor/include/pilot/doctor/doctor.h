// `nccl-pilot doctor`: the checks that find what makes NCCL slow before a job runs. Everything
// is read through a SysfsRoot (/sys and /proc, a recorded tree in tests), an environment
// snapshot and a few injectable probes for what only a live process can learn (which NCCL the
// loader finds, what CUDA says about DMA-BUF), so tests replay recorded machines. Nothing here
// prints; the CLI (tools/doctor) renders the findings.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/core/config.h"
#include "pilot/doctor/finding.h"
#include "pilot/topology/model.h"
#include "pilot/topology/sources.h"

namespace pilot::doctor {

/// The stable check ids, in the order they run and are documented (docs/doctor.md).
const std::vector<std::string>& checkIds();

/// "pcie-acs,gdr" -> those ids, in checkIds() order. Unknown ids: nullopt, *unknown = the first.
std::optional<std::vector<std::string>> parseCheckList(std::string_view list, std::string* unknown);

/// The process environment as a snapshot: the env check lists every NCCL_* name, which an
/// EnvLookup cannot.
struct Environment {
  std::map<std::string, std::string> vars;
  static Environment fromProcess();
  EnvLookup lookup() const;
};

/// One libnccl.so.2 in sight.
struct NcclCopy {
  std::string path;     ///< the file (symlinks resolved)
  std::string version;  ///< "2.28.9"; "" unknown
  std::string how;  ///< how it was found: "dlopen(libnccl.so.2)", "Python wheel nvidia-nccl-cu12"
};

/// What one of NCCL_NET_PLUGIN / NCCL_TUNER_PLUGIN / NCCL_PROFILER_PLUGIN resolves to, by
/// NCCL's own name rules.
struct PluginResolution {
  std::string variable;              ///< "NCCL_NET_PLUGIN"
  std::optional<std::string> value;  ///< nullopt: unset
  bool disabled = false;             ///< "none"
  std::vector<std::string> tried;    ///< the names dlopen was given, in order
  std::string path;                  ///< the library that loaded; "" when none did
  std::string name;  ///< the plugin's name field ("Pilot"), when it exports a net plugin
  std::vector<int> netAbis, tunerAbis, profilerAbis;  ///< exported ncclXPlugin_vN, ascending
  /// The ABI the NCCL that loads (NcclFacts::loaded) would take from this library for the
  /// variable's kind: 0 none of them, -1 unknown (NCCL version unknown or not in our table).
  int abiTaken = -1;
  std::string digest;  ///< a content hash of the library, to compare nodes ("" unknown)
  std::string error;   ///< why nothing loaded
};

struct NcclFacts {
  std::optional<NcclCopy> loaded;  ///< what dlopen("libnccl.so.2") finds
  std::string loadError;
  std::vector<NcclCopy> others;  ///< other copies in sight (LD_LIBRARY_PATH, Python wheels)
  std::vector<PluginResolution> plugins;  ///< net, tuner, profiler
  std::string toolVersion;                ///< this nccl-pilot's version
};

/// What sysfs cannot tell. An empty function means "cannot know here": the check that needs it
/// says so (SKIP, or WARN naming what to confirm).
struct Probes {
  /// CUDA's CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED for the GPU at this bus id; nullopt unknown.
  std::function<std::optional<bool>(const topology::BusId&)> dmaBufSupported;
  /// The `nccl` check's facts.
  std::function<NcclFacts(const Environment&)> nccl;
  /// Whether a file outside sysfs can be opened for reading (NCCL_TOPO_FILE).
  std::function<bool(const std::string&)> fileReadable;
};

struct DoctorInputs {
  std::string sysfsRoot = "/";
  Environment env;
  Probes probes;
};

struct DoctorReport {
  std::string machine;  ///< "sysfs /: 8 GPUs, 8 NICs, bare metal"
  std::vector<Finding> findings;
  std::vector<std::string> notes;  ///< what detection could not read (one line each)
  /// This node's fingerprint facts (driver, NCCL, plugin, env, topology digest, port rates,
  /// worst verdict per check), for --fingerprint / --compare.
  std::map<std::string, std::string> facts;
};

/// Runs the checks named in `only` (all when empty), in checkIds() order.
DoctorReport runDoctor(const DoctorInputs& inputs, const std::vector<std::string>& only = {});

}  // namespace pilot::doctor
