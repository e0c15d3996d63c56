#include "event_stress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace pilot::metrics::stress {
namespace {

struct Channel : ChannelPlan {
  void* handle = nullptr;
  bool started = false, recorded = false, stopped = false;
};

/// One task between its start and its last event: with one thread at a time, but for the
/// host's stop when it comes after the hand-over (hostStopped).
struct Work {
  uint32_t comm = 0;
  TaskKind kind = TaskKind::Collective;
  uint64_t group = 0;      // the group entry it holds (the test's number for it), 0 for none
  void* op = nullptr;      // null: not measured (NCCL still reports its channels, parent null)
  bool opStopped = false;  // its stop sent, by the host before the hand-over or by a proxy
  /// Set when the host sends the stop after the hand-over: true once it has (release).
  std::shared_ptr<const std::atomic<bool>> hostStopped;
  std::vector<Channel> channels;
  bool hostDone() const {
    return hostStopped == nullptr || hostStopped->load(std::memory_order_acquire);
  }
  /// An event of the task is still the proxies' to send: until then the task holds its slot
  /// (each unstopped channel a reference), so what they send meanwhile has one outcome only.
  bool proxyDue() const {
    if (!opStopped) return true;
    for (const Channel& c : channels)
      if (!c.stopped) return true;
    return false;
  }
  bool done() const { return !proxyDue() && hostDone(); }
};

template <typename Pred>
size_t countChannels(const Work& w, Pred pred) {
  size_t n = 0;
  for (const Channel& c : w.channels) n += pred(c) ? 1 : 0;
  return n;
}

/// A random channel of `w` for which `pred` holds; the channel count when none does.
template <typename Pred>
size_t pickChannel(const Work& w, Rng& rng, Pred pred) {
  const size_t n = countChannels(w, pred);
  if (n == 0) return w.channels.size();
  for (size_t i = 0, k = below(rng, n); i < w.channels.size(); ++i) {
    if (pred(w.channels[i]) && k-- == 0) return i;
  }
  return w.channels.size();
}

/// An event repeated later by the thread that sent it first, racing the operation's completion
/// on other threads.
struct Late {
  enum Kind { Start, Record, Stop } kind = Stop;
  void* handle = nullptr;
  unsigned channel = 0;
  uint64_t time = 0;
  uint32_t comm = 0;
  TaskKind task = TaskKind::Collective;
};

/// Late duplicates the proxies post for one more thread, which sends each again as soon as it
/// can and then synchronizes with no other thread (it only reads what is posted): TSan then sees
/// each of its accesses to a slot as unordered with what the next collective in that slot writes
/// there, however late that comes. The proxies' own late events are ordered with those writes
/// through the queue's mutex, which NCCL's proxy has too.
class LateBoard {
 public:
  static constexpr size_t kCapacity = 1 << 16;  // posts past it are dropped
  void post(const Late& late) {
    const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= kCapacity) return;
    notes_[i].late = late;
    notes_[i].ready.store(true, std::memory_order_release);
  }
  size_t posted() const { return std::min(next_.load(std::memory_order_relaxed), kCapacity); }
  /// Note i once posted; null until then.
  const Late* at(size_t i) const {
    if (i >= kCapacity || !notes_[i].ready.load(std::memory_order_acquire)) return nullptr;
    return &notes_[i].late;
  }

 private:
  struct Note {
    Late late;
    std::atomic<bool> ready{false};
  };
  std::vector<Note> notes_ = std::vector<Note>(kCapacity);
  std::atomic<size_t> next_{0};
};

/// Handles of an operation that completed.
struct Grave {
  void* handles[4] = {};
  unsigned count = 0;
};

class Harness {
 public:
  Harness(MetricsRuntime& runtime, const Options& options,
          const std::vector<const OperationKind*>& kinds)
      : runtime_(runtime), options_(options), kinds_(kinds), appsRunning_(options.appThreads) {}

  Outcome run();

 private:
  void application(unsigned index, Ledger& ledger);
  void proxy(unsigned index, Ledger& ledger);
  void render(const std::atomic<bool>& stop, uint64_t* renders);
  void repeatLate(const std::atomic<bool>& proxiesDone, Ledger& ledger);

  /// One task of a launch in the ledger, and what is left of it for the proxies.
  Work file(const Started& s, uint32_t comm, Ledger& ledger);
  void visit(Work& w, Rng& rng, Ledger& ledger, std::vector<Late>* candidates);
  void step(Work& w, Rng& rng, Ledger& ledger, std::vector<Late>* candidates);
  void mischief(Work& w, Rng& rng, Ledger& ledger);
  void fire(const Late& late, Ledger& ledger, bool completed);
  void feedGarbage(Rng& rng, Ledger& ledger);
  void feedStale(Rng& rng, Ledger& ledger);
  /// A group handle of a recent launch (maybe still open on its host) to one of the three
  /// entries: as a parent or a channel's handle it is foreign, a stop changes nothing here.
  void feedGroup(Rng& rng, Ledger& ledger);
  void stopStrayGroups(Rng& rng, Ledger& ledger, bool all);
  void keepGroups(const std::vector<void*>& groups);
  /// A handle to one of the three entries that take one, at random.
  void send(void* handle, Rng& rng, Ledger& ledger);

  void waitForSpace();
  void admit(Work w);
  std::optional<Work> take(Rng& rng);
  void giveBack(Work w, Rng& rng);
  void finish(const Work& w);

  MetricsRuntime& runtime_;
  EventPath& path_ = EventPath::process();
  const Options& options_;
  const std::vector<const OperationKind*>& kinds_;
  LateBoard board_;

  std::mutex mutex_;  // everything below
  std::condition_variable workReady_, spaceFree_;
  std::deque<Work> queue_;
  size_t outstanding_ = 0;  // admitted and not done
  unsigned appsRunning_;
  std::map<uint32_t, size_t> inFlight_;  // per communicator
  std::map<uint32_t, size_t> p2pInFlight_;
  std::map<uint32_t, std::map<uint64_t, size_t>> groupsInFlight_;  // per communicator: works
  std::vector<void*> groupGraves_;                                 // a ring of recent group handles
  std::vector<void*> strayGroupStops_;  // groups whose host lost the stop, for a proxy
  std::vector<Grave> graveyard_;        // a ring of recent completions
  size_t graveNext_ = 0;
  size_t groupGraveNext_ = 0;
  std::vector<ObservedComm> observed_;
  uint32_t comms_ = 0;
};

Outcome Harness::run() {
  const auto begin = std::chrono::steady_clock::now();
  const unsigned threads = options_.appThreads + options_.proxyThreads;
  std::vector<Ledger> ledgers(threads + 1);
  std::atomic<bool> stopRendering{false}, proxiesDone{false};
  Outcome out;
  std::thread renderer([&] { render(stopRendering, &out.renders); });
  std::thread repeater([&] { repeatLate(proxiesDone, ledgers[threads]); });
  std::vector<std::thread> workers;
  for (unsigned i = 0; i < options_.appThreads; ++i) {
    workers.emplace_back([this, i, &ledgers] { application(i, ledgers[i]); });
  }
  for (unsigned i = 0; i < options_.proxyThreads; ++i) {
    Ledger& ledger = ledgers[options_.appThreads + i];
    workers.emplace_back([this, i, &ledger] { proxy(i, ledger); });
  }
  for (std::thread& t : workers) t.join();
  proxiesDone.store(true, std::memory_order_release);
  repeater.join();
  stopRendering.store(true);
  renderer.join();
  for (const Ledger& l : ledgers) out.ledger.merge(l);
  out.observed = observed_;
  out.comms = comms_;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return out;
}

Work Harness::file(const Started& s, uint32_t comm, Ledger& ledger) {
  TaskLedger& tl = ledger.comms[comm].of(s.kind);
  ++tl.started;
  if (s.skip) {
    // Sampled out or too small: not measured, but followed to its completion (in_flight.h),
    // so it may hold a slot; nothing else skipped does.
    const bool followed = *s.skip == Skip::SampledOut || *s.skip == Skip::BelowMinBytes;
    if (!followed) {
      EXPECT_EQ(s.handle, nullptr)
          << "a description to skip (" << skipName(*s.skip) << ") got a handle";
    }
    ++tl.skipped[static_cast<int>(*s.skip)];
  } else if (s.handle == nullptr) {
    ++tl.skipped[static_cast<int>(Skip::NoSlot)];
  } else if (s.timed) {
    ++tl.measured;
    ledger.comms[comm].keys[s.key].add(longestChannel(s), s.key.bytes);
  } else {
    ++tl.skipped[static_cast<int>(Skip::Untimed)];
  }
  Work w;
  w.comm = comm;
  w.kind = s.kind;
  w.op = s.handle;
  w.opStopped = s.handle == nullptr || s.stopped || s.stopPending;
  for (const ChannelPlan& plan : s.channels) {
    Channel c;
    static_cast<ChannelPlan&>(c) = plan;
    w.channels.push_back(c);
  }
  return w;
}

void Harness::application(unsigned index, Ledger& ledger) {
  Rng rng(options_.seed * 1000 + index);
  uint64_t groups = 0;  // this thread's groups holding an entry, numbered for groupsInFlight_
  for (unsigned lifetime = 0; lifetime < options_.lifetimes; ++lifetime) {
    struct Open {
      uint32_t number;
      CommMonitor* monitor;
    };
    std::vector<Open> open;
    const unsigned n = 1 + below(rng, 2);
    for (unsigned k = 0; k < n; ++k) {
      uint32_t number;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        number = comms_++;
      }
      CommIdentity id;
      id.commId = 0x57000 + number;
      id.name = "stress " + std::to_string(number);
      id.nRanks = 2 << below(rng, 4);
      id.rank = static_cast<int>(below(rng, static_cast<uint64_t>(id.nRanks)));
      CommMonitor* monitor = runtime_.open(id, nullptr);
      if (monitor == nullptr) {
        ADD_FAILURE() << "the runtime measures no communicator";
        continue;
      }
      // Half the communicators are the test's to read at the end (it holds a reference); the
      // others are deleted by whichever lets go last, the finalize or a task's last event.
      if (oneIn(rng, 2)) {
        monitor->retain();
        std::lock_guard<std::mutex> lock(mutex_);
        observed_.push_back({number, monitor});
      }
      open.push_back({number, monitor});
    }
    if (open.empty()) continue;
    // Once in the run, the host runs ahead of the proxies until the pool of slots is empty.
    const bool flood = index == 0 && lifetime == options_.lifetimes / 2;
    std::vector<Work> held;
    unsigned noSlot = 0;
    for (unsigned i = 0;
         flood ? noSlot < 8 && i < 2 * path_.capacity() + 64 : i < options_.opsPerLifetime;) {
      const Open& c = open[below(rng, open.size())];
      const OperationKind& kind = *kinds_[below(rng, kinds_.size())];
      if (!flood) waitForSpace();
      Launch launch = kind.start(path_, *c.monitor, rng, ledger.comms[c.number], flood);
      ledger.events += launch.events;
      i += std::max<size_t>(1, launch.tasks.size());
      const uint64_t group = index + 1 + (++groups << 8);
      auto hostStopped = std::make_shared<std::atomic<bool>>(false);
      std::vector<Work> works;
      for (const Started& s : launch.tasks) {
        Work w = file(s, c.number, ledger);
        if (s.handle == nullptr && !s.skip) ++noSlot;
        if (s.inGroup && s.handle != nullptr) w.group = group;
        if (s.stopPending && s.handle != nullptr) w.hostStopped = hostStopped;
        if (!w.done()) works.push_back(std::move(w));  // else nothing left for a proxy
      }
      if (launch.strayGroupStop != nullptr) {
        std::lock_guard<std::mutex> lock(mutex_);
        strayGroupStops_.push_back(launch.strayGroupStop);
      }
      if (flood) {
        // Held: the host's own events go first, as NCCL sends them.
        if (launch.afterHandOver) ledger.events += launch.afterHandOver(path_);
        hostStopped->store(true, std::memory_order_release);
        for (Work& w : works) held.push_back(std::move(w));
      } else {
        for (Work& w : works) admit(std::move(w));
        if (launch.afterHandOver) {
          // The proxies may report the kernels before the host's stops, or after.
          std::this_thread::yield();
          ledger.events += launch.afterHandOver(path_);
        }
        hostStopped->store(true, std::memory_order_release);
      }
      keepGroups(launch.groups);
      // Now and then the host stops a group of another launch, maybe of another thread: only
      // its opener closes a group, so this changes nothing.
      if (oneIn(rng, 16)) {
        void* g = nullptr;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (!groupGraves_.empty()) g = groupGraves_[below(rng, groupGraves_.size())];
        }
        if (g != nullptr) {
          path_.stop(g);
          ++ledger.events;
        }
      }
    }
    for (Work& w : held) admit(std::move(w));
    for (const OperationKind* kind : kinds_) {
      ledger.events += kind->beforeFinalize(path_, *open.front().monitor, rng,
                                            lifetime + 1 == options_.lifetimes);
    }
    // Finalized as soon as the host is done with it, as its tasks still run.
    for (size_t k = open.size(); k-- > 0;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ledger.inFlightAtClose += inFlight_[open[k].number];
        ledger.p2pInFlightAtClose += p2pInFlight_[open[k].number];
        ledger.groupsInFlightAtClose += groupsInFlight_[open[k].number].size();
      }
      runtime_.close(open[k].monitor);
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  --appsRunning_;
  workReady_.notify_all();
}

void Harness::proxy(unsigned index, Ledger& ledger) {
  Rng rng(options_.seed * 1000 + 500 + index);
  std::vector<Late> pending, candidates;
  while (std::optional<Work> w = take(rng)) {
    candidates.clear();
    visit(*w, rng, ledger, &candidates);
    const Late* again = candidates.empty() ? nullptr : &candidates[below(rng, candidates.size())];
    if (w->done()) {
      finish(*w);
      if (again != nullptr) fire(*again, ledger, /*completed=*/true);
    } else {
      const uint32_t comm = w->comm;
      const TaskKind kind = w->kind;
      const bool waitsForHost = !w->proxyDue();
      giveBack(std::move(*w), rng);
      if (waitsForHost) std::this_thread::yield();  // the host's stop is on its way
      if (again != nullptr) {
        Late late = *again;
        late.comm = comm;
        late.task = kind;
        if (oneIn(rng, 2)) {
          board_.post(late);
        } else {
          pending.push_back(late);
        }
      }
    }
    // Late duplicates go out a while later, now and then several times.
    while (!pending.empty() && (pending.size() > 4 || oneIn(rng, 2))) {
      const size_t k = below(rng, pending.size());
      for (unsigned n = 1 + below(rng, 3); n > 0; --n) fire(pending[k], ledger, false);
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (oneIn(rng, 4)) feedStale(rng, ledger);
    if (oneIn(rng, 8)) feedGarbage(rng, ledger);
    if (oneIn(rng, 8)) feedGroup(rng, ledger);
    if (oneIn(rng, 4)) stopStrayGroups(rng, ledger, /*all=*/false);
  }
  for (const Late& l : pending) fire(l, ledger, false);
  stopStrayGroups(rng, ledger, /*all=*/true);
}

void Harness::stopStrayGroups(Rng& rng, Ledger& ledger, bool all) {
  // A group's stop lost by its host, sent on this thread instead: ignored (only the opener
  // closes a group; its next group does), so it changes nothing whenever it comes.
  std::vector<void*> stops;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (strayGroupStops_.empty()) return;
    if (all) {
      stops.swap(strayGroupStops_);
    } else {
      const size_t k = below(rng, strayGroupStops_.size());
      stops.push_back(strayGroupStops_[k]);
      strayGroupStops_.erase(strayGroupStops_.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  for (void* g : stops) {
    path_.stop(g);
    ++ledger.events;
  }
}

void Harness::visit(Work& w, Rng& rng, Ledger& ledger, std::vector<Late>* candidates) {
  for (unsigned steps = 1 + below(rng, 6); steps > 0 && w.proxyDue(); --steps) {
    // While some event of the task is still the proxies' to send, it holds its slot: what is
    // sent now has one outcome only.
    if (w.op != nullptr && oneIn(rng, 3)) mischief(w, rng, ledger);
    step(w, rng, ledger, candidates);
  }
}

void Harness::step(Work& w, Rng& rng, Ledger& ledger, std::vector<Late>* candidates) {
  // One of the events now due, chosen at random: channels in any order, the operation's stop
  // anywhere among them.
  auto due = [](const Channel& c) { return !c.stopped; };
  const size_t dueChannels = countChannels(w, due);
  ++ledger.events;
  if (below(rng, dueChannels + (w.opStopped ? 0 : 1)) == dueChannels) {
    path_.stop(w.op);
    w.opStopped = true;
    candidates->push_back({Late::Stop, w.op});
    return;
  }
  Channel& ch = w.channels[pickChannel(w, rng, due)];
  if (!ch.started) {
    if (!w.hostDone()) ++ledger.beforeHostStop;
    ch.handle = path_.startKernelChannel(w.op, ch.id, ch.start);
    ch.started = true;
    if (w.op != nullptr && ch.handle == nullptr) {
      ADD_FAILURE() << "the first start of channel " << ch.id << " of a task in flight got no "
                    << "handle";
    }
    if (ch.handle == nullptr) ch.stopped = true;  // NCCL sends nothing more for it
    return;
  }
  if (ch.record && !ch.recorded) {
    if (oneIn(rng, 8)) {
      path_.recordKernelChannelStop(ch.handle, ch.start - below(rng, 2));  // not after it
      ++ledger.events;
    }
    path_.recordKernelChannelStop(ch.handle, ch.stop);
    ch.recorded = true;
    candidates->push_back({Late::Record, ch.handle, ch.id, ch.stop});
    return;
  }
  path_.stop(ch.handle);
  ch.stopped = true;
  candidates->push_back({Late::Stop, ch.handle});
  candidates->push_back({Late::Start, w.op, ch.id, ch.start});
}

void Harness::mischief(Work& w, Rng& rng, Ledger& ledger) {
  uint64_t& ignored =
      ledger.comms[w.comm].of(w.kind).skipped[static_cast<int>(Skip::IgnoredKernel)];
  const size_t n = w.channels.size();
  const size_t started =
      pickChannel(w, rng, [](const Channel& c) { return c.started && c.handle != nullptr; });
  const size_t stopped =
      pickChannel(w, rng, [](const Channel& c) { return c.stopped && c.handle != nullptr; });
  ++ledger.events;
  switch (below(rng, 8)) {
    case 1:  // a second start of a channel
      if (started < n) {
        const Channel& c = w.channels[started];
        EXPECT_EQ(path_.startKernelChannel(w.op, c.id, c.start), nullptr);
        ++ignored;
        return;
      }
      [[fallthrough]];
    case 0: {  // a channel past those NCCL announced: once every lane is taken any id (one
               // of the task's is a second start), before that an id NCCL never gives (its
               // channel ids are 8 bits, 64 at most)
      const bool allStarted = countChannels(w, [](const Channel& c) { return c.started; }) == n;
      const unsigned id = allStarted ? below(rng, 256) : 64 + below(rng, 192);
      EXPECT_EQ(path_.startKernelChannel(w.op, id, 1), nullptr);
      ++ignored;
      return;
    }
    case 2:  // a channel's handle as a parent
      if (started < n) {
        EXPECT_EQ(path_.startKernelChannel(w.channels[started].handle, 0, 1), nullptr);
        ++ignored;
      }
      return;
    case 3:  // a second stop of a channel: its reference went with the first
      if (stopped < n) path_.stop(w.channels[stopped].handle);
      return;
    case 4:  // a second stop of the task (once the host's, if it sends it, came)
      if (w.opStopped && w.hostDone()) path_.stop(w.op);
      return;
    case 5:  // a stop state for the operation itself
      path_.recordKernelChannelStop(w.op, 2'000'000'000);
      return;
    case 6:
      feedGarbage(rng, ledger);
      return;
    default:
      feedStale(rng, ledger);
  }
}

void Harness::fire(const Late& late, Ledger& ledger, bool completed) {
  ++ledger.events;
  if (completed) ++ledger.staleFed;
  switch (late.kind) {
    case Late::Start:
      EXPECT_EQ(path_.startKernelChannel(late.handle, late.channel, late.time), nullptr)
          << "a second start of a channel got a handle";
      if (!completed) ++ledger.comms[late.comm].of(late.task).lateStarts;
      return;
    case Late::Record:
      // The same stop time again: in flight, it changes nothing.
      path_.recordKernelChannelStop(late.handle, late.time);
      break;
    case Late::Stop:
      path_.stop(late.handle);
      break;
  }
  if (!completed) ++ledger.lateOther;
}

void Harness::feedGarbage(Rng& rng, Ledger& ledger) {
  // Pointer-like values, never null: user-space addresses (the host's own objects among them)
  // and kernel-space ones. Our handles carry a tag where these hold zeros or ones.
  static thread_local int object;
  uintptr_t value;
  switch (below(rng, 4)) {
    case 0:
      value = reinterpret_cast<uintptr_t>(&object);
      break;
    case 1:
      value = 1 + below(rng, 4096);
      break;
    case 2:
      value = (rng() & 0x00007fffffffffffull) | 8;
      break;
    default:
      value = ~uintptr_t{0} - below(rng, 1 << 20);
  }
  ++ledger.foreignFed;
  send(reinterpret_cast<void*>(value), rng, ledger);
}

void Harness::feedStale(Rng& rng, Ledger& ledger) {
  Grave g;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (graveyard_.empty()) return;
    g = graveyard_[below(rng, graveyard_.size())];
  }
  ++ledger.staleFed;
  send(g.handles[below(rng, g.count)], rng, ledger);
}

void Harness::feedGroup(Rng& rng, Ledger& ledger) {
  void* g;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (groupGraves_.empty()) return;
    g = groupGraves_[below(rng, groupGraves_.size())];
  }
  ++ledger.events;
  switch (below(rng, 3)) {
    case 0:
      EXPECT_EQ(path_.startKernelChannel(g, below(rng, 64), 1), nullptr);
      ++ledger.foreignFed;
      break;
    case 1:
      path_.recordKernelChannelStop(g, 2'000'000'000);
      ++ledger.foreignFed;
      break;
    default:
      path_.stop(g);  // not this thread's group
  }
}

void Harness::keepGroups(const std::vector<void*>& groups) {
  constexpr size_t kGraves = 256;
  std::lock_guard<std::mutex> lock(mutex_);
  for (void* g : groups) {
    if (groupGraves_.size() < kGraves) {
      groupGraves_.push_back(g);
    } else {
      groupGraves_[groupGraveNext_++ % kGraves] = g;
    }
  }
}

void Harness::send(void* handle, Rng& rng, Ledger& ledger) {
  ++ledger.events;
  switch (below(rng, 3)) {
    case 0:
      EXPECT_EQ(path_.startKernelChannel(handle, below(rng, 64), 1), nullptr);
      break;
    case 1:
      path_.recordKernelChannelStop(handle, 2'000'000'000);
      break;
    default:
      path_.stop(handle);
  }
}

void Harness::repeatLate(const std::atomic<bool>& proxiesDone, Ledger& ledger) {
  for (size_t i = 0;;) {
    // The newest first: the later a duplicate comes, the likelier its operation completed.
    i = std::max(i, board_.posted() > 64 ? board_.posted() - 64 : 0);
    if (const Late* late = board_.at(i)) {
      fire(*late, ledger, false);
      ++i;
    } else if (proxiesDone.load(std::memory_order_acquire)) {
      return;  // every post came before the proxies joined
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

void Harness::render(const std::atomic<bool>& stop, uint64_t* renders) {
  while (!stop.load()) {
    runtime_.exportNow();
    (void)runtime_.lastTextfile();
    ++*renders;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void Harness::waitForSpace() {
  std::unique_lock<std::mutex> lock(mutex_);
  spaceFree_.wait(lock, [&] { return queue_.size() < options_.queueLimit; });
}

void Harness::admit(Work w) {
  // Never waits: a launch's tasks may wait for their host's stops, which come after all of
  // them are here (the host waited for space before the launch).
  std::lock_guard<std::mutex> lock(mutex_);
  ++outstanding_;
  ++inFlight_[w.comm];
  if (w.kind == TaskKind::P2p) ++p2pInFlight_[w.comm];
  if (w.group != 0) ++groupsInFlight_[w.comm][w.group];
  queue_.push_back(std::move(w));
  workReady_.notify_one();
}

std::optional<Work> Harness::take(Rng& rng) {
  std::unique_lock<std::mutex> lock(mutex_);
  workReady_.wait(lock,
                  [&] { return !queue_.empty() || (appsRunning_ == 0 && outstanding_ == 0); });
  if (queue_.empty()) return std::nullopt;
  // Mostly the oldest, sometimes the newest: operations overtake each other.
  const bool newest = oneIn(rng, 4);
  Work w = std::move(newest ? queue_.back() : queue_.front());
  if (newest) {
    queue_.pop_back();
  } else {
    queue_.pop_front();
  }
  spaceFree_.notify_all();
  return w;
}

void Harness::giveBack(Work w, Rng& rng) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (oneIn(rng, 2)) {
    queue_.push_front(std::move(w));
  } else {
    queue_.push_back(std::move(w));
  }
  workReady_.notify_one();
}

void Harness::finish(const Work& w) {
  std::lock_guard<std::mutex> lock(mutex_);
  --outstanding_;
  --inFlight_[w.comm];
  if (w.kind == TaskKind::P2p) --p2pInFlight_[w.comm];
  if (w.group != 0) {
    std::map<uint64_t, size_t>& groups = groupsInFlight_[w.comm];
    if (--groups[w.group] == 0) groups.erase(w.group);
  }
  if (w.op != nullptr) {
    Grave g;
    g.handles[g.count++] = w.op;
    for (const Channel& c : w.channels) {
      if (g.count < 4 && c.handle != nullptr) g.handles[g.count++] = c.handle;
    }
    constexpr size_t kGraves = 256;  // recent: no slot is reused 2^24 times meanwhile
    if (graveyard_.size() < kGraves) {
      graveyard_.push_back(g);
    } else {
      graveyard_[graveNext_++ % kGraves] = g;
    }
  }
  if (outstanding_ == 0 && appsRunning_ == 0) workReady_.notify_all();
}

}  // namespace

KeyFields fieldsOf(const OpKey& key) {
  KeyFields f;
  f.op = key.op;
  f.bucket = static_cast<uint8_t>(sizeBucket(key.bytes));
  f.algorithm = key.algorithm;
  f.protocol = key.protocol;
  f.channels = key.channels;
  return f;
}

void planChannels(const std::vector<unsigned>& ids, Rng& rng, Started* task) {
  task->channels.assign(ids.size(), ChannelPlan{});
  for (size_t i = 0; i < ids.size(); ++i) {
    ChannelPlan& c = task->channels[i];
    c.id = ids[i];
    c.start = 1'000'000'000 + below(rng, 1'000'000'000);
    c.stop = c.start + 1000 + below(rng, 2'000'000);
  }
  task->timed = !oneIn(rng, 8);
  if (!task->timed && !ids.empty()) {
    ChannelPlan& c = task->channels[below(rng, ids.size())];
    if (oneIn(rng, 2)) {
      c.record = false;  // stopped without the KernelChStop state
    } else {
      c.stop = c.start - below(rng, 2);  // a GPU stop no later than the start
    }
  }
}

uint64_t longestChannel(const Started& task) {
  uint64_t longest = 0;
  for (const ChannelPlan& c : task.channels) longest = std::max(longest, c.stop - c.start);
  return longest;
}

void KeyLedger::add(uint64_t ns, uint64_t messageBytes) {
  ++calls;
  timeNs += ns;
  bytes += messageBytes;
  minNs = std::min(minNs, ns);
  maxNs = std::max(maxNs, ns);
}

void KeyLedger::merge(const KeyLedger& o) {
  calls += o.calls;
  timeNs += o.timeNs;
  bytes += o.bytes;
  minNs = std::min(minNs, o.minNs);
  maxNs = std::max(maxNs, o.maxNs);
}

void TaskLedger::merge(const TaskLedger& o) {
  started += o.started;
  measured += o.measured;
  for (int s = 0; s < static_cast<int>(Skip::Count); ++s) skipped[s] += o.skipped[s];
  lateStarts += o.lateStarts;
}

void CommLedger::merge(const CommLedger& o) {
  for (int k = 0; k < 2; ++k) tasks[k].merge(o.tasks[k]);
  for (const auto& [key, k] : o.keys) keys[key].merge(k);
  groupsJoined += o.groupsJoined;
  groupsUntracked += o.groupsUntracked;
  alltoalls += o.alltoalls;
  sentTo.insert(o.sentTo.begin(), o.sentTo.end());
  receivedFrom.insert(o.receivedFrom.begin(), o.receivedFrom.end());
}

void Ledger::merge(const Ledger& o) {
  for (const auto& [number, c] : o.comms) comms[number].merge(c);
  foreignFed += o.foreignFed;
  staleFed += o.staleFed;
  lateOther += o.lateOther;
  inFlightAtClose += o.inFlightAtClose;
  p2pInFlightAtClose += o.p2pInFlightAtClose;
  groupsInFlightAtClose += o.groupsInFlightAtClose;
  beforeHostStop += o.beforeHostStop;
  events += o.events;
}

Outcome run(MetricsRuntime& runtime, const Options& options,
            const std::vector<const OperationKind*>& kinds) {
  Harness h(runtime, options, kinds);
  return h.run();
}

}  // namespace pilot::metrics::stress
