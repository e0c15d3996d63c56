#include "explain/acting_nccl.h"

#include <atomic>

namespace pilot::cli {
namespace {

std::atomic<int> gVersion{0};

}  // namespace

void actAsNccl(uint64_t versionCode) {
  gVersion = static_cast<int>(versionCode);
}

}  // namespace pilot::cli

// NCCL's ncclResult_t ncclGetVersion(int*): 0 = ncclSuccess, 3 = ncclInternalError. The
// executable exports it (tools/CMakeLists.txt: --export-dynamic-symbol), as libnccl does.
extern "C" __attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  const int code = pilot::cli::gVersion;
  if (version == nullptr || code == 0) return 3;
  *version = code;
  return 0;
}
