#include "pilot/metrics/group_table.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "memory_order.h"
#include "pilot/core/mix.h"

namespace pilot::metrics::detail {
namespace {

// Handle layout: magic (8 bits, others than the event path's slots) | ticket (56 bits). A
// ticket is the opening thread's serial (16 bits, from 1) and its count of groups (40 bits).
// A Group (one plan), a GroupApi (the user's group) and a P2pApi (carrying its GroupApi's
// ticket) each have their magic.
constexpr uint64_t kPlanMagic = 0xB8;
constexpr uint64_t kUserMagic = 0xB9;
constexpr uint64_t kOperationMagic = 0xBA;
constexpr uint64_t kTicketMask = (uint64_t{1} << 56) - 1;
constexpr uint64_t kCountBits = 40;
constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
constexpr uint32_t kClosed = 1u << 31;
constexpr uint32_t kProbes = 8;

std::atomic<uint64_t> threadSerials{0};

uint64_t magicOf(const void* handle) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)) >> 56;
}

uint64_t ticketIn(const void* handle, uint64_t magic) {
  const uint64_t h = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
  return (h >> 56) == magic ? h & kTicketMask : 0;
}

void* handleOf(uint64_t magic, uint64_t ticket) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(magic << 56 | ticket));
}

}  // namespace

/// A group open on this thread: a plan's (Group) or the user's (GroupApi).
struct GroupTable::Claim {
  uint64_t ticket;
  CommMonitor* comm;
  uint32_t entry;     // kNone until a Send/Recv claims one
  bool claimFailed;   // no entry was free (counted then): the group's operations go alone
  GroupTable* table;  // the table the entry belongs to
};

namespace {

/// Plain data in one thread_local (one __tls_get_addr per call; glibc sets a thread's block up
/// at its first access, once): the thread's serial and id, its counts of plans' and of user
/// groups (each kind sampled by its own count), its open groups.
struct ThreadGroups {
  uint64_t serial;
  uint64_t plans, users;
  int tid;
  GroupTable::Claim plan, user;
};
thread_local ThreadGroups tGroups;  // zero-initialized: no serial yet, no group open

uint64_t nextTicket(ThreadGroups& t, uint64_t& count) {
  if (t.serial == 0) {
    t.serial = threadSerials.fetch_add(1, kRelaxed) % 0xffff + 1;
    t.tid = static_cast<int>(::syscall(SYS_gettid));
  }
  count = (count + 1) & kCountMask;
  if (count == 0) count = 1;
  return t.serial << kCountBits | count;
}

}  // namespace

bool GroupTable::isGroupHandle(const void* handle) {
  const uint64_t magic = magicOf(handle);
  return magic == kPlanMagic || magic == kUserMagic || magic == kOperationMagic;
}

uint64_t GroupTable::ticketOf(const void* handle) {
  return ticketIn(handle, kPlanMagic);
}

uint64_t GroupTable::sequenceOf(const void* planGroup, const void* operation) {
  const uint64_t user = ticketIn(operation, kOperationMagic);
  return user != 0 ? user : ticketIn(planGroup, kPlanMagic);
}

void GroupTable::setThreadGroupCount(uint64_t count) {
  tGroups.plans = tGroups.users = count & kCountMask;
}

void* GroupTable::openOn(Claim& group, uint64_t& count, uint64_t magic, CommMonitor& comm) {
  // A group this thread left open (NCCL never does; a profiler stop lost on another thread
  // could) is closed now, so its entry cannot stay taken.
  if (group.ticket != 0 && group.entry != kNone && group.table != nullptr) {
    group.table->leftOpen_.fetch_add(1, kRelaxed);
    group.table->closeEntry(group.table->entries_[group.entry]);
  }
  const uint64_t ticket = nextTicket(tGroups, count);
  group = Claim{ticket, &comm, kNone, false, this};
  return handleOf(magic, ticket);
}

void* GroupTable::open(CommMonitor& comm) {
  return openOn(tGroups.plan, tGroups.plans, kPlanMagic, comm);
}

void* GroupTable::openUserGroup(CommMonitor& comm) {
  return openOn(tGroups.user, tGroups.users, kUserMagic, comm);
}

void* GroupTable::userOperation(const void* groupApi) {
  const uint64_t ticket = ticketIn(groupApi, kUserMagic);
  return ticket != 0 ? handleOf(kOperationMagic, ticket) : nullptr;
}

void GroupTable::close(void* handle) {
  const uint64_t magic = magicOf(handle);
  if (magic != kPlanMagic && magic != kUserMagic) return;  // a P2pApi's stop changes nothing
  Claim& open = magic == kPlanMagic ? tGroups.plan : tGroups.user;
  // Only the opening thread closes: another thread's stop cannot tell whether the entry it
  // would look up is still this group's (the opener closes it at its next open instead, or
  // the sweep once the opener has exited).
  if (ticketIn(handle, magic) != open.ticket || open.table != this) return;
  const Claim was = open;
  open = Claim{};
  if (was.entry != kNone) closeEntry(entries_[was.entry]);
}

uint32_t GroupTable::claim(Claim& group, CommMonitor& comm) {
  const uint32_t home = static_cast<uint32_t>(mix64(group.ticket) % kEntries);
  for (uint32_t probe = 0; probe < kProbes; ++probe) {
    const uint32_t i = (home + probe) % kEntries;
    uint64_t free = 0;
    if (entries_[i].owner.compare_exchange_strong(free, group.ticket, kAcqRel, kRelaxed)) {
      Entry& e = entries_[i];
      e.operations = e.sends = e.recvs = 0;
      e.sendHash = e.recvHash = e.bytesSent = 0;
      e.channels = 0;
      e.timed.store(0, kRelaxed);
      e.spoiled.store(0, kRelaxed);
      e.firstStart.store(UINT64_MAX, kRelaxed);
      e.lastStop.store(0, kRelaxed);
      e.opener.store(tGroups.tid, kRelaxed);
      e.claimedAt.store(sweeps_.load(kRelaxed), kRelaxed);
      comm.retain();
      e.comm.store(&comm, kRelaxed);
      e.state.store(1, kRelease);  // the open group's reference
      inUse_.fetch_add(1, kRelaxed);
      return i;
    }
  }
  group.claimFailed = true;
  comm.countGroup(GroupOutcome::Untracked);
  return kNone;
}

uint32_t GroupTable::join(void* planGroup, void* operation, CommMonitor& comm) {
  ThreadGroups& t = tGroups;
  // A group a handle names, when it is the one open on this thread for `comm`.
  auto openHere = [&](const Claim& c, uint64_t ticket) {
    return ticket != 0 && c.ticket == ticket && c.comm == &comm && c.table == this;
  };
  Claim* group = openHere(t.user, ticketIn(operation, kOperationMagic)) ? &t.user
                 : openHere(t.plan, ticketIn(planGroup, kPlanMagic))    ? &t.plan
                                                                        : nullptr;
  if (group == nullptr || group->claimFailed) return kNone;
  if (group->entry == kNone) {
    group->entry = claim(*group, comm);
    if (group->entry == kNone) return kNone;
  }
  // Open on this thread, so not closed: the operation's reference cannot race the finish.
  entries_[group->entry].state.fetch_add(1, kAcqRel);
  return group->entry;
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

uint32_t GroupTable::sweepExitedThreads() {
  const uint32_t sweep = sweeps_.fetch_add(1, kRelaxed);
  const pid_t pid = ::getpid();
  uint32_t closed = 0;
  for (Entry& e : entries_) {
    if (e.owner.load(kAcquire) == 0) continue;
    const uint32_t state = e.state.load(kAcquire);
    // Closed entries wait for their operations, which NCCL's proxy (or the finalize) ends.
    if ((state & kClosed) != 0 || state == 0 || e.claimedAt.load(kRelaxed) == sweep) continue;
    const int tid = e.opener.load(kRelaxed);
    // Only the opener closes an open group, so while it lives the entry is its own; once it has
    // exited nobody else will, and this close cannot race another.
    if (tid <= 0 || ::syscall(SYS_tgkill, pid, tid, 0) == 0 || errno != ESRCH) continue;
    leftOpen_.fetch_add(1, kRelaxed);
    closeEntry(e);
    ++closed;
  }
  return closed;
}

}  // namespace pilot::metrics::detail
