// Profiler ABI v5: NCCL 2.28. type widens to 64 bits; API-level events (GroupApi, CollApi,
// P2pApi, KernelLaunch) arrive; coll and p2p keep the v4 group parent in parentGroup (parentObj
// becomes the API event); init takes the communicator id before the activation mask.
#pragma once

#include <cstddef>

#include "abi/profiler_common.h"
#include "abi/profiler_v4.h"

namespace pilot::nccl {

struct ncclProfilerEventDescr_v5_t {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      ncclPid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

using ncclProfilerEventStateArgs_v5_t = ncclProfilerEventStateArgs_v4_t;

struct ncclProfiler_v5_t {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_v5_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};

static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll) == 24, "v5 union offset");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.count) == 24 + 32, "v5 coll.count");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.nChannels) == 24 + 56, "v5 nChannels");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 24 + 80, "v5 parent");
static_assert(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.pTimer) == 24 + 8, "v5 pTimer");
static_assert(sizeof(ncclProfilerEventDescr_v5_t) == 24 + 88, "v5 descriptor size");

}  // namespace pilot::nccl
