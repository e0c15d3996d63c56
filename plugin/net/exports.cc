// The exported net structs ncclNetPlugin_v6 .. _v12. Init hands NCCL our topology file (once
// per process) and starts the transport NCCL_PILOT_TRANSPORT names: auto (the default: none
// where NCCL's IB transport will carry the data, else socket), socket (the TCP transport of
// net/, every call mapped by net/adapters.h) or none (topology-only: devices() reports 0, so
// NCCL moves on to its own transports). Each NCCL takes
// the newest symbol it knows (research/net.md §1.1).
//
// What NCCL does with a plugin that reports 0 devices (read in NCCL's src/plugin/net.cc,
// ncclNetPluginInit / ncclNetInit, 2.27.3 .. 2.30.7, and src/net.cc netGetState in 2.23):
// - it calls init, then devices(); `ndev <= 0` (like an init error) marks the plugin Disabled
//   for the rest of the process and the loop goes on to the internal IB, then Socket transport.
//   No WARN, only an INFO "Failed to initialize NET plugin Pilot", and the library stays loaded.
// - so init runs for the first communicator only, even with the per-communicator v11/v12 init;
//   later communicators skip a Disabled plugin. Our once-per-process guard matters when NCCL
//   re-enables it, and for hosts that call init per communicator.
// - init need not succeed for the fallback, but it is where we set NCCL_TOPO_FILE, which NCCL
//   reads later in the same communicator init (init.cc: ncclNetInit before ncclTopoGetSystem).
//   We return ncclSuccess whatever happened to the topology: a failure is a WARN, not an error.
// - 2.30 calls finalize(ctx) after a successful v12 init whose devices() gave 0; 2.28.9 calls
//   finalize(comm->netContext) on every failure, even when init itself failed. So init clears
//   *ctx first and finalize accepts NULL.
// - 2.28.9 then hands the same comm->netContext to the next transport: when IB's init fails
//   before writing it (no HCA, NCCL_IB_DISABLE=1), IB's finalize free()s our pointer a second
//   time and the process aborts (seen on a real H200 run, tests/gpu/run.sh topo-only). So with
//   no device, where NCCL is bound to fall back, init leaves *ctx NULL: free(NULL) is harmless.
// - 2.28+ checks NCCL_NET (config.netName) against our name before init: NCCL_NET=IB skips us
//   and no topology file is written. 2.27 and older call init first.
// - The v6..v10 shims in 2.26+ call the old init once and reference-count it themselves.
#include <new>

#include "abi/net_v10.h"
#include "abi/net_v11.h"
#include "abi/net_v12.h"
#include "abi/net_v6.h"
#include "abi/net_v7.h"
#include "abi/net_v8.h"
#include "abi/net_v9.h"
#include "entry_guard.h"
#include "net/adapters.h"
#include "net/process.h"
#include "record/process_record.h"

namespace pilot::plugin {
namespace {

using namespace pilot::nccl;

constexpr const char* kNetName = "Pilot";
constexpr unsigned long kFlags = subsys::Net;

/// Per-communicator state of v11+: what NCCL passed (listen/connect get it back).
struct NetContext {
  uint64_t commId = 0;
  int trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF;
};

/// What this process runs, once per ABI (record/process_record.h); `caller` is in NCCL.
void noteInit(int abi, const void* caller) {
  NcclLogger log = netLogger();
  noteProcessInit("net", abi, caller, log);
}

// v6 .. v9 share init(logger); v10 adds the profiler callback, which we ignore (no events).
template <int Version>
ncclResult_t initOnce(ncclDebugLogger_t logFn) {
  startNetProcess(logFn);
  noteInit(Version, __builtin_return_address(0));
  return ncclSuccess;
}

ncclResult_t initV10(ncclDebugLogger_t logFn, ncclProfilerCallback_t /*profFn*/) {
  startNetProcess(logFn);
  noteInit(10, __builtin_return_address(0));
  return ncclSuccess;
}

template <int Version, typename Config>
ncclResult_t initPerComm(void** ctx, uint64_t commId, Config* config, ncclDebugLogger_t logFn,
                         ncclProfilerCallback_t /*profFn*/) {
  if (ctx != nullptr) *ctx = nullptr;  // before anything: NCCL may finalize it after a failure
  startNetProcess(logFn);
  noteInit(Version, __builtin_return_address(0));
  NcclLogger log = netLogger();
  return guard(&log, kFlags, "init", ncclSuccess, [&] {
    if (ctx == nullptr) {
      PILOT_LOG(log, Warn, kFlags, "init: NCCL passed no context pointer");
      return ncclInvalidArgument;
    }
    int ndev = 0;
    if (netabi::devices(&ndev) != ncclSuccess || ndev == 0) return ncclSuccess;  // see above
    auto* context = new (std::nothrow) NetContext();
    if (context == nullptr) return ncclSuccess;  // finalize(NULL) is fine; nothing needs it yet
    context->commId = commId;
    if (config != nullptr) context->trafficClass = config->trafficClass;
    *ctx = context;
    return ncclSuccess;
  });
}

ncclResult_t finalize(void* ctx) {
  delete static_cast<NetContext*>(ctx);  // trivially destructible: cannot throw
  return ncclSuccess;
}

int trafficClassOf(void* ctx) {
  return ctx != nullptr ? static_cast<NetContext*>(ctx)->trafficClass
                        : NCCL_NET_TRAFFIC_CLASS_UNDEF;
}

// Per-version shims: argument order and the config/context differ, the work does not.
ncclResult_t listenCtx(void* ctx, int dev, void* handle, void** listenComm) {
  return netabi::listen(dev, handle, listenComm);
}
ncclResult_t connectV6(int dev, void* handle, void** sendComm) {
  return netabi::connect(dev, handle, sendComm, NCCL_NET_TRAFFIC_CLASS_UNDEF, nullptr);
}
ncclResult_t connectV7(int dev, void* handle, void** sendComm,
                       ncclNetDeviceHandle_v7_t** sendDevComm) {
  return netabi::connect(dev, handle, sendComm, NCCL_NET_TRAFFIC_CLASS_UNDEF, sendDevComm);
}
ncclResult_t connectV10(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** sendComm,
                        ncclNetDeviceHandle_v10_t** sendDevComm) {
  const int trafficClass = config != nullptr ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  return netabi::connect(dev, handle, sendComm, trafficClass, sendDevComm);
}
ncclResult_t connectCtx(void* ctx, int dev, void* handle, void** sendComm,
                        ncclNetDeviceHandle_v11_t** sendDevComm) {
  return netabi::connect(dev, handle, sendComm, trafficClassOf(ctx), sendDevComm);
}
ncclResult_t acceptV6(void* listenComm, void** recvComm) {
  return netabi::accept(listenComm, recvComm, nullptr);
}
ncclResult_t irecvSizeT(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** request) {
  return netabi::irecv(recvComm, n, data, sizes, tags, mhandles, request);
}
// v10+: the profiler handles are ignored (we emit no profiler events).
ncclResult_t isendV10(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                      void* /*phandle*/, void** request) {
  return netabi::isend(sendComm, data, size, tag, mhandle, request);
}
ncclResult_t irecvV10(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                      void** /*phandles*/, void** request) {
  return netabi::irecv(recvComm, n, data, sizes, tags, mhandles, request);
}
/// Only for device-offload transports (netDeviceType != HOST), which NCCL alone calls it for.
ncclResult_t getDeviceMr(void* comm, void* mhandle, void** dptrMhandle) {
  if (dptrMhandle != nullptr) *dptrMhandle = nullptr;
  NcclLogger log = netLogger();
  PILOT_LOG(log, Warn, kFlags, "getDeviceMr: a host transport has no device memory handles");
  return ncclInternalError;
}
/// Hints (peers, flows per peer, op/algo/proto) a socket transport has no use for yet.
template <typename Attr>
ncclResult_t setNetAttr(void* ctx, Attr* attr) {
  return ncclSuccess;
}

}  // namespace
}  // namespace pilot::plugin

using namespace pilot::nccl;
namespace p = pilot::plugin;
namespace a = pilot::plugin::netabi;

#define PILOT_EXPORT __attribute__((visibility("default")))

// Members after connect/accept that share one C signature from v8 on (regMr size_t).
#define PILOT_NET_TAIL a::iflush, a::test, a::closeSend, a::closeRecv, a::closeListen
// irecvConsumed stays NULL: NCCL calls it for host plugins too when set (research/net.md §2.4).
// makeVDevice stays NULL: NCCL then keeps the physical devices (no NIC fusion).

extern "C" {
PILOT_EXPORT ncclNet_v6_t ncclNetPlugin_v6 = {
    p::kNetName,    p::initOnce<6>, a::devices,  a::getProperties<6, ncclNetProperties_v6_t>,
    a::listen,      p::connectV6,   p::acceptV6, a::regMrInt,
    a::regMrDmaBuf, a::deregMr,     a::isendInt, a::irecvInt,
    PILOT_NET_TAIL};
PILOT_EXPORT ncclNet_v7_t ncclNetPlugin_v7 = {
    p::kNetName,    p::initOnce<7>, a::devices,  a::getProperties<7, ncclNetProperties_v7_t>,
    a::listen,      p::connectV7,   a::accept,   a::regMrInt,
    a::regMrDmaBuf, a::deregMr,     a::isendInt, a::irecvInt,
    PILOT_NET_TAIL, p::getDeviceMr, nullptr};
PILOT_EXPORT ncclNet_v8_t ncclNetPlugin_v8 = {
    p::kNetName,    p::initOnce<8>, a::devices,  a::getProperties<8, ncclNetProperties_v8_t>,
    a::listen,      p::connectV7,   a::accept,   a::regMr,
    a::regMrDmaBuf, a::deregMr,     a::isendInt, a::irecvInt,
    PILOT_NET_TAIL, p::getDeviceMr, nullptr};
PILOT_EXPORT ncclNet_v9_t ncclNetPlugin_v9 = {
    p::kNetName,    p::initOnce<9>, a::devices, a::getProperties<9, ncclNetProperties_v9_t>,
    a::listen,      p::connectV7,   a::accept,  a::regMr,
    a::regMrDmaBuf, a::deregMr,     a::isend,   p::irecvSizeT,
    PILOT_NET_TAIL, p::getDeviceMr, nullptr,    nullptr};
PILOT_EXPORT ncclNet_v10_t ncclNetPlugin_v10 = {
    p::kNetName,    p::initV10,     a::devices,  a::getProperties<10, ncclNetProperties_v10_t>,
    a::listen,      p::connectV10,  a::accept,   a::regMr,
    a::regMrDmaBuf, a::deregMr,     p::isendV10, p::irecvV10,
    PILOT_NET_TAIL, p::getDeviceMr, nullptr,     nullptr};
PILOT_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    p::kNetName,    p::initPerComm<11, ncclNetCommConfig_v11_t>,
    a::devices,     a::getProperties<11, ncclNetProperties_v11_t>,
    p::listenCtx,   p::connectCtx,
    a::accept,      a::regMr,
    a::regMrDmaBuf, a::deregMr,
    p::isendV10,    p::irecvV10,
    PILOT_NET_TAIL, p::getDeviceMr,
    nullptr,        nullptr,
    p::finalize,    p::setNetAttr<ncclNetAttr_v11_t>};
PILOT_EXPORT ncclNet_v12_t ncclNetPlugin_v12 = {
    p::kNetName,    p::initPerComm<12, ncclNetCommConfig_v12_t>,
    a::devices,     a::getProperties<12, ncclNetProperties_v12_t>,
    p::listenCtx,   p::connectCtx,
    a::accept,      a::regMr,
    a::regMrDmaBuf, a::deregMr,
    p::isendV10,    p::irecvV10,
    PILOT_NET_TAIL, p::getDeviceMr,
    nullptr,        nullptr,
    p::finalize,    p::setNetAttr<ncclNetAttr_v12_t>};
}
