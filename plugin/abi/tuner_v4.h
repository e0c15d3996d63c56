// Tuner ABI v4: NCCL 2.24 and later. Adds regBuff before nChannels.
#pragma once

#include "abi/nccl_common.h"

namespace pilot::nccl {

struct ncclTuner_v4_t {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*destroy)(void* context);
};

}  // namespace pilot::nccl
