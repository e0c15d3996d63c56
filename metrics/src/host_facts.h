// The facts Inspector's labels need that NCCL does not pass the profiler: the host name and the
// CUDA device of the thread that creates the communicator (NCCL calls profiler init on it).
#pragma once

#include <string>

namespace pilot::metrics::detail {

/// gethostname(), or "unknown".
std::string hostName();

/// "GPU<n>" for the current CUDA context's device, asked of the CUDA driver only if the
/// process already loaded it (dlopen RTLD_NOLOAD: we never load CUDA ourselves); "unknown"
/// otherwise.
std::string currentGpu();

/// NCCL's commName as a label value: printable ASCII only (others become '?'), at most 128
/// bytes.
std::string printableName(const char* name);

}  // namespace pilot::metrics::detail
