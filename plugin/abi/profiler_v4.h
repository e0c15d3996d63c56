// Profiler ABI v4: NCCL 2.27. The first version with GPU timestamps (kernelCh.pTimer); init
// takes the communicator's name, hash (after the name), node and rank counts.
#pragma once

#include <cstddef>

#include "abi/profiler_common.h"

namespace pilot::nccl {

struct ncclProfilerEventDescr_v4_t {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
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
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
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

union ncclProfilerEventStateArgs_v4_t {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
};

struct ncclProfiler_v4_t {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName,
                       uint64_t commHash, int nNodes, int nranks, int rank,
                       ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_v4_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
};

// The layout NCCL compiles (x86-64 and aarch64 LP64).
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll) == 24, "v4 union offset");
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.count) == 24 + 32, "v4 coll.count");
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.nChannels) == 24 + 56, "v4 nChannels");
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.proto) == 24 + 72, "v4 coll.proto");
static_assert(offsetof(ncclProfilerEventDescr_v4_t, kernelCh.pTimer) == 24 + 8, "v4 pTimer");
static_assert(sizeof(ncclProfilerEventDescr_v4_t) == 24 + 80, "v4 descriptor size");
static_assert(sizeof(ncclProfilerEventStateArgs_v4_t) == 8, "v4 state args");

}  // namespace pilot::nccl
