// The exported profiler structs ncclProfiler_v4 .. _v6: thin adapters onto metrics/. NCCL takes
// the newest it knows (src/plugin/profiler.cc: v6 first), from NCCL_PROFILER_PLUGIN or else
// from the net plugin's library, so this library profiles under all three of its names.
// v1 .. v3 (NCCL 2.23 .. 2.26) are not exported: they carry no GPU timestamps, so the library
// would have nothing but enqueue times to report; those NCCLs load no profiler from us.
#include <unistd.h>

#include <memory>

#include "abi/profiler_v4.h"
#include "abi/profiler_v5.h"
#include "abi/profiler_v6.h"
#include "entry_guard.h"
#include "logger_bridge.h"
#include "pilot/metrics/event_path.h"
#include "pilot/metrics/runtime.h"
#include "pilot/tuner/graph_capture.h"
#include "record/process_record.h"
#include "tuner/process_facts.h"

namespace pilot::plugin {
namespace {

using namespace pilot::nccl;
using metrics::CollEvent;
using metrics::CommMonitor;
using metrics::EventPath;
using metrics::MetricsRuntime;
using metrics::P2pEvent;

constexpr const char* kProfilerName = "Pilot";
constexpr const char* kPrefix = "PROFILER/Pilot";
constexpr unsigned long kFlags = subsys::Init | subsys::Profile;
/// What we ask of NCCL when measuring. NCCL keeps one activation mask per process (the last
/// init's), so every communicator must ask for the same events. NCCL sends Group events for
/// any of these (and 2.27 sends a plan's task events only when its Group got a handle); P2p
/// events come with KernelCh too, asked or not.
constexpr int kMeasuringMask =
    static_cast<int>(ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh);

/// The NCCL releases whose newest profiler ABI is `abi` (2.27 v4, 2.28 v5, 2.29 and later v6).
tuner::Range ncclVersionsOfProfilerAbi(int abi) {
  switch (abi) {
    case 4:
      return {tuner::ncclVersionCode(2, 27), tuner::ncclVersionCode(2, 27, 99)};
    case 5:
      return {tuner::ncclVersionCode(2, 28), tuner::ncclVersionCode(2, 28, 99)};
    default:
      return {tuner::ncclVersionCode(2, 29), tuner::Range{}.hi};
  }
}

ncclResult_t initCommon(int abi, void** context, uint64_t commId, int* mask, const char* commName,
                        int nNodes, int nRanks, int rank, ncclDebugLogger_t logFn,
                        const void* caller) {
  if (context != nullptr) *context = nullptr;
  if (mask != nullptr) *mask = 0;
  NcclLogger log(logFn, kPrefix);
  // Failing here would make NCCL unload the profiler for this communicator; an internal error
  // leaves no context instead, whose events are ignored.
  return guard(&log, kFlags, "init", ncclSuccess, [&]() -> ncclResult_t {
    noteProcessInit("profiler", abi, caller, log);
    MetricsRuntime& runtime = MetricsRuntime::process();
    if (!runtime.enabled(log) || context == nullptr || mask == nullptr) return ncclSuccess;
    *mask = kMeasuringMask;
    // NCCL's network progress, asked for alike by every communicator (NCCL keeps one mask).
    switch (runtime.proxyEvents()) {
      case metrics::MetricsSettings::Proxy::Steps:
        *mask |= static_cast<int>(ncclProfileProxyStep);
        [[fallthrough]];
      case metrics::MetricsSettings::Proxy::Ops:
        *mask |= static_cast<int>(ncclProfileProxyOp);
        break;
      case metrics::MetricsSettings::Proxy::Off:
        break;
    }
    metrics::CommIdentity id;
    id.commId = commId;
    id.name = commName != nullptr ? commName : "";
    id.nNodes = nNodes;
    id.nRanks = nRanks;
    id.rank = rank;
    id.abiVersion = abi;
    id.pid = ::getpid();
    id.facts = readProcessFacts(ncclVersionsOfProfilerAbi(abi),
                                "profiler ABI v" + std::to_string(abi), caller);
    *context = runtime.open(std::move(id), std::make_unique<NcclLogger>(logFn, kPrefix));
    return ncclSuccess;
  });
}

ncclResult_t initV4(void** context, int* mask, const char* commName, uint64_t commHash, int nNodes,
                    int nRanks, int rank, ncclDebugLogger_t logFn) {
  return initCommon(4, context, commHash, mask, commName, nNodes, nRanks, rank, logFn,
                    __builtin_return_address(0));
}

template <int Version>
ncclResult_t initV5(void** context, uint64_t commId, int* mask, const char* commName, int nNodes,
                    int nRanks, int rank, ncclDebugLogger_t logFn) {
  return initCommon(Version, context, commId, mask, commName, nNodes, nRanks, rank, logFn,
                    __builtin_return_address(0));
}

/// v5+: a collective captured into a CUDA graph stops the communicator's exploration
/// (tuner/graph_capture.h); NCCL sends its CollApi event before it asks the tuner.
void noteCapture(CommMonitor& comm, const ncclProfilerEventDescr_v4_t&) {
  (void)comm;  // v4 sends no API events
}
template <typename Descr>
void noteCapture(CommMonitor& comm, const Descr& d) {
  if (d.collApi.graphCaptured) tuner::noteGraphCapture(comm.identity().commId);
}

/// The group a P2p event belongs to: v4 (and NCCL's v4 shim) pass it as the parent, v5 and v6
/// in p2p.parentGroup (their parent is the P2pApi event, which names the user's group).
void* p2pGroup(const ncclProfilerEventDescr_v4_t& d) {
  return d.parentObj;
}
template <typename Descr>
void* p2pGroup(const Descr& d) {
  return d.p2p.parentGroup;
}
void* p2pOperation(const ncclProfilerEventDescr_v4_t&) {
  return nullptr;  // v4 sends no API events
}
template <typename Descr>
void* p2pOperation(const Descr& d) {
  return d.parentObj;
}

/// v4, v5 and v6 share the coll, p2p and kernelCh fields we read; the type width and where the
/// group goes differ.
template <typename Descr>
ncclResult_t startEvent(void* context, void** eHandle, Descr* d) {
  if (eHandle == nullptr) return ncclSuccess;
  *eHandle = nullptr;
  if (context == nullptr || d == nullptr) return ncclSuccess;
  return guard(nullptr, kFlags, "startEvent", ncclSuccess, [&] {
    const uint64_t type = d->type;
    if (type == ncclProfileColl) {
      CollEvent e;
      e.seqNumber = d->coll.seqNumber;
      e.func = d->coll.func;
      e.count = d->coll.count;
      e.datatype = d->coll.datatype;
      e.nChannels = d->coll.nChannels;
      e.algo = d->coll.algo;
      e.proto = d->coll.proto;
      *eHandle = EventPath::process().startCollective(*static_cast<CommMonitor*>(context), e);
    } else if (type == ncclProfileP2p) {
      P2pEvent e;
      e.func = d->p2p.func;
      e.count = d->p2p.count;
      e.datatype = d->p2p.datatype;
      e.peer = d->p2p.peer;
      e.nChannels = d->p2p.nChannels;
      e.group = p2pGroup(*d);
      e.operation = p2pOperation(*d);
      *eHandle = EventPath::process().startP2p(*static_cast<CommMonitor*>(context), e);
    } else if (type == ncclProfileGroup) {
      *eHandle = EventPath::process().startGroup(*static_cast<CommMonitor*>(context));
    } else if (type == ncclProfileGroupApi) {
      // The user's group, however many kernel plans NCCL cuts it into (group_table.h).
      *eHandle = EventPath::process().startGroupApi(*static_cast<CommMonitor*>(context));
    } else if (type == ncclProfileP2pApi) {
      *eHandle = EventPath::startP2pApi(d->parentObj);
    } else if (type == ncclProfileCollApi) {
      noteCapture(*static_cast<CommMonitor*>(context), *d);
    } else if (type == ncclProfileKernelCh) {
      *eHandle = EventPath::process().startKernelChannel(d->parentObj, d->kernelCh.channelId,
                                                         d->kernelCh.pTimer);
    } else if (type == ncclProfileProxyOp) {
      // A proxy of another process (PXN) runs this op for a rank of ours: its parent is a
      // handle of that process, not ours. The pid and the setting were read at init: no system
      // call and no lock on the proxy thread.
      const CommMonitor& comm = *static_cast<CommMonitor*>(context);
      if (d->proxyOp.pid == comm.identity().pid) {
        *eHandle = EventPath::process().startProxyOp(
            d->parentObj, d->proxyOp.channelId, d->proxyOp.peer, d->proxyOp.isSend != 0,
            d->proxyOp.nSteps, comm.settings().proxy == metrics::MetricsSettings::Proxy::Steps);
      }
    } else if (type == ncclProfileProxyStep) {
      *eHandle = EventPath::process().startProxyStep(d->parentObj);
    }
    // Everything else (a CollApi, and what we never ask for) gets no handle, so NCCL sends
    // nothing more about it.
    return ncclSuccess;
  });
}

ncclResult_t stopEvent(void* eHandle) {
  if (eHandle == nullptr) return ncclSuccess;
  return guard(nullptr, kFlags, "stopEvent", ncclSuccess, [&] {
    EventPath::process().stop(eHandle);
    return ncclSuccess;
  });
}

template <typename Args>
ncclResult_t recordEventState(void* eHandle, ncclProfilerEventState_t state, Args* args) {
  if (eHandle == nullptr || args == nullptr || state != ncclProfilerKernelChStop) {
    return ncclSuccess;
  }
  return guard(nullptr, kFlags, "recordEventState", ncclSuccess, [&] {
    EventPath::process().recordKernelChannelStop(eHandle, args->kernelCh.pTimer);
    return ncclSuccess;
  });
}

ncclResult_t finalize(void* context) {
  if (context == nullptr) return ncclSuccess;
  return guard(nullptr, kFlags, "finalize", ncclSuccess, [&] {
    MetricsRuntime::process().close(static_cast<CommMonitor*>(context));
    return ncclSuccess;
  });
}

}  // namespace
}  // namespace pilot::plugin

using namespace pilot::nccl;
namespace p = pilot::plugin;

#define PILOT_EXPORT __attribute__((visibility("default")))

extern "C" {
PILOT_EXPORT ncclProfiler_v4_t ncclProfiler_v4 = {
    p::kProfilerName,
    p::initV4,
    p::startEvent<ncclProfilerEventDescr_v4_t>,
    p::stopEvent,
    p::recordEventState<ncclProfilerEventStateArgs_v4_t>,
    p::finalize};
PILOT_EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {
    p::kProfilerName,
    p::initV5<5>,
    p::startEvent<ncclProfilerEventDescr_v5_t>,
    p::stopEvent,
    p::recordEventState<ncclProfilerEventStateArgs_v5_t>,
    p::finalize};
PILOT_EXPORT ncclProfiler_v6_t ncclProfiler_v6 = {
    p::kProfilerName,
    p::initV5<6>,
    p::startEvent<ncclProfilerEventDescr_v6_t>,
    p::stopEvent,
    p::recordEventState<ncclProfilerEventStateArgs_v6_t>,
    p::finalize};
}
