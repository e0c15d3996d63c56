// Tuner ABI v2: NCCL 2.21.5 natively; 2.22+ through NCCL's v2 adapter.
#pragma once

#include "abi/nccl_common.h"

namespace pilot::nccl {

struct ncclTuner_v2_t {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  /// Writes algorithm and protocol (both or neither) and may write nChannels.
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                              int nvlsSupport, int numPipeOps, int* algorithm, int* protocol,
                              int* nChannels);
  ncclResult_t (*destroy)(void* context);
};

}  // namespace pilot::nccl
