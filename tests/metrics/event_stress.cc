#include "event_stress.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace pilot::metrics::stress {
namespace {

struct Channel {
  uint64_t start = 0, stop = 0;  // GPU times
  bool record = true;            // the plan: a KernelChStop state before the stop
  void* handle = nullptr;
  bool started = false, recorded = false, stopped = false;
};

/// One operation between its start and its last event: with one thread at a time.
struct Work {
  uint32_t comm = 0;
  void* op = nullptr;  // null: not measured (NCCL still reports its channels, parent null)
  bool opStopped = false;
  std::vector<Channel> channels;
  bool done() const {
    if (!opStopped) return false;
    for (const Channel& c : channels)
      if (!c.stopped) return false;
    return true;
  }
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

  /// The host side of one operation: its start, maybe its stop, the plan of its channels.
  bool startOne(CommMonitor& comm, uint32_t number, Rng& rng, Ledger& ledger, Work* work);
  void visit(Work& w, Rng& rng, Ledger& ledger, std::vector<Late>* candidates);
  void step(Work& w, Rng& rng, Ledger& ledger, std::vector<Late>* candidates);
  void mischief(Work& w, Rng& rng, Ledger& ledger);
  void fire(const Late& late, Ledger& ledger, bool completed);
  void feedGarbage(Rng& rng, Ledger& ledger);
  void feedStale(Rng& rng, Ledger& ledger);
  /// A handle to one of the three entries that take one, at random.
  void send(void* handle, Rng& rng, Ledger& ledger);

  void admit(Work w, bool wait);
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
  std::vector<Grave> graveyard_;         // a ring of recent completions
  size_t graveNext_ = 0;
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

bool Harness::startOne(CommMonitor& comm, uint32_t number, Rng& rng, Ledger& ledger, Work* w) {
  const OperationKind& kind = *kinds_[below(rng, kinds_.size())];
  const Started s = kind.start(path_, comm, rng);
  ++ledger.events;
  CommLedger& cl = ledger.comms[number];
  ++cl.started;
  // The plan of its channels: a GPU time each, or (one in eight) a channel without one.
  const bool timed = !oneIn(rng, 8);
  w->comm = number;
  w->op = s.handle;
  w->channels.assign(s.channels, Channel{});
  uint64_t longest = 0;
  for (Channel& c : w->channels) {
    c.start = 1'000'000'000 + below(rng, 1'000'000'000);
    c.stop = c.start + 1000 + below(rng, 2'000'000);
    longest = std::max(longest, c.stop - c.start);
  }
  if (!timed && !w->channels.empty()) {
    Channel& c = w->channels[below(rng, w->channels.size())];
    if (oneIn(rng, 2)) {
      c.record = false;  // stopped without the KernelChStop state
    } else {
      c.stop = c.start - below(rng, 2);  // a GPU stop no later than the start
    }
  }
  if (s.skip) {
    EXPECT_EQ(s.handle, nullptr) << "a description to skip (" << skipName(*s.skip)
                                 << ") got a handle";
    ++cl.skipped[static_cast<int>(*s.skip)];
  } else if (s.handle == nullptr) {
    ++cl.skipped[static_cast<int>(Skip::NoSlot)];
  } else if (timed) {
    ++cl.measured;
    cl.keys[s.key].add(longest, s.key.bytes);
  } else {
    ++cl.skipped[static_cast<int>(Skip::Untimed)];
  }
  // NCCL stops the operation right after its start ("enqueued"); some stops are left to a
  // proxy thread here, so they come between or after the kernel channels' events.
  w->opStopped = s.handle == nullptr;
  if (s.handle != nullptr && !oneIn(rng, 4)) {
    path_.stop(s.handle);
    ++ledger.events;
    w->opStopped = true;
  }
  return s.skip.has_value() || s.handle != nullptr;
}

void Harness::application(unsigned index, Ledger& ledger) {
  Rng rng(options_.seed * 1000 + index);
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
      id.rank = static_cast<int>(index);
      CommMonitor* monitor = runtime_.open(id, nullptr);
      if (monitor == nullptr) {
        ADD_FAILURE() << "the runtime measures no communicator";
        continue;
      }
      // Half the communicators are the test's to read at the end (it holds a reference); the
      // others are deleted by whichever lets go last, the finalize or an operation's last event.
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
         flood ? noSlot < 8 && i < 2 * path_.capacity() + 64 : i < options_.opsPerLifetime; ++i) {
      const Open& c = open[below(rng, open.size())];
      Work w;
      if (!startOne(*c.monitor, c.number, rng, ledger, &w)) ++noSlot;
      if (w.done()) continue;  // nothing left for a proxy
      if (flood) {
        held.push_back(std::move(w));
      } else {
        admit(std::move(w), /*wait=*/true);
      }
    }
    for (Work& w : held) admit(std::move(w), /*wait=*/false);
    // Finalized as soon as the host is done with it, as its operations still run.
    for (size_t k = open.size(); k-- > 0;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ledger.inFlightAtClose += inFlight_[open[k].number];
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
      giveBack(std::move(*w), rng);
      if (again != nullptr) {
        Late late = *again;
        late.comm = comm;
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
  }
  for (const Late& l : pending) fire(l, ledger, false);
}

void Harness::visit(Work& w, Rng& rng, Ledger& ledger, std::vector<Late>* candidates) {
  for (unsigned steps = 1 + below(rng, 6); steps > 0 && !w.done(); --steps) {
    // While some event of the operation is still due, it holds its slot: what is sent now
    // has one outcome only.
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
  const unsigned c = static_cast<unsigned>(pickChannel(w, rng, due));
  Channel& ch = w.channels[c];
  if (!ch.started) {
    ch.handle = path_.startKernelChannel(w.op, c, ch.start);
    ch.started = true;
    if (w.op != nullptr && ch.handle == nullptr) {
      ADD_FAILURE() << "the first start of channel " << c << " of an operation in flight got no "
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
    candidates->push_back({Late::Record, ch.handle, c, ch.stop});
    return;
  }
  path_.stop(ch.handle);
  ch.stopped = true;
  candidates->push_back({Late::Stop, ch.handle});
  candidates->push_back({Late::Start, w.op, c, ch.start});
}

void Harness::mischief(Work& w, Rng& rng, Ledger& ledger) {
  uint64_t& ignored = ledger.comms[w.comm].skipped[static_cast<int>(Skip::IgnoredKernel)];
  const size_t n = w.channels.size();
  const size_t started =
      pickChannel(w, rng, [](const Channel& c) { return c.started && c.handle != nullptr; });
  const size_t stopped =
      pickChannel(w, rng, [](const Channel& c) { return c.stopped && c.handle != nullptr; });
  ++ledger.events;
  switch (below(rng, 8)) {
    case 1:  // a second start of a channel
      if (started < n) {
        const unsigned channel = static_cast<unsigned>(started);
        EXPECT_EQ(path_.startKernelChannel(w.op, channel, w.channels[started].start), nullptr);
        ++ignored;
        return;
      }
      [[fallthrough]];
    case 0: {  // a channel past those NCCL announced: once every lane is taken any other id,
               // before that an id NCCL never gives (its channel ids are 8 bits, 64 at most)
      const bool allStarted = countChannels(w, [](const Channel& c) { return c.started; }) == n;
      const unsigned id = allStarted ? static_cast<unsigned>(n + below(rng, 256 - n))
                                     : static_cast<unsigned>(64 + below(rng, 192));
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
    case 4:  // a second stop of the operation
      if (w.opStopped) path_.stop(w.op);
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
      if (!completed) ++ledger.comms[late.comm].lateStarts;
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

void Harness::admit(Work w, bool wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (wait) spaceFree_.wait(lock, [&] { return queue_.size() < options_.queueLimit; });
  ++outstanding_;
  ++inFlight_[w.comm];
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

void CommLedger::merge(const CommLedger& o) {
  started += o.started;
  measured += o.measured;
  for (int s = 0; s < static_cast<int>(Skip::Count); ++s) skipped[s] += o.skipped[s];
  lateStarts += o.lateStarts;
  for (const auto& [key, k] : o.keys) keys[key].merge(k);
}

void Ledger::merge(const Ledger& o) {
  for (const auto& [number, c] : o.comms) comms[number].merge(c);
  foreignFed += o.foreignFed;
  staleFed += o.staleFed;
  lateOther += o.lateOther;
  inFlightAtClose += o.inFlightAtClose;
  events += o.events;
}

Outcome run(MetricsRuntime& runtime, const Options& options,
            const std::vector<const OperationKind*>& kinds) {
  Harness h(runtime, options, kinds);
  return h.run();
}

}  // namespace pilot::metrics::stress
