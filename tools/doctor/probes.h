// The doctor's probes of the live machine: which NCCL the dynamic loader finds (and other copies
// in sight), what NCCL_NET_PLUGIN / NCCL_TUNER_PLUGIN / NCCL_PROFILER_PLUGIN resolve to by
// NCCL's own rules, CUDA's DMA-BUF attribute per GPU, and whether a file can be read. Everything
// is loaded with dlopen (RTLD_NOW | RTLD_LOCAL) as NCCL does; nothing is linked.
#pragma once

#include "pilot/doctor/doctor.h"

namespace pilot::cli {

/// The probes for a run on this machine. `recorded`: the sysfs root is a recorded tree, so the
/// probes that would describe this machine's libraries and GPUs instead are left empty.
doctor::Probes liveProbes(bool recorded);

/// What the nccl check reads, from this process's loader and the environment `env`.
doctor::NcclFacts probeNccl(const doctor::Environment& env);

/// NCCL's version code (ncclGetVersion) as text: 22809 -> "2.28.9", 2708 -> "2.7.8".
std::string ncclVersionText(int code);

}  // namespace pilot::cli
