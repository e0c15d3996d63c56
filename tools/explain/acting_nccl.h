// `explain` acts as a given NCCL release, and the plugin asks the running NCCL for its version
// (ncclGetVersion, found in the global scope): this executable answers for the release named.
#pragma once

#include <cstdint>

namespace pilot::cli {

/// What this process's ncclGetVersion reports from now on (NCCL's version code, 23207 for
/// 2.32.7). Until called, it fails as if there were no NCCL.
void actAsNccl(uint64_t versionCode);

}  // namespace pilot::cli
