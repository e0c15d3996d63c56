#include "pilot/metrics/group_table.h"

#include "pilot/core/mix.h"

namespace pilot::metrics::detail {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;
constexpr auto kAcquire = std::memory_order_acquire;
constexpr auto kRelease = std::memory_order_release;
constexpr auto kAcqRel = std::memory_order_acq_rel;

// Handle layout: magic (8 bits, another than the event path's slots) | ticket (56 bits). A
// ticket is the opening thread's serial (16 bits, from 1) and its count of groups (40 bits).
constexpr uint64_t kMagic = 0xB8;
constexpr uint64_t kCountBits = 40;
constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
constexpr uint32_t kClosed = 1u << 31;
constexpr uint32_t kProbes = 8;

std::atomic<uint64_t> threadSerials{0};

/// The group this thread has open (NCCL opens, fills and closes a group on one thread).
struct OpenGroup {
  uint64_t ticket;
  CommMonitor* comm;
  uint32_t entry;     // GroupTable::kNone until a Send/Recv claims one
  bool claimFailed;   // no entry was free (counted then): the group's operations go alone
  GroupTable* table;  // the table the entry belongs to
};

/// Plain data in one thread_local (one __tls_get_addr per call; glibc sets a thread's block up
/// at its first access, once): the thread's serial, its count of groups, its open group.
struct ThreadGroups {
  uint64_t serial;
  uint64_t count;
  OpenGroup open;
};
thread_local ThreadGroups tGroups;  // zero-initialized: no serial yet, no group open

uint64_t nextTicket(ThreadGroups& t) {
  if (t.serial == 0) t.serial = threadSerials.fetch_add(1, kRelaxed) % 0xffff + 1;
  t.count = (t.count + 1) & kCountMask;
  if (t.count == 0) t.count = 1;
  return t.serial << kCountBits | t.count;
}

}  // namespace

bool GroupTable::isGroupHandle(const void* handle) {
  return (static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)) >> 56) == kMagic;
}

uint64_t GroupTable::ticketOf(const void* handle) {
  if (!isGroupHandle(handle)) return 0;
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)) & ((uint64_t{1} << 56) - 1);
}

void* GroupTable::open(CommMonitor& comm) {
  ThreadGroups& t = tGroups;
  OpenGroup& tOpen = t.open;
  // A group this thread left open (NCCL never does; a profiler stop lost on another thread
  // could) is closed now, so its entry cannot stay taken.
  if (tOpen.ticket != 0 && tOpen.entry != kNone && tOpen.table != nullptr) {
    tOpen.table->closeEntry(tOpen.table->entries_[tOpen.entry]);
  }
  const uint64_t ticket = nextTicket(t);
  tOpen = OpenGroup{ticket, &comm, kNone, false, this};
  return reinterpret_cast<void*>(static_cast<uintptr_t>(kMagic << 56 | ticket));
}

void GroupTable::close(void* handle) {
  const uint64_t ticket = ticketOf(handle);
  OpenGroup& tOpen = tGroups.open;
  // Only the opening thread closes: another thread's stop cannot tell whether the entry it
  // would look up is still this group's (the opener closes it at its next open instead).
  if (ticket == 0 || tOpen.ticket != ticket || tOpen.table != this) return;
  const OpenGroup was = tOpen;
  tOpen = OpenGroup{};
  if (was.entry != kNone) closeEntry(entries_[was.entry]);
}

uint32_t GroupTable::join(void* handle, CommMonitor& comm) {
  const uint64_t ticket = ticketOf(handle);
  OpenGroup& tOpen = tGroups.open;
  if (ticket == 0 || tOpen.ticket != ticket || tOpen.comm != &comm || tOpen.table != this ||
      tOpen.claimFailed) {
    return kNone;
  }
  if (tOpen.entry == kNone) {
    const uint32_t home = static_cast<uint32_t>(mix64(ticket) % kEntries);
    for (uint32_t probe = 0; probe < kProbes && tOpen.entry == kNone; ++probe) {
      const uint32_t i = (home + probe) % kEntries;
      uint64_t free = 0;
      if (entries_[i].owner.compare_exchange_strong(free, ticket, kAcqRel, kRelaxed)) {
        Entry& e = entries_[i];
        e.operations = e.sends = e.recvs = 0;
        e.sendHash = e.recvHash = e.bytesSent = 0;
        e.channels = 0;
        e.timed.store(0, kRelaxed);
        e.spoiled.store(0, kRelaxed);
        e.firstStart.store(UINT64_MAX, kRelaxed);
        e.lastStop.store(0, kRelaxed);
        comm.retain();
        e.comm.store(&comm, kRelaxed);
        e.state.store(1, kRelease);  // the open group's reference
        inUse_.fetch_add(1, kRelaxed);
        tOpen.entry = i;
      }
    }
    if (tOpen.entry == kNone) {
      tOpen.claimFailed = true;
      comm.countGroup(GroupOutcome::Untracked);
      return kNone;
    }
  }
  // Open on this thread, so not closed: the operation's reference cannot race the finish.
  entries_[tOpen.entry].state.fetch_add(1, kAcqRel);
  return tOpen.entry;
}

void GroupTable::addOperation(uint32_t entry, Operation op, int peer, uint64_t bytes,
                              unsigned channels) {
  Entry& e = entries_[entry];
  ++e.operations;
  if (channels > e.channels) e.channels = channels;
  const CommMonitor* comm = e.comm.load(kRelaxed);
  if (peer == comm->identity().rank) return;  // a copy to itself crosses no link
  const uint64_t term = CommMonitor::peerHash(peer);
  if (op == Operation::Send) {
    ++e.sends;
    e.sendHash += term;
    e.bytesSent += bytes;
  } else {
    ++e.recvs;
    e.recvHash += term;
  }
}

void GroupTable::addTimes(uint32_t entry, uint64_t firstStart, uint64_t lastStop) {
  Entry& e = entries_[entry];
  uint64_t v = e.firstStart.load(kRelaxed);
  while (firstStart < v && !e.firstStart.compare_exchange_weak(v, firstStart, kRelaxed)) {
  }
  v = e.lastStop.load(kRelaxed);
  while (lastStop > v && !e.lastStop.compare_exchange_weak(v, lastStop, kRelaxed)) {
  }
  e.timed.fetch_add(1, kRelaxed);
}

void GroupTable::spoil(uint32_t entry) {
  entries_[entry].spoiled.store(1, kRelaxed);
}

void GroupTable::drop(uint32_t entry) {
  release(entries_[entry], 1);
}

void GroupTable::closeEntry(Entry& e) {
  uint32_t s = e.state.load(kAcquire);
  do {
    if (s & kClosed) return;
  } while (!e.state.compare_exchange_weak(s, (s | kClosed) - 1, kAcqRel, kAcquire));
  if (((s | kClosed) - 1) == kClosed) finish(e);
}

void GroupTable::release(Entry& e, uint32_t references) {
  if (e.state.fetch_sub(references, kAcqRel) - references == kClosed) finish(e);
}

void GroupTable::finish(Entry& e) {
  CommMonitor* comm = e.comm.exchange(nullptr, kAcqRel);
  const int n = comm->identity().nRanks;
  const uint64_t first = e.firstStart.load(kRelaxed), last = e.lastStop.load(kRelaxed);
  const uint32_t others = n > 1 ? static_cast<uint32_t>(n - 1) : 0;
  const bool exchange = others > 0 && e.sends == others && e.recvs == others &&
                        e.sendHash == comm->peerHashOfOthers() &&
                        e.recvHash == comm->peerHashOfOthers();
  const bool timed =
      e.spoiled.load(kRelaxed) == 0 && e.timed.load(kRelaxed) == e.operations && last > first;
  if (exchange && timed) {
    KeyFields key;
    key.op = Operation::AlltoAll;
    key.algorithm = kGroupedP2pAlgorithm;
    key.protocol = kUnknownProtocol;
    key.channels = static_cast<uint8_t>(e.channels);
    Completion c;
    c.timeNs = last - first;
    c.messageBytes = e.bytesSent / others;  // per peer, as ncclAlltoAll's count
    c.busBytes = static_cast<double>(e.bytesSent);
    key.bucket = static_cast<uint8_t>(sizeBucket(c.messageBytes));
    comm->aggregate(comm->keyIndex(key.pack())).record(c);
    comm->countGroup(GroupOutcome::AlltoAll);
  } else {
    comm->countGroup(GroupOutcome::Partial);
  }
  e.state.store(0, kRelaxed);
  inUse_.fetch_sub(1, kRelaxed);
  e.owner.store(0, kRelease);  // free: the next claim's acquire sees the reset above
  comm->release();
}

}  // namespace pilot::metrics::detail
