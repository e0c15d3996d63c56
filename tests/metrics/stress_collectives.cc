// Collectives as the stress test starts them (event_stress.h): 24 valid descriptions with a key
// each, and descriptions with one defect each, so which skip the library counts does not depend
// on the order of its checks. A collective runs on channels 0 .. n - 1 (NCCL numbers a lone
// collective's channels so); three in four are stopped at once, the others by a proxy, between
// or after their channels' events.
#include <cstdint>

#include "event_stress.h"

namespace pilot::metrics::stress {
namespace {

struct Named {
  const char* name;
  uint8_t index;  // NCCL's own index of the algorithm or protocol
};
struct Function {
  const char* name;
  Operation op;
};
constexpr Function kFunctions[] = {{"AllReduce", Operation::AllReduce},
                                   {"AllGather", Operation::AllGather},
                                   {"ReduceScatter", Operation::ReduceScatter},
                                   {"Broadcast", Operation::Broadcast},
                                   {"Reduce", Operation::Reduce}};
constexpr Named kAlgorithms[] = {{"RING", 1}, {"TREE", 0}};
constexpr Named kProtocols[] = {{"SIMPLE", 2}, {"LL", 0}, {"LL128", 1}};
// Description i: function i % 5, 256 << (i % 12) bytes, algorithm i / 12, protocol i % 3 and
// 1 << (i % 7) channels; i is (i % 12, i / 12), so the 24 keys are distinct, and with the
// Send/Recv keys (stress_p2p.cc) fewer than the 128 a communicator keeps apart
// (CommMonitor::kMaxKeys): none goes to "other".
constexpr unsigned kDescriptions = 24;

struct Description {
  CollEvent event;
  std::optional<Skip> skip;
  OpKey key;
  unsigned channels = 0;
};

Description validCollective(unsigned i, Rng& rng) {
  const Function& f = kFunctions[i % 5];
  const Named& a = kAlgorithms[i / 12];
  const Named& p = kProtocols[i % 3];
  Description d;
  d.key = {f.op, uint64_t{256} << (i % 12), a.index, p.index, static_cast<uint8_t>(1u << (i % 7))};
  const bool half = i % 2 == 1;
  d.event.func = f.name;
  d.event.datatype = half ? "ncclBfloat16" : "ncclFloat32";
  d.event.count = d.key.bytes / (half ? 2 : 4);
  d.event.nChannels = d.key.channels;
  d.event.algo = a.name;
  d.event.proto = p.name;
  d.event.seqNumber = kSample * (rng() >> 8);
  d.channels = d.key.channels;
  return d;
}

/// One defect, so which skip the library counts does not depend on the order of its checks.
Description withDefect(Description d, Rng& rng) {
  switch (below(rng, 8)) {
    case 0:
      d.event.func = "SendRecvAll";  // not a collective NCCL names
      d.skip = Skip::Unknown;
      break;
    case 1:
      d.event.func = nullptr;
      d.skip = Skip::Unknown;
      break;
    case 2:
      d.event.datatype = "Unknown";  // how NCCL prints a datatype it cannot name
      d.skip = Skip::Unknown;
      break;
    case 3:
      d.event.count = 0;
      d.skip = Skip::BelowMinBytes;
      break;
    case 4:
      d.event.datatype = "ncclFloat32";
      d.event.count = kMinBytes / 4 - 1;
      d.skip = Skip::BelowMinBytes;
      break;
    case 5:
      d.event.seqNumber += 1 + below(rng, kSample - 1);
      d.skip = Skip::SampledOut;
      break;
    case 6:
      d.event.nChannels = 0;
      d.channels = 0;
      d.skip = Skip::NoChannels;
      break;
    default:
      d.event.nChannels = EventPath::kMaxChannels + 1 + below(rng, 255 - EventPath::kMaxChannels);
      d.channels = 0;  // NCCL has no such channels to report
      d.skip = Skip::NoChannels;
  }
  return d;
}

}  // namespace

Launch Collectives::start(EventPath& path, CommMonitor& comm, Rng& rng, CommLedger&, bool) const {
  Description d = validCollective(below(rng, kDescriptions), rng);
  if (oneIn(rng, 7)) d = withDefect(d, rng);
  Launch launch;
  Started& s = launch.tasks.emplace_back();
  s.handle = path.startCollective(comm, d.event);
  ++launch.events;
  s.skip = d.skip;
  s.key = d.key;
  std::vector<unsigned> ids(d.channels);
  for (unsigned c = 0; c < d.channels; ++c) ids[c] = c;
  planChannels(ids, rng, &s);
  // NCCL stops the collective right after its start ("enqueued"); some stops are left to a
  // proxy thread here, so they come between or after the kernel channels' events.
  if (s.handle != nullptr && !oneIn(rng, 4)) {
    path.stop(s.handle);
    ++launch.events;
    s.stopped = true;
  }
  return launch;
}

}  // namespace pilot::metrics::stress
