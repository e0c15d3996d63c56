#include "profiler_host.h"

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace fakeprof {
namespace {

std::mutex logMutex;
std::vector<std::string>& logLines() {
  static std::vector<std::string> lines;
  return lines;
}

}  // namespace

void captureLog(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  char buffer[4096];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  const char* tag = level == NCCL_LOG_WARN ? "WARN " : level == NCCL_LOG_INFO ? "INFO " : "TRACE ";
  std::lock_guard<std::mutex> lock(logMutex);
  logLines().push_back(std::string(tag) + buffer);
}

std::vector<std::string> loggedLines() {
  std::lock_guard<std::mutex> lock(logMutex);
  return logLines();
}

void clearLog() {
  std::lock_guard<std::mutex> lock(logMutex);
  logLines().clear();
}

Module::Module(const std::string& path) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    error_ = dlerror();
    return;
  }
  v4 = static_cast<const ncclProfiler_v4_t*>(dlsym(handle_, "ncclProfiler_v4"));
  v5 = static_cast<const ncclProfiler_v5_t*>(dlsym(handle_, "ncclProfiler_v5"));
  v6 = static_cast<const ncclProfiler_v6_t*>(dlsym(handle_, "ncclProfiler_v6"));
}

Module::~Module() {
  unload();
}

void Module::unload() {
  if (handle_ != nullptr) dlclose(handle_);
  handle_ = nullptr;
  v4 = nullptr;
  v5 = nullptr;
  v6 = nullptr;
}

std::vector<std::string> filesIn(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(dir + "/" + name);
    }
  }
  closedir(d);
  return out;
}

std::vector<ChannelTimes> channelsTaking(int nChannels, uint64_t ns, uint64_t start, double step) {
  std::vector<ChannelTimes> out;
  for (int c = 0; c < nChannels; ++c) {
    const uint64_t length = static_cast<uint64_t>(static_cast<double>(ns) * (1.0 - step * c));
    const uint64_t begin = start + static_cast<uint64_t>(c) * 100;  // channels start apart
    out.push_back({begin, begin + length, true});
  }
  return out;
}

Comm::Comm(const Module& module, int abi, uint64_t commId, const std::string& name, int nNodes,
           int nRanks, int rank, ncclDebugLogger_t logger)
    : module_(module), abi_(abi), nRanks_(nRanks), rank_(rank), pid_(::getpid()) {
  const char* commName = name.empty() ? nullptr : name.c_str();
  if (abi == 4 && module.v4) {
    initResult_ =
        module.v4->init(&context_, &mask_, commName, commId, nNodes, nRanks, rank, logger);
  } else if (abi == 5 && module.v5) {
    initResult_ =
        module.v5->init(&context_, commId, &mask_, commName, nNodes, nRanks, rank, logger);
  } else if (abi == 6 && module.v6) {
    initResult_ =
        module.v6->init(&context_, commId, &mask_, commName, nNodes, nRanks, rank, logger);
  }
  // NCCL unloads the plugin for a communicator whose init fails, and then sends no events.
  if (initResult_ != ncclSuccess) mask_ = 0;
}

Comm::~Comm() {
  finalize();
}

void Comm::finalize() {
  if (finalized_ || initResult_ != ncclSuccess) return;
  finalized_ = true;
  if (context_ == nullptr) return;  // NCCL finalizes only a context the plugin gave it
  if (abi_ == 4) module_.v4->finalize(context_);
  if (abi_ == 5) module_.v5->finalize(context_);
  if (abi_ == 6) module_.v6->finalize(context_);
}

template <typename Descr>
void* Comm::start(Descr& d) {
  void* handle = nullptr;
  if (abi_ == 4)
    module_.v4->startEvent(context_, &handle, reinterpret_cast<ncclProfilerEventDescr_v4_t*>(&d));
  if (abi_ == 5)
    module_.v5->startEvent(context_, &handle, reinterpret_cast<ncclProfilerEventDescr_v5_t*>(&d));
  if (abi_ == 6)
    module_.v6->startEvent(context_, &handle, reinterpret_cast<ncclProfilerEventDescr_v6_t*>(&d));
  return handle;
}

void Comm::stopRaw(void* handle) {
  if (handle == nullptr) return;  // NCCL checks the handle before every stop
  if (abi_ == 4) module_.v4->stopEvent(handle);
  if (abi_ == 5) module_.v5->stopEvent(handle);
  if (abi_ == 6) module_.v6->stopEvent(handle);
}

void Comm::recordRaw(void* handle, ncclProfilerEventState_t state, uint64_t pTimer) {
  if (handle == nullptr) return;
  ncclProfilerEventStateArgs_t args;
  std::memset(&args, 0, sizeof args);
  args.kernelCh.pTimer = pTimer;
  if (abi_ == 4) module_.v4->recordEventState(handle, state, &args);
  if (abi_ == 5) module_.v5->recordEventState(handle, state, &args);
  if (abi_ == 6) module_.v6->recordEventState(handle, state, &args);
}

template <typename Fill>
void* Comm::startFilled(Fill fill) {
  if (abi_ == 4) {
    ncclProfilerEventDescr_v4_t d;
    std::memset(&d, 0, sizeof d);
    fill(d);
    return start(d);
  }
  ncclProfilerEventDescr_v6_t d;  // v5 is its prefix
  std::memset(&d, 0, sizeof d);
  fill(d);
  return start(d);
}

void* Comm::startProxyOp(void* parent, int channel, int peer, bool send, int nSteps) {
  auto fill = [&](auto& d) {
    d.type = ncclProfileProxyOp;
    d.parentObj = parent;
    d.rank = rank_;
    d.proxyOp.pid = pid_;
    d.proxyOp.channelId = static_cast<uint8_t>(channel);
    d.proxyOp.peer = peer;
    d.proxyOp.nSteps = nSteps;
    d.proxyOp.chunkSize = 1 << 19;
    d.proxyOp.isSend = send ? 1 : 0;
  };
  return startFilled(fill);
}

void* Comm::startProxyStep(void* proxyOp, int step) {
  auto fill = [&](auto& d) {
    d.type = ncclProfileProxyStep;
    d.parentObj = proxyOp;
    d.rank = rank_;
    d.proxyStep.step = step;
  };
  return startFilled(fill);
}

void* Comm::startRaw(uint64_t type, void* parent, int channel, uint64_t pTimer, pid_t pid) {
  if (abi_ == 4) {
    ncclProfilerEventDescr_v4_t d;
    std::memset(&d, 0, sizeof d);
    d.type = static_cast<uint8_t>(type);
    d.parentObj = parent;
    d.rank = rank_;
    if (type == ncclProfileKernelCh) {
      d.kernelCh.channelId = static_cast<uint8_t>(channel);
      d.kernelCh.pTimer = pTimer;
    } else if (type == ncclProfileProxyOp) {
      d.proxyOp.pid = pid;
      d.proxyOp.channelId = static_cast<uint8_t>(channel);
    }
    return start(d);
  }
  ncclProfilerEventDescr_v6_t d;  // v5 is its prefix
  std::memset(&d, 0, sizeof d);
  d.type = type;
  d.parentObj = parent;
  d.rank = rank_;
  if (type == ncclProfileKernelCh) {
    d.kernelCh.channelId = static_cast<uint8_t>(channel);
    d.kernelCh.pTimer = pTimer;
  } else if (type == ncclProfileProxyOp) {
    d.proxyOp.pid = pid;
    d.proxyOp.channelId = static_cast<uint8_t>(channel);
  }
  return start(d);
}

void* Comm::startColl(const Collective& c, void* parent) {
  if (!(mask_ & ncclProfileColl)) return nullptr;
  if (abi_ == 4) {
    ncclProfilerEventDescr_v4_t d;
    std::memset(&d, 0, sizeof d);
    d.type = ncclProfileColl;
    d.parentObj = parent;  // v4: the group (NCCL's v4 shim passes parentGroup here)
    d.rank = rank_;
    d.coll.seqNumber = c.seqNumber;
    d.coll.func = c.func.c_str();
    d.coll.count = c.count;
    d.coll.datatype = c.datatype.c_str();
    d.coll.nChannels = static_cast<uint8_t>(c.channels.size());
    d.coll.nWarps = 16;
    d.coll.algo = c.algo.c_str();
    d.coll.proto = c.proto.c_str();
    return start(d);
  }
  ncclProfilerEventDescr_v6_t d;
  std::memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.parentObj = parent;
  d.rank = rank_;
  d.coll.seqNumber = c.seqNumber;
  d.coll.func = c.func.c_str();
  d.coll.count = c.count;
  d.coll.datatype = c.datatype.c_str();
  d.coll.nChannels = static_cast<uint8_t>(c.channels.size());
  d.coll.nWarps = 16;
  d.coll.algo = c.algo.c_str();
  d.coll.proto = c.proto.c_str();
  return start(d);
}

void Comm::stopColl(void* handle) {
  stopRaw(handle);
}

void* Comm::enqueue(const Collective& c) {
  if (mask_ == 0) return nullptr;
  void* groupApi = nullptr;
  void* collApi = nullptr;
  if (abi_ >= 5) {
    // NCCL starts the API parents for any mask that holds Coll (groupApiMask, collApiMask).
    ncclProfilerEventDescr_v6_t g;
    std::memset(&g, 0, sizeof g);
    g.type = ncclProfileGroupApi;
    g.groupApi.groupDepth = 1;
    groupApi = start(g);
    ncclProfilerEventDescr_v6_t a;
    std::memset(&a, 0, sizeof a);
    a.type = ncclProfileCollApi;
    a.parentObj = groupApi;
    a.collApi.func = c.func.c_str();
    a.collApi.count = c.count;
    a.collApi.datatype = c.datatype.c_str();
    a.collApi.graphCaptured = c.graphCaptured;
    collApi = start(a);
    if (groupApi != nullptr) recordRaw(groupApi, ncclProfilerGroupStartApiStop, 0);
  }
  void* group = startRaw(ncclProfileGroup, nullptr);
  void* coll = nullptr;
  if (abi_ == 4) {
    if (group != nullptr) coll = startColl(c, group);  // 2.27: no group handle, no task events
  } else {
    ncclProfilerEventDescr_v6_t d;
    std::memset(&d, 0, sizeof d);
    d.type = ncclProfileColl;
    d.parentObj = collApi;
    d.rank = rank_;
    d.coll.seqNumber = c.seqNumber;
    d.coll.func = c.func.c_str();
    d.coll.count = c.count;
    d.coll.datatype = c.datatype.c_str();
    d.coll.nChannels = static_cast<uint8_t>(c.channels.size());
    d.coll.nWarps = 16;
    d.coll.algo = c.algo.c_str();
    d.coll.proto = c.proto.c_str();
    d.coll.parentGroup = group;
    coll = (mask_ & ncclProfileColl) ? start(d) : nullptr;
  }
  stopColl(coll);  // "enqueued": the kernel has not run yet
  stopRaw(group);
  stopRaw(collApi);
  stopRaw(groupApi);
  return coll;
}

void Comm::kernelChannel(void* collHandle, int channel, const ChannelTimes& t) {
  if (!(mask_ & ncclProfileKernelCh)) return;
  // NCCL starts a KernelCh for every channel of a profiled task, whatever the parent handle.
  void* k = startRaw(ncclProfileKernelCh, collHandle, channel, t.startNs);
  if (k == nullptr) return;
  if (t.recordStop) recordRaw(k, ncclProfilerKernelChStop, t.stopNs);
  stopRaw(k);
}

void Comm::kernels(void* collHandle, const Collective& c) {
  for (size_t ch = 0; ch < c.channels.size(); ++ch) {
    kernelChannel(collHandle, c.firstChannel + static_cast<int>(ch), c.channels[ch]);
  }
}

std::vector<void*> Comm::enqueueGroup(const std::vector<P2p>& ops, size_t plans) {
  std::vector<void*> handles(ops.size(), nullptr);
  if (mask_ == 0) return handles;
  void* groupApi = nullptr;
  std::vector<void*> apis(ops.size(), nullptr);
  if (abi_ >= 5) {
    // ncclSend/ncclRecv each start and stop their P2pApi event at the API call, under the
    // user's GroupApi event.
    ncclProfilerEventDescr_v6_t g;
    std::memset(&g, 0, sizeof g);
    g.type = ncclProfileGroupApi;
    g.groupApi.groupDepth = 2;
    groupApi = start(g);
    if (groupApi != nullptr) recordRaw(groupApi, ncclProfilerGroupStartApiStop, 0);
    for (size_t i = 0; i < ops.size(); ++i) {
      ncclProfilerEventDescr_v6_t a;
      std::memset(&a, 0, sizeof a);
      a.type = ncclProfileP2pApi;
      a.parentObj = groupApi;
      a.p2pApi.func = ops[i].func.c_str();
      a.p2pApi.count = ops[i].count;
      a.p2pApi.datatype = ops[i].datatype.c_str();
      apis[i] = start(a);
      stopRaw(apis[i]);  // NCCL keeps the (now stale) handle as the task's parent
    }
  }
  plans = std::max<size_t>(1, std::min(plans, ops.size()));
  for (size_t plan = 0; plan < plans; ++plan) {
    const size_t first = ops.size() * plan / plans, last = ops.size() * (plan + 1) / plans;
    void* group = startRaw(ncclProfileGroup, nullptr);
    const bool tasks = abi_ >= 5 || group != nullptr;  // 2.27 starts none without a group handle
    for (size_t i = first; tasks && i < last; ++i) {
      const P2p& op = ops[i];
      if (abi_ == 4) {
        ncclProfilerEventDescr_v4_t d;
        std::memset(&d, 0, sizeof d);
        d.type = ncclProfileP2p;
        d.parentObj = group;
        d.rank = rank_;
        d.p2p.func = op.func.c_str();
        d.p2p.count = op.count;
        d.p2p.datatype = op.datatype.c_str();
        d.p2p.peer = op.peer;
        d.p2p.nChannels = static_cast<uint8_t>(op.channels.size());
        handles[i] = start(d);
      } else {
        ncclProfilerEventDescr_v6_t d;
        std::memset(&d, 0, sizeof d);
        d.type = ncclProfileP2p;
        d.parentObj = apis[i];
        d.rank = rank_;
        d.p2p.func = op.func.c_str();
        d.p2p.count = op.count;
        d.p2p.datatype = op.datatype.c_str();
        d.p2p.peer = op.peer;
        d.p2p.nChannels = static_cast<uint8_t>(op.channels.size());
        d.p2p.parentGroup = group;
        handles[i] = start(d);
      }
    }
    for (size_t i = first; i < last; ++i) stopRaw(handles[i]);
    stopRaw(group);
  }
  stopRaw(groupApi);
  return handles;
}

void Comm::kernels(void* p2pHandle, const P2p& op) {
  for (size_t ch = 0; ch < op.channels.size(); ++ch) {
    kernelChannel(p2pHandle, op.firstChannel + static_cast<int>(ch), op.channels[ch]);
  }
}

}  // namespace fakeprof
