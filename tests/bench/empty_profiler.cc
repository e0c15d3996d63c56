// The reference of the profiler overhead benchmark: an ncclProfiler_v5 whose callbacks do
// nothing but hand out a handle, so every event NCCL would send reaches the next one. Our own
// code, declared through the host's view of the ABI.
#include "profiler_host_abi.h"

namespace {

int dummy;

ncclResult_t init(void** context, uint64_t, int* mask, const char*, int, int, int,
                  ncclDebugLogger_t) {
  *context = &dummy;
  *mask = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh;
  return ncclSuccess;
}

ncclResult_t startEvent(void*, void** handle, ncclProfilerEventDescr_v5_t* d) {
  const uint64_t handled =
      ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh;
  *handle = (d->type & handled) != 0 ? &dummy : nullptr;
  return ncclSuccess;
}

ncclResult_t stopEvent(void*) {
  return ncclSuccess;
}

ncclResult_t recordEventState(void*, ncclProfilerEventState_t, ncclProfilerEventStateArgs_t*) {
  return ncclSuccess;
}

ncclResult_t finalize(void*) {
  return ncclSuccess;
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) ncclProfiler_v5_t ncclProfiler_v5 = {
    "Empty", init, startEvent, stopEvent, recordEventState, finalize};
}
