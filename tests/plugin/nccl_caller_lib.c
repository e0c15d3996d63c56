/* A stand-in for an NCCL inside a shared library loaded RTLD_LOCAL (a framework's extension
   module): it has its own ncclGetVersion and calls the tuner's init from its own code, as NCCL
   does, so the plugin must find this library's version through its caller, not the global
   scope's. Built as libpilot-fake-nccl-caller.so; FAKE_CALLER_VERSION is its version code. */
#include "nccl_host_abi.h"

__attribute__((visibility("default"))) ncclResult_t ncclGetVersion(int* version) {
  if (version == 0) return ncclInvalidArgument;
  *version = FAKE_CALLER_VERSION;
  return ncclSuccess;
}

/* The init call NCCL makes, made from inside this library. */
__attribute__((visibility("default"), noinline)) ncclResult_t fakeCallerInitV7(
    const ncclTuner_v7_t* tuner, void** context, size_t nRanks, size_t nNodes,
    ncclDebugLogger_t logger) {
  ncclNvlDomainInfo_v5_t nvl = {(int)nNodes, (int)(nRanks / nNodes), (int)(nRanks / nNodes)};
  ncclTunerConstants_v7_t constants = {{{0}}};
  ncclResult_t r = tuner->init(context, 1, nRanks, nNodes, logger, &nvl, &constants);
  return r;
}
