// The reference of the profiler overhead benchmark: an ncclProfiler_v5 whose callbacks do
// nothing but hand out a handle, so every event NCCL would send reaches the next one. Our own
// code, declared through the host's view of the ABI. It asks for NCCL's network progress events
// as our profiler does, by NCCL_PILOT_METRICS_PROXY (ops: ProxyOp; steps: ProxyOp and
// ProxyStep), so that both get the same events.
#include <cstdlib>
#include <cstring>

#include "profiler_host_abi.h"

namespace {

int dummy;

ncclResult_t init(void** context, uint64_t, int* mask, const char*, int, int, int,
                  ncclDebugLogger_t) {
  *context = &dummy;
  *mask = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh;
  if (const char* proxy = std::getenv("NCCL_PILOT_METRICS_PROXY")) {
    if (std::strcmp(proxy, "steps") == 0) *mask |= ncclProfileProxyOp | ncclProfileProxyStep;
    if (std::strcmp(proxy, "ops") == 0 || std::strcmp(proxy, "1") == 0) *mask |= ncclProfileProxyOp;
  }
  return ncclSuccess;
}

ncclResult_t startEvent(void*, void** handle, ncclProfilerEventDescr_v5_t* d) {
  // NCCL sends the proxy events only when the mask asks for them.
  const uint64_t handled = ncclProfileGroup | ncclProfileColl | ncclProfileP2p |
                           ncclProfileKernelCh | ncclProfileProxyOp | ncclProfileProxyStep;
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
