// The profiler's summary written and read back (metrics_summary_fuzz, part B). The process is
// made from the input within what the profiler can hold: names made printable as the runtime
// makes them, NCCL's rank facts, aggregation keys of any operation, algorithm and protocol,
// per-call times recorded through the real CallSamples.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>

#include "fuzz_support.h"
#include "monitor/summary_reader.h"
#include "pilot/calibration/metrics_summary.h"
#include "pilot/core/fabric.h"
#include "pilot/metrics/summary.h"
#include "profiler_facts.h"
#include "summary_oracle.h"

namespace fuzz {
namespace {

using namespace pilot::metrics;
using pilot::calibration::CallRecord;

std::string decision(FuzzedDataProvider& in) {
  return in.ConsumeBool() ? "NCCL"
                          : "rule " + std::to_string(in.ConsumeIntegral<uint8_t>()) + " (line " +
                                std::to_string(in.ConsumeIntegral<uint8_t>()) + ")";
}

KeyReport key(FuzzedDataProvider& in) {
  KeyReport k;
  k.other = in.ConsumeIntegralInRange(0, 7) == 0;
  k.fields.op = static_cast<Operation>(in.ConsumeIntegralInRange(0, kNumOperations - 1));
  k.fields.bucket = in.ConsumeIntegralInRange(0, 63);
  k.fields.algorithm = in.ConsumeIntegralInRange<uint8_t>(0, kUnknownAlgorithm);
  k.fields.protocol = in.ConsumeIntegralInRange<uint8_t>(0, kUnknownProtocol);
  k.fields.channels = in.ConsumeIntegralInRange(1, 64);
  k.decision = decision(in);
  k.band = in.ConsumeBool() ? "" : name(in, 24);
  KeyTotals& t = k.total;
  for (int b = in.ConsumeIntegralInRange(0, 4); b > 0; --b) {
    const uint64_t n = in.ConsumeIntegralInRange<uint64_t>(1, 1000000);
    t.bins[in.ConsumeIntegralInRange<unsigned>(0, kBins - 1)] += n;
    t.calls += n;
  }
  t.minNs = in.ConsumeIntegralInRange<uint64_t>(1, uint64_t{1} << 40);
  t.maxNs = t.minNs + in.ConsumeIntegralInRange<uint64_t>(0, uint64_t{1} << 40);
  t.timeNs = t.calls * t.minNs;
  t.messageBytes = in.ConsumeIntegralInRange<uint64_t>(0, uint64_t{1} << 44);
  t.busBytes = static_cast<double>(t.messageBytes) * in.ConsumeProbability<double>();
  if (in.ConsumeBool()) {
    t.expectedCalls = in.ConsumeIntegralInRange<uint64_t>(1, t.calls + 1);
    t.expectedNs = static_cast<double>(in.ConsumeIntegral<uint32_t>()) * 1.5;
    t.expectedLiveNs = in.ConsumeIntegral<uint32_t>();
  }
  return k;
}

CommReport comm(FuzzedDataProvider& in) {
  CommReport c;
  CommIdentity& id = c.identity;
  commFacts(in, &id);
  id.abiVersion = in.ConsumeIntegralInRange(4, 6);
  id.gpu = in.ConsumeBool() ? "unknown" : "GPU" + std::to_string(in.ConsumeIntegral<uint8_t>());
  if (in.ConsumeBool())
    id.facts.fabric = static_cast<pilot::Fabric>(in.ConsumeIntegralInRange(0, 2));
  id.facts.nccl.lo = pilot::tuner::ncclVersionCode(2, in.ConsumeIntegralInRange(18, 32), 3);
  id.facts.nccl.hi = in.ConsumeBool() ? id.facts.nccl.lo : id.facts.nccl.lo + 1;
  c.tableSha256 = in.ConsumeBool()
                      ? ""
                      : std::string(64, "0123456789abcdef"[in.ConsumeIntegral<uint8_t>() % 16]);
  c.finalized = in.ConsumeBool();
  if (c.finalized && in.ConsumeBool()) {  // a record of finished communicators, folded
    c.folded = in.ConsumeIntegralInRange<uint64_t>(1, uint64_t{1} << 40);
    c.firstCommId = in.ConsumeIntegral<uint64_t>();
    c.lastCommId = in.ConsumeIntegral<uint64_t>();
  }
  for (TaskCounts* t : {&c.collectives, &c.p2p}) {
    t->seen = in.ConsumeIntegral<uint64_t>();
    t->measured = in.ConsumeIntegral<uint64_t>();
    for (uint64_t& s : t->skipped) s = in.ConsumeIntegral<uint32_t>();
  }
  for (uint64_t& g : c.groups) g = in.ConsumeIntegral<uint32_t>();
  c.peersSentTo = in.ConsumeIntegralInRange(0u, 1u << 20);
  c.peersReceivedFrom = in.ConsumeIntegralInRange(0u, 1u << 20);
  for (int k = in.ConsumeIntegralInRange(0, 4); k > 0; --k) c.keys.push_back(key(in));
  // One CallSamples per communicator, as the profiler keeps them; made only when it has calls
  // (its 256 KiB of bins cost ASan page faults on every input otherwise).
  std::unique_ptr<CallSamples> samples;
  for (int s = in.ConsumeIntegralInRange(0, 5); s > 0; --s) {
    if (!samples) samples = std::make_unique<CallSamples>();
    SampleKey sk;
    sk.op = static_cast<Operation>(in.ConsumeIntegralInRange(0, kNumOperations - 1));
    sk.messageBytes = in.ConsumeIntegralInRange<uint64_t>(0, (uint64_t{1} << 44) - 1);
    sk.algorithm = in.ConsumeIntegralInRange<uint8_t>(0, kUnknownAlgorithm);
    sk.protocol = in.ConsumeIntegralInRange<uint8_t>(0, kUnknownProtocol);
    sk.channels = in.ConsumeIntegralInRange(1, 64);
    const unsigned slot = samples->slotOf(sk);
    for (int n = in.ConsumeIntegralInRange(1, 8); n > 0; --n)
      samples->record(slot, in.ConsumeIntegralInRange<uint64_t>(1, uint64_t{1} << 45));
  }
  if (samples) c.samples = samples->snapshot();
  for (size_t i = 0; i < c.samples.size(); ++i) c.sampleDecisions.push_back(decision(in));
  return c;
}

/// What fit should read from a calibration line, or nothing where fit cannot use it (an
/// operation or algorithm the tuner does not decide, a size out of its range, a time above
/// kMaxBinIndex): that line is one problem.
std::optional<CallRecord> fitRecord(const ProcessReport& p, const CommReport& c, size_t i) {
  namespace tuner = pilot::tuner;
  const CallSamples::View& v = c.samples[i];
  tuner::Collective coll;
  const auto algo = tuner::parseAlgorithm(algorithmLabel(v.key.algorithm));
  const auto proto = tuner::parseProtocol(protocolLabel(v.key.protocol));
  CallRecord r;
  r.bytes = tunerBytes(v.key.op, v.key.messageBytes, c.identity.nRanks);
  for (size_t b = 0; b < v.counts.size(); ++b) {
    if (v.counts[b] > 0) r.bins.emplace_back(v.firstBin + static_cast<int>(b), v.counts[b]);
  }
  if (!tunedCollective(v.key.op, &coll) || !algo || !proto || r.bytes < 1 ||
      r.bytes > (uint64_t{1} << 50) || r.bins.back().first > pilot::calibration::kMaxBinIndex)
    return std::nullopt;
  const CommIdentity& id = c.identity;
  r.comm = commIdText(id.commId);
  r.node = p.node;
  r.pid = p.pid;
  r.rank = id.rank;
  r.ranks = id.nRanks;
  r.nodes = id.nNodes;
  r.nccl = id.facts.nccl.lo == id.facts.nccl.hi ? tuner::formatNcclVersion(id.facts.nccl.lo) : "";
  r.fabric = id.facts.fabric ? pilot::fabricName(*id.facts.fabric) : "";
  r.tableSha256 = c.tableSha256;
  r.collective = tuner::collectiveName(coll);
  r.algo = tuner::algorithmName(*algo);
  r.proto = tuner::protocolName(*proto);
  r.channels = v.key.channels;
  r.byRule = c.sampleDecisions[i].rfind("rule ", 0) == 0;
  r.calls = v.calls;
  return r;
}

bool same(const CallRecord& a, const CallRecord& b) {
  return a.comm == b.comm && a.node == b.node && a.pid == b.pid && a.rank == b.rank &&
         a.ranks == b.ranks && a.nodes == b.nodes && a.nccl == b.nccl && a.fabric == b.fabric &&
         a.tableSha256 == b.tableSha256 && a.collective == b.collective && a.bytes == b.bytes &&
         a.algo == b.algo && a.proto == b.proto && a.channels == b.channels &&
         a.byRule == b.byRule && a.calls == b.calls && a.bins == b.bins;
}

void checkFit(const ProcessReport& p, const std::string& text) {
  pilot::calibration::MetricsData data;
  pilot::calibration::addMetricsText(data, text, "rt.jsonl");
  size_t line = 1, next = 0, rejected = 0;  // line 1: the process
  for (const CommReport& c : p.comms) {
    line += 1 + c.keys.size();
    for (size_t i = 0; i < c.samples.size(); ++i) {
      const std::string where = "rt.jsonl:" + std::to_string(++line);
      const std::optional<CallRecord> want = fitRecord(p, c, i);
      if (!want) {
        ++rejected;
        continue;
      }
      if (next >= data.records.size() || data.records[next].source != where)
        die("fit did not read the calibration line at " + where + ":\n" + text);
      if (!same(data.records[next++], *want)) die("fit read " + where + " otherwise:\n" + text);
    }
  }
  if (next != data.records.size()) die("fit read records the profiler did not write");
  if (data.problems.size() != std::min<size_t>(rejected, 20) + (rejected > 20 ? 1 : 0))
    die(std::to_string(data.problems.size()) + " problems for " + std::to_string(rejected) +
        " lines fit cannot use:\n" + text);
}

double orZero(double v) {
  return std::isfinite(v) ? v : 0;  // the summary writes null, monitor reads 0
}

void checkCollective(const pilot::cli::monitor::CollectiveRecord& r, const CommReport& c,
                     const KeyReport& k, const std::string& node) {
  const KeyTotals& t = k.total;
  const double minUs = static_cast<double>(t.minNs) / 1000.0;
  const double maxUs = static_cast<double>(t.maxNs) / 1000.0;
  bool ok = r.comm == commIdText(c.identity.commId) && r.commName == c.identity.name &&
            r.node == node && r.rank == c.identity.rank && r.nRanks == c.identity.nRanks &&
            r.nNodes == c.identity.nNodes && r.calls == t.calls &&
            r.timeSumUs == static_cast<double>(t.timeNs) / 1000.0 && r.minUs == minUs &&
            r.maxUs == maxUs && r.p50Us == orZero(binQuantile(t.bins, 0.5, minUs, maxUs)) &&
            r.p99Us == orZero(binQuantile(t.bins, 0.99, minUs, maxUs)) &&
            r.busGbs == orZero(busGbs(t)) && r.expectedCalls == t.expectedCalls &&
            std::equal(std::begin(r.bins), std::end(r.bins), std::begin(t.bins));
  if (k.other) {
    ok = ok && !r.p2p && r.collective == "other" && r.messageSize == "other" && r.algo == "other" &&
         r.decision == "other" && r.channels == 0;
  } else if (isPointToPoint(k.fields.op)) {  // a "p2p" line: NCCL picks no algorithm for it
    ok = ok && r.p2p && r.collective == operationName(k.fields.op) &&
         r.messageSize == sizeBucketLabel(k.fields.bucket) &&
         r.sizeBucketBytes == uint64_t{1} << k.fields.bucket && r.algo.empty() && r.proto.empty() &&
         r.decision == "NCCL" && r.band == k.band && r.channels == k.fields.channels;
  } else {
    ok = ok && !r.p2p;
    ok = ok && r.collective == operationName(k.fields.op) &&
         r.messageSize == sizeBucketLabel(k.fields.bucket) &&
         r.sizeBucketBytes == uint64_t{1} << k.fields.bucket &&
         r.algo == algorithmLabel(k.fields.algorithm) &&
         r.proto == protocolLabel(k.fields.protocol) && r.decision == k.decision &&
         r.band == k.band && r.channels == k.fields.channels;
  }
  if (t.expectedCalls > 0) {
    ok = ok && r.expectedUs == orZero(t.expectedNs / static_cast<double>(t.expectedCalls) / 1000.0);
  }
  if (!ok)
    die("monitor read a collective line of comm " + commIdText(c.identity.commId) + " otherwise");
}

void checkMonitor(const ProcessReport& p, const std::string& text) {
  const std::string path = writeScratch("nccl_pilot_rt.jsonl", text);
  auto s = pilot::cli::monitor::readSummaries({path});
  if (!s.ok() || !s->notes.empty()) die("monitor did not read our own summary:\n" + text);
  size_t keys = 0;
  for (const CommReport& c : p.comms) keys += c.keys.size();
  if (s->comms.size() != p.comms.size() || s->collectives.size() != keys)
    die("monitor read " + std::to_string(s->comms.size()) + " communicators and " +
        std::to_string(s->collectives.size()) + " collectives:\n" + text);
  size_t at = 0;
  for (size_t i = 0; i < p.comms.size(); ++i) {
    const CommReport& c = p.comms[i];
    const auto& r = s->comms[i];
    if (r.comm != commIdText(c.identity.commId) || r.commName != c.identity.name ||
        r.node != p.node || r.gpu != c.identity.gpu || r.rank != c.identity.rank ||
        r.nRanks != c.identity.nRanks || r.nNodes != c.identity.nNodes ||
        r.finalized != c.finalized || r.folded != c.folded || r.seen != c.collectives.seen ||
        r.measured != c.collectives.measured)
      die("monitor read communicator " + r.comm + " otherwise");
    for (const KeyReport& k : c.keys) checkCollective(s->collectives[at++], c, k, p.node);
  }
}

}  // namespace

void checkSummaryRoundTrip(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  ProcessReport p;
  p.node = name(in, 64);
  p.pid = in.ConsumeIntegralInRange<long>(1, 1 << 22);
  p.version = "0.1.0";
  for (int c = in.ConsumeIntegralInRange(0, 3); c > 0; --c) p.comms.push_back(comm(in));
  const std::string text = renderSummary(p);
  checkFit(p, text);
  checkMonitor(p, text);
}

}  // namespace fuzz
