// Tuner ABI v6: NCCL 2.30 and later. v5 plus an optional getChunkSize (NULL = NCCL's).
#pragma once

#include "abi/tuner_v5.h"

namespace pilot::nccl {

using ncclTunerConstants_v6_t = ncclTunerConstants_v5_t;
using ncclNvlDomainInfo_v6_t = ncclNvlDomainInfo_v5_t;

struct ncclTuner_v6_t {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v6_t* nvlDomainInfo,
                       ncclTunerConstants_v6_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*finalize)(void* context);
  /// NCCL clamps the result to what its buffers allow.
  ncclResult_t (*getChunkSize)(void* context, ncclFunc_t collType, size_t nBytes, int algo,
                               int proto, int nChannels, size_t* chunkSize);
};

}  // namespace pilot::nccl
