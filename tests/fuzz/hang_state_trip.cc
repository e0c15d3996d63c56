// The library's state file written and read back (hang_state_fuzz, part B). The process is
// made from the input within what the profiler holds: printable names as the runtime makes
// them, NCCL's rank facts, launch counts with done <= launched, operations of NCCL's kinds
// (a peer for Send/Recv only), up to 64 channels, open proxy entries towards ranks of the
// communicator, window keys of collectives.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>

#include "fuzz_support.h"
#include "hang/state_file.h"
#include "hang_oracle.h"
#include "pilot/metrics/state_file.h"
#include "profiler_facts.h"

namespace fuzz {
namespace {

using namespace pilot::metrics;
namespace hang = pilot::cli::hang;

LaunchCount counts(FuzzedDataProvider& in) {
  LaunchCount c;
  c.launched = in.ConsumeIntegralInRange<uint64_t>(0, uint64_t{1} << 50);
  c.done = c.launched - in.ConsumeIntegralInRange<uint64_t>(0, std::min<uint64_t>(c.launched, 3));
  return c;
}

std::vector<std::pair<int, LaunchCount>> peers(FuzzedDataProvider& in, int nRanks) {
  std::vector<std::pair<int, LaunchCount>> out;
  for (int peer = in.ConsumeIntegralInRange(0, 3); peer < nRanks && out.size() < 4;
       peer += in.ConsumeIntegralInRange(1, 1000)) {
    out.push_back({peer, counts(in)});
  }
  return out;
}

OperationView op(FuzzedDataProvider& in, int nRanks, uint64_t nowNs) {
  OperationView o;
  o.op = static_cast<Operation>(in.ConsumeIntegralInRange(0, kNumOperations - 1));
  o.seq = in.ConsumeIntegral<uint64_t>();
  o.bytes = in.ConsumeIntegralInRange<uint64_t>(0, uint64_t{1} << 40);
  o.peer = isPointToPoint(o.op) ? in.ConsumeIntegralInRange(0, nRanks - 1) : -1;
  o.launchNs = nowNs - in.ConsumeIntegralInRange<uint64_t>(
                           0, std::min<uint64_t>(nowNs, 1'000'000'000'000'000));
  o.channels = in.ConsumeIntegralInRange(0u, 64u);
  o.started = in.ConsumeIntegral<uint64_t>();
  o.stopped = in.ConsumeIntegral<uint64_t>() & o.started;
  return o;
}

StateComm comm(FuzzedDataProvider& in) {
  StateComm c;
  CommIdentity& id = c.identity;
  commFacts(in, &id);
  LiveState& l = c.live;
  InFlightView& v = l.view;
  l.nowNs = in.ConsumeIntegral<uint64_t>();
  for (int k = 0; k < kNumOperations; ++k) {
    if (in.ConsumeBool()) v.kinds[k] = counts(in);
  }
  v.sends = peers(in, id.nRanks);
  v.recvs = peers(in, id.nRanks);
  v.inFlight = in.ConsumeIntegralInRange<uint64_t>(0, 1000);
  v.overflow = in.ConsumeBool();
  v.hasLast = in.ConsumeBool();
  if (v.hasLast) v.last = op(in, id.nRanks, l.nowNs);
  v.hasOldest = in.ConsumeBool();
  if (v.hasOldest) v.oldest = op(in, id.nRanks, l.nowNs);
  v.lastDoneNs = in.ConsumeIntegral<uint64_t>();
  l.waitingS = in.ConsumeFloatingPointInRange(0.0, 1e9);
  l.stalled = in.ConsumeBool();
  l.windowS = in.ConsumeFloatingPointInRange(0.0, 1e6);
  for (int n = in.ConsumeIntegralInRange(0, 3); n > 0; --n) {
    pilot::metrics::WindowKey k;
    k.op = static_cast<Operation>(in.ConsumeIntegralInRange(0, 7));  // collectives
    k.bytes = uint64_t{1} << in.ConsumeIntegralInRange(0, 40);
    k.calls = in.ConsumeIntegralInRange<uint64_t>(1, 1u << 30);
    k.meanUs = in.ConsumeFloatingPointInRange(0.0, 1e9);
    l.window.push_back(k);
  }
  l.proxyEvents = in.ConsumeBool();
  for (int n = l.proxyEvents ? in.ConsumeIntegralInRange(0, 3) : 0; n > 0; --n) {
    ProxyOpView p;
    p.channel = in.ConsumeIntegralInRange(0u, 63u);
    p.peer = in.ConsumeIntegralInRange(0, id.nRanks - 1);
    p.send = in.ConsumeBool();
    p.nSteps = in.ConsumeIntegralInRange(0, 1 << 20);
    p.steps = in.ConsumeIntegralInRange(-1, p.nSteps);
    l.proxy.push_back(p);
  }
  return c;
}

double ms(double s) {
  return std::round(std::max(s, 0.0) * 1000.0) / 1000.0;
}

bool same(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b));
}

std::vector<int> channels(uint64_t bits) {
  std::vector<int> out;
  for (int c = 0; c < 64; ++c)
    if (bits >> c & 1) out.push_back(c);
  return out;
}

void checkOp(const hang::OpRef& got, const OperationView& want, uint64_t nowNs,
             const std::string& what) {
  const double age = nowNs > want.launchNs ? static_cast<double>(nowNs - want.launchNs) / 1e9 : 0;
  if (got.op != operationName(want.op) || got.seq != want.seq || got.bytes != want.bytes ||
      got.peer != want.peer || !same(got.ageS, ms(age)))
    die(what + " reads back otherwise");
}

void checkComm(const hang::CommState& got, const StateComm& want) {
  const CommIdentity& id = want.identity;
  const LiveState& l = want.live;
  const InFlightView& v = l.view;
  const std::string what = "comm " + got.comm;
  if (got.comm != commIdText(id.commId) || got.commName != id.name || got.rank != id.rank ||
      got.nRanks != id.nRanks || got.nNodes != id.nNodes || got.inFlight != v.inFlight ||
      got.stalled != l.stalled || !same(got.waitingS, ms(l.waitingS)) ||
      !same(got.windowS, ms(l.windowS)))
    die(what + ": its fields read back otherwise");
  std::map<std::string, hang::Counts> ops;
  for (int k = 0; k < kNumOperations; ++k) {
    const auto o = static_cast<Operation>(k);
    if (!isPointToPoint(o) && v.kinds[k].launched > 0)
      ops[operationName(o)] = {v.kinds[k].launched, v.kinds[k].done};
  }
  auto sameCounts = [](const hang::Counts& a, const hang::Counts& b) {
    return a.launched == b.launched && a.done == b.done;
  };
  if (got.ops.size() != ops.size() ||
      !std::equal(ops.begin(), ops.end(), got.ops.begin(), [&](const auto& a, const auto& b) {
        return a.first == b.first && sameCounts(a.second, b.second);
      }))
    die(what + ": launch counts read back otherwise");
  for (const auto& [list, perPeer] : {std::pair{&v.sends, &got.sends}, {&v.recvs, &got.recvs}}) {
    if (list->size() != perPeer->size()) die(what + ": per-peer counts lost");
    for (const auto& [peer, c] : *list) {
      auto it = perPeer->find(peer);
      if (it == perPeer->end() || !sameCounts(it->second, {c.launched, c.done}))
        die(what + ": the counts of peer " + std::to_string(peer));
    }
  }
  if (got.window.size() != l.window.size()) die(what + ": window keys lost");
  for (size_t i = 0; i < l.window.size(); ++i) {
    const hang::WindowKey& k = got.window[i];
    const pilot::metrics::WindowKey& w = l.window[i];
    if (k.op != operationName(w.op) || k.bytes != w.bytes || k.calls != w.calls ||
        !same(k.meanUs, std::round(w.meanUs * 100.0) / 100.0))
      die(what + ": window key " + std::to_string(i) + " reads back otherwise");
  }
  if (got.last.has_value() != v.hasLast || got.oldest.has_value() != v.hasOldest)
    die(what + ": last or oldest lost");
  if (v.hasLast) checkOp(*got.last, v.last, l.nowNs, what + " last");
  if (!v.hasOldest) return;
  checkOp(*got.oldest, v.oldest, l.nowNs, what + " oldest");
  if (got.oldest->channels != static_cast<int>(v.oldest.channels) ||
      got.oldest->started != channels(v.oldest.started) ||
      got.oldest->stopped != channels(v.oldest.stopped))
    die(what + ": the oldest's channels read back otherwise");
  if (got.oldest->proxy.size() != l.proxy.size()) die(what + ": proxy entries lost");
  for (size_t i = 0; i < l.proxy.size(); ++i) {
    const hang::ProxyEntry& e = got.oldest->proxy[i];
    const ProxyOpView& p = l.proxy[i];
    if (e.channel != static_cast<int>(p.channel) || e.peer != p.peer || e.send != p.send ||
        e.steps != p.steps || e.of != p.nSteps)
      die(what + ": proxy entry " + std::to_string(i) + " reads back otherwise");
  }
}

}  // namespace

void checkStateRoundTrip(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  StateReport r;
  r.node = name(in, 24);
  if (r.node.empty()) r.node = "n";
  r.job = name(in, 12);
  r.version = name(in, 24);
  r.pid = in.ConsumeIntegralInRange<long>(0, 1 << 22);
  r.writtenMs = in.ConsumeIntegralInRange<uint64_t>(0, hang::kMaxUnixMs / 2);
  r.nextDueMs = r.writtenMs + in.ConsumeIntegralInRange<uint64_t>(0, 3600000);
  r.stallSeconds = in.ConsumeIntegralInRange<uint64_t>(0, 86400);
  r.final = in.ConsumeBool();
  for (int n = in.ConsumeIntegralInRange(0, 3); n > 0; --n) r.comms.push_back(comm(in));

  const std::string text = renderState(r);
  pilot::Expected<hang::StateFile> s = hang::parseStateFile(text, "trip.state.json");
  if (!s.ok()) die("the library's own state file refused: " + s.error() + "\n" + text);
  if (s->node != r.node || s->pid != r.pid || s->job != r.job || s->library != r.version ||
      s->writtenMs != static_cast<int64_t>(r.writtenMs) ||
      s->nextDueMs != static_cast<int64_t>(r.nextDueMs) ||
      s->stallS != static_cast<double>(r.stallSeconds) || s->final != r.final ||
      s->comms.size() != r.comms.size())
    die("the file's fields read back otherwise:\n" + text);
  for (size_t i = 0; i < r.comms.size(); ++i) checkComm(s->comms[i], r.comms[i]);
}

}  // namespace fuzz
