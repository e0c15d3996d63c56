// Tuner ABI v5: NCCL 2.28 and later. init takes the communicator id, NVL-domain info and NCCL's
// tuning constants (editable); destroy is renamed finalize.
#pragma once

#include "abi/nccl_common.h"

namespace pilot::nccl {

constexpr int NCCL_NUM_ALGORITHMS_V5 = 7;
constexpr int NCCL_NUM_PROTOCOLS_V5 = 3;
constexpr int NCCL_NUM_HW_LINKS_V5 = 3;
constexpr int NCCL_NUM_COMPCAPS_V5 = 4;
constexpr int NCCL_NUM_TUNING_SCALES_V5 = 3;

struct ncclNvlDomainInfo_v5_t {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
};

/// NCCL passes this struct with perChMaxNVLSTreeBws, which NCCL's example header lacks.
struct ncclTunerConstants_v5_t {
  double baseLatencies[NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
  double llMaxBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
};

struct ncclTuner_v5_t {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t* nvlDomainInfo,
                       ncclTunerConstants_v5_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*finalize)(void* context);
};

static_assert(sizeof(ncclTunerConstants_v5_t) == (21 + 63 + 5 * 12) * sizeof(double),
              "v5 constants layout");

}  // namespace pilot::nccl
