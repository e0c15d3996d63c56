// The facts of this process that a table's fabric= and nccl= keys are matched against, read by
// the tuner plugin at init (tuner/process_facts.h says why they must agree across nodes):
//   - the fabric: topology::detectFabric, the definition the net plugin's transport choice uses
//     (NCCL may load this library as a copy separate from the net plugin's, so it reads the
//     RDMA ports itself: a few small sysfs files, once per process), or NCCL_PILOT_TUNER_FABRIC;
//   - the running NCCL's version: ncclGetVersion of the library whose code called init (found
//     with dladdr, so an NCCL loaded RTLD_LOCAL counts), else one in the global scope, else an
//     already loaded libnccl.so.2 (RTLD_NOLOAD: never loads one), asked at each init; accepted
//     only when that release loads the tuner ABI in use, else the releases that ABI implies.
#pragma once

#include <string>

#include "pilot/tuner/process_facts.h"

namespace pilot::plugin {

/// `caller`: a code address inside whoever called init (its return address).
tuner::ProcessFacts readProcessFacts(int abiVersion, const void* caller);

/// The same for another plugin kind (the profiler, which re-derives the tuner's decisions):
/// `implied` are the NCCL releases that load `abi` (e.g. "profiler ABI v5"), taken when the
/// running version cannot be read or is not one of them.
tuner::ProcessFacts readProcessFacts(const tuner::Range& implied, const std::string& abi,
                                     const void* caller);

/// The NCCL a code address belongs to (its library's ncclGetVersion), else the one in the
/// global scope, else an already loaded libnccl.so.2.
struct FoundVersion {
  int code = 0;  ///< 0: none found
  std::string where;
  std::string path;   ///< the library whose ncclGetVersion answered
  std::string tried;  ///< what was looked at, when nothing answered
};
FoundVersion findRunningNccl(const void* caller);

/// A malformed NCCL_PILOT_TUNER_FABRIC, once per process (then ""): for one WARN.
std::string takeFabricWarning();

}  // namespace pilot::plugin
