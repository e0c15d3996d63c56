// NCCL's profiler events on the metrics layer's event path, as the tests of tests/metrics send
// them: a communicator's monitor, a task's start (a collective; a Send or Recv in a group,
// [v5+] under a user group's P2pApi), one kernel channel from start to stop.
#pragma once

#include <cstdint>

#include "pilot/metrics/event_path.h"

namespace pilot::metrics::events {

/// A GPU globaltimer value (ns) to start the tests' channel times from.
constexpr uint64_t kStart = 1'000'000;

/// A monitor of rank `rank` of `nRanks`, measuring everything; its creator holds one reference.
inline CommMonitor* newMonitor(int nRanks = 4, int rank = 0) {
  MetricsSettings settings;
  settings.enabled = true;
  CommIdentity id;
  id.nRanks = nRanks;
  id.rank = rank;
  return new CommMonitor(id, settings, {});
}

/// startEvent(Coll) of a float32 all-reduce of `count` elements on `channels` channels.
inline void* startAllReduce(EventPath& path, CommMonitor& comm, unsigned channels, uint64_t seq = 0,
                            size_t count = 1 << 16, const char* proto = "SIMPLE") {
  CollEvent e;
  e.seqNumber = seq;
  e.func = "AllReduce";
  e.count = count;
  e.datatype = "ncclFloat32";
  e.nChannels = channels;
  e.algo = "RING";
  e.proto = proto;
  return path.startCollective(comm, e);
}

/// startEvent(P2p) of a `func` ("Send", "Recv") of `bytes` with `peer` on `channels` channels,
/// in `group` (a Group handle, or null), its parent `operation` (a P2pApi handle, or null).
inline void* startSendRecv(EventPath& path, CommMonitor& comm, const char* func, int peer,
                           void* group, void* operation = nullptr, size_t bytes = 1 << 16,
                           unsigned channels = 1) {
  P2pEvent e;
  e.func = func;
  e.count = bytes;
  e.datatype = "ncclInt8";
  e.peer = peer;
  e.nChannels = channels;
  e.group = group;
  e.operation = operation;
  return path.startP2p(comm, e);
}

/// One kernel channel of `task` with NCCL's channel `id`: its start at `start`, its stop state
/// `ns` later, its stop. False when the channel got no handle.
inline bool runChannel(EventPath& path, void* task, unsigned id, uint64_t start, uint64_t ns) {
  void* k = path.startKernelChannel(task, id, start);
  if (k == nullptr) return false;
  path.recordKernelChannelStop(k, start + ns);
  path.stop(k);
  return true;
}

}  // namespace pilot::metrics::events
