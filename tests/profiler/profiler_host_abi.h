/* What an NCCL host compiles against: the profiler plugin types of NCCL 2.27 .. 2.30 (ABI v4,
   v5, v6), written as plain C from the field lists of NCCL's src/include/plugin/profiler/
   profiler_v4.h .. v6.h and nccl_profiler.h, independently of plugin/abi/ (a mismatch between
   the two is what the host tests must catch). */
#ifndef PILOT_TESTS_PROFILER_HOST_ABI_H
#define PILOT_TESTS_PROFILER_HOST_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nccl_host_abi.h" /* ncclResult_t, ncclDebugLogger_t */

enum {
  ncclProfileGroup = 1 << 0,
  ncclProfileColl = 1 << 1,
  ncclProfileP2p = 1 << 2,
  ncclProfileProxyOp = 1 << 3,
  ncclProfileProxyStep = 1 << 4,
  ncclProfileProxyCtrl = 1 << 5,
  ncclProfileKernelCh = 1 << 6,
  ncclProfileNetPlugin = 1 << 7,
  ncclProfileGroupApi = 1 << 8,
  ncclProfileCollApi = 1 << 9,
  ncclProfileP2pApi = 1 << 10,
  ncclProfileKernelLaunch = 1 << 11,
  ncclProfileCeColl = 1 << 12,
  ncclProfileCeSync = 1 << 13,
  ncclProfileCeBatch = 1 << 14
};

typedef enum {
  ncclProfilerProxyStepSendGPUWait = 8,
  ncclProfilerProxyStepSendWait = 9,
  ncclProfilerProxyStepRecvWait = 10,
  ncclProfilerProxyStepRecvFlushWait = 11,
  ncclProfilerProxyStepRecvGPUWait = 12,
  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyOpInProgress_v4 = 19,
  ncclProfilerProxyStepSendPeerWait_v4 = 20,
  ncclProfilerKernelChStop = 22,
  ncclProfilerGroupStartApiStop = 23,
  ncclProfilerGroupEndApiStart = 24
} ncclProfilerEventState_t;

/* The coll fields of v4, which v5/v6 extend with parentGroup. */
#define PILOT_HOST_COLL_FIELDS \
  uint64_t seqNumber;          \
  const char* func;            \
  void const* sendBuff;        \
  void* recvBuff;              \
  size_t count;                \
  int root;                    \
  const char* datatype;        \
  uint8_t nChannels;           \
  uint8_t nWarps;              \
  const char* algo;            \
  const char* proto;

#define PILOT_HOST_COMMON_EVENTS \
  struct {                       \
    pid_t pid;                   \
    uint8_t channelId;           \
    int peer;                    \
    int nSteps;                  \
    int chunkSize;               \
    int isSend;                  \
  } proxyOp;                     \
  struct {                       \
    int step;                    \
  } proxyStep;                   \
  struct {                       \
    uint8_t channelId;           \
    uint64_t pTimer;             \
  } kernelCh;                    \
  struct {                       \
    int64_t id;                  \
    void* data;                  \
  } netPlugin;

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      PILOT_HOST_COLL_FIELDS
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    PILOT_HOST_COMMON_EVENTS
  };
} ncclProfilerEventDescr_v4_t;

#define PILOT_HOST_API_EVENTS \
  struct {                    \
    bool graphCaptured;       \
    int groupDepth;           \
  } groupApi;                 \
  struct {                    \
    const char* func;         \
    size_t count;             \
    const char* datatype;     \
    int root;                 \
    void* stream;             \
    bool graphCaptured;       \
  } collApi;                  \
  struct {                    \
    const char* func;         \
    size_t count;             \
    const char* datatype;     \
    void* stream;             \
    bool graphCaptured;       \
  } p2pApi;                   \
  struct {                    \
    void* stream;             \
  } kernelLaunch;             \
  struct {                    \
    PILOT_HOST_COLL_FIELDS    \
    void* parentGroup;        \
  } coll;                     \
  struct {                    \
    const char* func;         \
    void* buff;               \
    const char* datatype;     \
    size_t count;             \
    int peer;                 \
    uint8_t nChannels;        \
    void* parentGroup;        \
  } p2p;

typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    PILOT_HOST_API_EVENTS
    PILOT_HOST_COMMON_EVENTS
  };
} ncclProfilerEventDescr_v5_t;

typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    PILOT_HOST_API_EVENTS
    PILOT_HOST_COMMON_EVENTS
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} ncclProfilerEventDescr_v6_t;

typedef union {
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
} ncclProfilerEventStateArgs_t; /* the same union in v4, v5 and v6 */

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName,
                       uint64_t commHash, int nNodes, int nranks, int rank,
                       ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v4_t;

#define PILOT_HOST_PROFILER_V5_LIKE(descr)                                           \
  struct {                                                                           \
    const char* name;                                                                \
    ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask,      \
                         const char* commName, int nNodes, int nranks, int rank,     \
                         ncclDebugLogger_t logfn);                                   \
    ncclResult_t (*startEvent)(void* context, void** eHandle, descr* eDescr);        \
    ncclResult_t (*stopEvent)(void* eHandle);                                        \
    ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState, \
                                     ncclProfilerEventStateArgs_t* eStateArgs);      \
    ncclResult_t (*finalize)(void* context);                                         \
  }

typedef PILOT_HOST_PROFILER_V5_LIKE(ncclProfilerEventDescr_v5_t) ncclProfiler_v5_t;
typedef PILOT_HOST_PROFILER_V5_LIKE(ncclProfilerEventDescr_v6_t) ncclProfiler_v6_t;

#endif
