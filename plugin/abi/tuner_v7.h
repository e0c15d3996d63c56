// Tuner ABI v7: NCCL 2.32.6 and later. The function table of v6; the tuning constants' five
// per-GPU-generation arrays grow to 5 compute capabilities (Rubin is index 4), so the struct
// is not v5's. NCCL_TUNING_IGNORE (-1.0) is the new name of NCCL_ALGO_PROTO_IGNORE.
#pragma once

#include "abi/tuner_v6.h"

namespace pilot::nccl {

constexpr int NCCL_NUM_COMPCAPS_V7 = 5;

using ncclNvlDomainInfo_v7_t = ncclNvlDomainInfo_v5_t;

struct ncclTunerConstants_v7_t {
  double baseLatencies[NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double llMaxBws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V7][NCCL_NUM_TUNING_SCALES_V5];
};

struct ncclTuner_v7_t {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v7_t* nvlDomainInfo,
                       ncclTunerConstants_v7_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*finalize)(void* context);
  /// Optional (NULL = NCCL's chunk size); NCCL clamps the result to what its buffers allow.
  ncclResult_t (*getChunkSize)(void* context, ncclFunc_t collType, size_t nBytes, int algo,
                               int proto, int nChannels, size_t* chunkSize);
};

static_assert(sizeof(ncclTunerConstants_v7_t) == (21 + 63 + 5 * 15) * sizeof(double),
              "v7 constants layout");

}  // namespace pilot::nccl
