// A fake NCCL for the profiler ABI: loads the built module as NCCL does (dlopen RTLD_NOW |
// RTLD_LOCAL, the newest ncclProfiler_vN it is told to use) and emits a kernel plan's events in
// NCCL's order (src/plugin/profiler.cc, src/enqueue.cc, 2.27 .. 2.30):
//   host thread   [v5+] GroupApi start, per task its CollApi or P2pApi start (and stop, for a
//                 P2pApi)                (NCCL sends these parents along whenever Coll, P2p or
//                                         KernelCh is asked for; v4 sees no API events)
//                 Group start
//                 per task: Coll or P2p start (v4: parent = the group; v5+: parentGroup = the
//                 group, parent = its API event), then their stops ("enqueued")
//                 Group stop, [v5+] API stops
//   proxy thread  per channel: KernelCh start (parent = the task's handle, GPU start, the id of
//                 the channel it ran on), recordEventState(KernelChStop, GPU stop), KernelCh stop
// NCCL 2.27 (v4) starts a plan's task events only when its Group got a handle; 2.28+ always.
// Events NCCL would not send for the activation mask the plugin returned are not sent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler_host_abi.h"

namespace fakeprof {

/// Every line the plugin logged through the logger NCCL passes (thread-safe).
std::vector<std::string> loggedLines();
void clearLog();
void captureLog(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                const char* fmt, ...);

class Module {
 public:
  explicit Module(const std::string& path);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  /// NCCL's dlclose when its profiler refcount drops to zero.
  void unload();

  bool ok() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  const ncclProfiler_v4_t* v4 = nullptr;
  const ncclProfiler_v5_t* v5 = nullptr;
  const ncclProfiler_v6_t* v6 = nullptr;

 private:
  void* handle_ = nullptr;
  std::string error_;
};

struct ChannelTimes {
  uint64_t startNs = 0, stopNs = 0;  ///< GPU globaltimer values; 0 = none reported
  bool recordStop = true;            ///< false: no KernelChStop state before the stop
};

struct Collective {
  std::string func = "AllReduce";
  size_t count = 0;
  std::string datatype = "ncclFloat32";
  std::string algo = "RING";
  std::string proto = "SIMPLE";
  uint64_t seqNumber = 0;
  bool graphCaptured = false;          ///< v5+: the CollApi event says so
  std::vector<ChannelTimes> channels;  ///< one per channel NCCL runs it on
  int firstChannel = 0;  ///< the id of the first (NCCL packs a plan's collectives on channels)
};

/// A Send or Recv of a group; NCCL spreads its channels over the communicator's P2P channels.
struct P2p {
  std::string func = "Send";
  size_t count = 0;
  std::string datatype = "ncclInt8";
  int peer = 0;
  std::vector<ChannelTimes> channels;
  int firstChannel = 0;
};

/// The files in `dir` whose names end in `suffix`.
std::vector<std::string> filesIn(const std::string& dir, const std::string& suffix);

/// A collective's channels, each taking `ns` times (1 - step * channel), from `start` on:
/// channel 0 is the longest, so the collective takes exactly `ns`.
std::vector<ChannelTimes> channelsTaking(int nChannels, uint64_t ns, uint64_t start,
                                         double step = 0.02);

class Comm {
 public:
  /// init through ABI version `abi` (4, 5 or 6).
  Comm(const Module& module, int abi, uint64_t commId, const std::string& name, int nNodes,
       int nRanks, int rank, ncclDebugLogger_t logger = captureLog);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  ncclResult_t initResult() const { return initResult_; }
  int mask() const { return mask_; }
  void* context() const { return context_; }
  int abi() const { return abi_; }
  int nRanks() const { return nRanks_; }

  /// The host side of one collective; returns the handle the proxy gets (the Coll's).
  void* enqueue(const Collective& c);
  /// The Coll start alone (its stop comes with stopColl), for tests of odd orders.
  void* startColl(const Collective& c, void* parent = nullptr);
  void stopColl(void* handle);
  /// The proxy side of one channel (nothing when the mask has no KernelCh).
  void kernelChannel(void* collHandle, int channel, const ChannelTimes& t);
  void kernels(void* collHandle, const Collective& c);
  /// The host side of one group of Send/Recv operations: each one's handle. NCCL runs it as
  /// `plans` kernel plans (consecutive slices of `ops`, each its own Group event) when the work
  /// does not fit one (src/enqueue.cc scheduleP2pTasksToPlan); [v5+] under one GroupApi event,
  /// each operation's P2pApi its parent.
  std::vector<void*> enqueueGroup(const std::vector<P2p>& ops, size_t plans = 1);
  void kernels(void* p2pHandle, const P2p& op);
  /// A raw startEvent with the given type and parent; returns the handle.
  void* startRaw(uint64_t type, void* parent, int channel = 0, uint64_t pTimer = 0, pid_t pid = 0);
  void stopRaw(void* handle);
  /// A ProxyOp of this process's proxy (NCCL's src/proxy.cc): one channel's send to or receive
  /// from `peer` of the task `parent`, in `nSteps` network steps.
  void* startProxyOp(void* parent, int channel, int peer, bool send, int nSteps);
  /// A ProxyStep under the ProxyOp `proxyOp` (null when the plugin gave that op no handle: NCCL
  /// sends the step anyway when the mask asks for steps), its network step number `step`.
  void* startProxyStep(void* proxyOp, int step);
  void recordRaw(void* handle, ncclProfilerEventState_t state, uint64_t pTimer);

  void finalize();

 private:
  template <typename Descr>
  void* start(Descr& d);
  /// A zeroed descriptor of this ABI's layout (v4, or v6 of which v5 is the prefix), filled by
  /// `fill` (a generic lambda) and started.
  template <typename Fill>
  void* startFilled(Fill fill);

  const Module& module_;
  int abi_;
  int nRanks_;
  int rank_;
  pid_t pid_;  ///< NCCL's proxy keeps its pid (src/plugin/profiler.cc): no getpid per event
  ncclResult_t initResult_ = ncclInternalError;
  int mask_ = 0;
  void* context_ = nullptr;
  bool finalized_ = false;
};

}  // namespace fakeprof
