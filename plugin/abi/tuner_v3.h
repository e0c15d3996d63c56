// Tuner ABI v3: NCCL 2.22 and later. The cost table arrives as float** but is a flat
// float[numAlgo][numProto] array.
#pragma once

#include "abi/nccl_common.h"

namespace pilot::nccl {

struct ncclTuner_v3_t {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int* nChannels);
  ncclResult_t (*destroy)(void* context);
};

}  // namespace pilot::nccl
