// The exported net structs ncclNetPlugin_v6 .. _v12, in topology-only mode: init hands NCCL our
// topology file (once per process) and devices() reports 0, so NCCL moves on to its own
// transports. Each NCCL takes the newest symbol it knows (research/net.md §1.1).
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
#include "net_process.h"

namespace pilot::plugin {
namespace {

using namespace pilot::nccl;

constexpr const char* kNetName = "Pilot";
constexpr unsigned long kFlags = subsys::Net;

/// Per-communicator state of v11+ (what NCCL passed; the transport will hang its state here).
struct NetContext {
  uint64_t commId = 0;
  int trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF;
};

// v6 .. v9 share init(logger); v10 adds the profiler callback, which topology-only ignores.
ncclResult_t initOnce(ncclDebugLogger_t logFn) {
  startNetProcess(logFn);
  return ncclSuccess;
}

ncclResult_t initV10(ncclDebugLogger_t logFn, ncclProfilerCallback_t /*profFn*/) {
  startNetProcess(logFn);
  return ncclSuccess;
}

template <typename Config>
ncclResult_t initPerComm(void** ctx, uint64_t commId, Config* config, ncclDebugLogger_t logFn,
                         ncclProfilerCallback_t /*profFn*/) {
  if (ctx != nullptr) *ctx = nullptr;  // before anything: NCCL may finalize it after a failure
  startNetProcess(logFn);
  NcclLogger log = netLogger();
  return guard(&log, kFlags, "init", ncclSuccess, [&] {
    if (ctx == nullptr) {
      PILOT_LOG(log, Warn, kFlags, "init: NCCL passed no context pointer");
      return ncclInvalidArgument;
    }
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

ncclResult_t devices(int* ndev) {
  if (ndev == nullptr) return ncclInvalidArgument;
  *ndev = 0;  // topology-only: NCCL disables us and uses its own IB/Socket transport
  return ncclSuccess;
}

/// Everything that needs a device. NCCL never calls these after devices() gave 0; if a host
/// does, it gets an error and one WARN, and no argument is touched (some are NCCL's arrays).
template <const char* Name, typename... Args>
ncclResult_t noDevice(Args... /*args*/) {
  NcclLogger log = netLogger();
  PILOT_LOG(log, Warn, kFlags, "%s: no network devices (topology-only mode)", Name);
  return ncclInternalError;
}

constexpr char kGetProperties[] = "getProperties";
constexpr char kListen[] = "listen";
constexpr char kConnect[] = "connect";
constexpr char kAccept[] = "accept";
constexpr char kRegMr[] = "regMr";
constexpr char kRegMrDmaBuf[] = "regMrDmaBuf";
constexpr char kDeregMr[] = "deregMr";
constexpr char kIsend[] = "isend";
constexpr char kIrecv[] = "irecv";
constexpr char kIflush[] = "iflush";
constexpr char kTest[] = "test";
constexpr char kCloseSend[] = "closeSend";
constexpr char kCloseRecv[] = "closeRecv";
constexpr char kCloseListen[] = "closeListen";
constexpr char kGetDeviceMr[] = "getDeviceMr";
constexpr char kIrecvConsumed[] = "irecvConsumed";
constexpr char kMakeVDevice[] = "makeVDevice";
constexpr char kSetNetAttr[] = "setNetAttr";

}  // namespace
}  // namespace pilot::plugin

using namespace pilot::nccl;
namespace p = pilot::plugin;

#define PILOT_EXPORT __attribute__((visibility("default")))

// The members every version shares after init, in struct order (the argument lists differ per
// version; each noDevice<> instance takes its types from the member it initialises).
#define PILOT_NET_COMMON                                                              \
  p::noDevice<p::kListen>, p::noDevice<p::kConnect>, p::noDevice<p::kAccept>,         \
      p::noDevice<p::kRegMr>, p::noDevice<p::kRegMrDmaBuf>, p::noDevice<p::kDeregMr>, \
      p::noDevice<p::kIsend>, p::noDevice<p::kIrecv>, p::noDevice<p::kIflush>,        \
      p::noDevice<p::kTest>, p::noDevice<p::kCloseSend>, p::noDevice<p::kCloseRecv>,  \
      p::noDevice<p::kCloseListen>
#define PILOT_NET_DEVICE_MR p::noDevice<p::kGetDeviceMr>, p::noDevice<p::kIrecvConsumed>

extern "C" {
PILOT_EXPORT ncclNet_v6_t ncclNetPlugin_v6 = {p::kNetName, p::initOnce, p::devices,
                                              p::noDevice<p::kGetProperties>, PILOT_NET_COMMON};
PILOT_EXPORT ncclNet_v7_t ncclNetPlugin_v7 = {p::kNetName,      p::initOnce,
                                              p::devices,       p::noDevice<p::kGetProperties>,
                                              PILOT_NET_COMMON, PILOT_NET_DEVICE_MR};
PILOT_EXPORT ncclNet_v8_t ncclNetPlugin_v8 = {p::kNetName,      p::initOnce,
                                              p::devices,       p::noDevice<p::kGetProperties>,
                                              PILOT_NET_COMMON, PILOT_NET_DEVICE_MR};
PILOT_EXPORT ncclNet_v9_t ncclNetPlugin_v9 = {p::kNetName,
                                              p::initOnce,
                                              p::devices,
                                              p::noDevice<p::kGetProperties>,
                                              PILOT_NET_COMMON,
                                              PILOT_NET_DEVICE_MR,
                                              p::noDevice<p::kMakeVDevice>};
PILOT_EXPORT ncclNet_v10_t ncclNetPlugin_v10 = {p::kNetName,
                                                p::initV10,
                                                p::devices,
                                                p::noDevice<p::kGetProperties>,
                                                PILOT_NET_COMMON,
                                                PILOT_NET_DEVICE_MR,
                                                p::noDevice<p::kMakeVDevice>};
PILOT_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {p::kNetName,
                                                p::initPerComm<ncclNetCommConfig_v11_t>,
                                                p::devices,
                                                p::noDevice<p::kGetProperties>,
                                                PILOT_NET_COMMON,
                                                PILOT_NET_DEVICE_MR,
                                                p::noDevice<p::kMakeVDevice>,
                                                p::finalize,
                                                p::noDevice<p::kSetNetAttr>};
PILOT_EXPORT ncclNet_v12_t ncclNetPlugin_v12 = {p::kNetName,
                                                p::initPerComm<ncclNetCommConfig_v12_t>,
                                                p::devices,
                                                p::noDevice<p::kGetProperties>,
                                                PILOT_NET_COMMON,
                                                PILOT_NET_DEVICE_MR,
                                                p::noDevice<p::kMakeVDevice>,
                                                p::finalize,
                                                p::noDevice<p::kSetNetAttr>};
}
