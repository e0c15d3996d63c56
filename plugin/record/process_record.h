// The process record (provenance/record.h) as the plugin builds it: at the first init of each
// plugin kind and ABI in this copy of the library, what the process maps and runs is read
// (dl_iterate_phdr, ncclGetVersion, the environment, the nccl.conf files NCCL merged) and handed
// to the metrics runtime, which keeps it for the summary and textfile and writes it beside them.
//
// NCCL may load this library as up to three copies (one per plugin name), which share no
// memory. What must happen once per process, whichever copy comes first, is decided by binding
// an abstract Unix socket named after the process (its pid namespace and pid): the kernel lets
// one bind succeed, and the socket lives as long as the process. So the record file is started
// once, and the one WARN line about the process's own setup (several libnccl, a debug-only or
// dangerous setting, an unknown NCCL_* name) is logged once, never more.
#pragma once

#include <vector>

#include "pilot/core/log.h"
#include "pilot/provenance/record.h"

namespace pilot::plugin {

/// Called by every init of our plugins before its own work: `kind` "net", "tuner" or
/// "profiler", the ABI version NCCL took, a code address inside the NCCL that called. Cheap
/// after the first call per (kind, abi): a lock and a look at a short list. Never throws.
void noteProcessInit(const char* kind, int abi, const void* caller, Logger& log) noexcept;

/// The record as this copy would build it now, with the mapped libnccl given (`noteProcessInit`
/// reads them again only when objects were loaded since).
provenance::ProcessRecord buildProcessRecord(const void* caller,
                                             std::vector<provenance::Library> libraries);

}  // namespace pilot::plugin
