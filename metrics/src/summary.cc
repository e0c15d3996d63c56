#include "pilot/metrics/summary.h"

#include <cmath>

#include "pilot/core/fabric.h"

#include "pilot/core/text.h"
#include "pilot/metrics/prometheus.h"

namespace pilot::metrics {
namespace {

std::string num(double v) {
  return std::isfinite(v) ? text::formatDecimal(v) : "null";
}

std::string num(uint64_t v) {
  return std::to_string(v);
}

/// Appends `"key":value` (value already JSON) with a leading comma when needed.
void field(std::string* out, const char* key, const std::string& value) {
  if (out->back() != '{') *out += ',';
  *out += '"';
  *out += key;
  *out += "\":";
  *out += value;
}

std::string commId(const CommReport& c) {
  return jsonString(commIdText(c.identity.commId));
}

/// A "collective" line (collectives, grouped all-to-alls, the shared "other" key) or a "p2p"
/// line (a Send or Recv key: no algorithm, protocol or decision, NCCL picks none).
void keyLine(std::string* out, const ProcessReport& p, const CommReport& c, const KeyReport& k) {
  const KeyTotals& t = k.total;
  const bool p2p = !k.other && isPointToPoint(k.fields.op);
  *out += '{';
  field(out, "kind", p2p ? "\"p2p\"" : "\"collective\"");
  field(out, "comm", commId(c));
  field(out, "comm_name", jsonString(c.identity.name));
  field(out, "rank", std::to_string(c.identity.rank));
  field(out, "nranks", std::to_string(c.identity.nRanks));
  field(out, "n_nodes", std::to_string(c.identity.nNodes));
  field(out, "node", jsonString(p.node));
  if (k.other) {
    field(out, "collective", "\"other\"");
  } else {
    field(out, p2p ? "p2p_operation" : "collective", jsonString(operationName(k.fields.op)));
    field(out, "message_size", jsonString(sizeBucketLabel(k.fields.bucket)));
    field(out, "size_bucket_bytes", num(uint64_t{1} << k.fields.bucket));
    if (!p2p) {
      field(out, "algo", jsonString(algorithmLabel(k.fields.algorithm)));
      field(out, "proto", jsonString(protocolLabel(k.fields.protocol)));
    }
    field(out, "channels", std::to_string(k.fields.channels));
    if (!p2p) field(out, "decision", jsonString(k.decision));
    if (!k.band.empty()) field(out, "band", jsonString(k.band));
  }
  field(out, "calls", num(t.calls));
  field(out, "bytes", num(t.messageBytes));
  const double minUs = static_cast<double>(t.minNs) / 1000.0;
  const double maxUs = static_cast<double>(t.maxNs) / 1000.0;
  std::string time = "{\"sum\":" + num(static_cast<double>(t.timeNs) / 1000.0) +
                     ",\"min\":" + num(minUs) + ",\"max\":" + num(maxUs) +
                     ",\"p50\":" + num(binQuantile(t.bins, 0.5, minUs, maxUs)) +
                     ",\"p99\":" + num(binQuantile(t.bins, 0.99, minUs, maxUs)) + "}";
  field(out, "time_us", time);
  field(out, "bus_gbs", num(busGbs(t)));
  field(out, "bus_gbs_geomean",
        num(t.busCalls > 0 ? std::exp(t.logBusGbs / static_cast<double>(t.busCalls)) : 0.0));
  if (t.expectedCalls > 0) {
    field(out, "expected_us", num(t.expectedNs / static_cast<double>(t.expectedCalls) / 1000.0));
    field(out, "expected_calls", num(t.expectedCalls));
    if (t.expectedLiveNs > 0) {
      field(out, "drift_ratio", num(t.expectedNs / static_cast<double>(t.expectedLiveNs)));
    }
  }
  std::string bins = "[";
  for (unsigned b = 0; b < kBins; ++b) {
    if (t.bins[b] == 0) continue;
    if (bins.size() > 1) bins += ',';
    bins += "[" + std::to_string(b) + "," + num(t.bins[b]) + "]";
  }
  field(out, "bins", bins + "]");
  *out += "}\n";
}

/// {"sampled_out":n,...}: every reason, in Skip's order.
std::string skippedObject(const TaskCounts& t) {
  std::string out = "{";
  for (int s = 0; s < static_cast<int>(Skip::Count); ++s) {
    if (s > 0) out += ',';
    out += jsonString(skipName(static_cast<Skip>(s))) + ":" + num(t.skipped[s]);
  }
  return out + "}";
}

/// The time in microseconds below which a share q of the calls of `v` ran, from its 2% bins
/// (the bin's geometric centre, clamped to the exact minimum and maximum).
double sampleQuantileUs(const CallSamples::View& v, double q) {
  const double want = q * static_cast<double>(v.calls);
  uint64_t seen = 0;
  for (size_t b = 0; b < v.counts.size(); ++b) {
    seen += v.counts[b];
    if (static_cast<double>(seen) >= want && v.counts[b] > 0) {
      const double k = static_cast<double>(v.firstBin) + static_cast<double>(b) + 0.5;
      const double ns = std::pow(kSampleBinRatio, k);
      const double lo = static_cast<double>(v.minNs), hi = static_cast<double>(v.maxNs);
      return (ns < lo ? lo : ns > hi ? hi : ns) / 1000.0;
    }
  }
  return static_cast<double>(v.maxNs) / 1000.0;
}

std::string ncclVersionOf(const tuner::ProcessFacts& f) {
  return f.nccl.lo == f.nccl.hi ? tuner::formatNcclVersion(f.nccl.lo) : "unknown";
}

/// One "calibration" line: what `nccl-pilot fit` reads (calibration/metrics_summary.h).
void calibrationLine(std::string* out, const ProcessReport& p, const CommReport& c,
                     const CallSamples::View& v, const std::string& decision) {
  const CommIdentity& id = c.identity;
  *out += '{';
  field(out, "kind", "\"calibration\"");
  field(out, "comm", commId(c));
  field(out, "comm_name", jsonString(id.name));
  field(out, "rank", std::to_string(id.rank));
  field(out, "nranks", std::to_string(id.nRanks));
  field(out, "n_nodes", std::to_string(id.nNodes));
  field(out, "node", jsonString(p.node));
  field(out, "pid", std::to_string(p.pid));
  field(out, "nccl", jsonString(ncclVersionOf(id.facts)));
  field(out, "fabric", jsonString(id.facts.fabric ? fabricName(*id.facts.fabric) : "unknown"));
  field(out, "table_sha256", jsonString(c.tableSha256));
  field(out, "collective", jsonString(operationName(v.key.op)));
  field(out, "bytes", num(tunerBytes(v.key.op, v.key.messageBytes, id.nRanks)));
  field(out, "message_bytes", num(v.key.messageBytes));
  field(out, "algo", jsonString(algorithmLabel(v.key.algorithm)));
  field(out, "proto", jsonString(protocolLabel(v.key.protocol)));
  field(out, "channels", std::to_string(v.key.channels));
  field(out, "decision", jsonString(decision));
  field(out, "calls", num(v.calls));
  const double sumUs = static_cast<double>(v.sumNs) / 1000.0;
  field(out, "time_us",
        "{\"sum\":" + num(sumUs) + ",\"mean\":" + num(sumUs / static_cast<double>(v.calls)) +
            ",\"median\":" + num(sampleQuantileUs(v, 0.5)) + ",\"p10\":" +
            num(sampleQuantileUs(v, 0.1)) + ",\"p90\":" + num(sampleQuantileUs(v, 0.9)) +
            ",\"min\":" + num(static_cast<double>(v.minNs) / 1000.0) +
            ",\"max\":" + num(static_cast<double>(v.maxNs) / 1000.0) + "}");
  field(out, "bin_ratio", num(kSampleBinRatio));
  std::string bins = "[";
  for (size_t b = 0; b < v.counts.size(); ++b) {
    if (v.counts[b] == 0) continue;
    if (bins.size() > 1) bins += ',';
    bins += "[" + std::to_string(v.firstBin + static_cast<int>(b)) + "," + num(v.counts[b]) + "]";
  }
  field(out, "bins", bins + "]");
  *out += "}\n";
}

}  // namespace

std::string renderSummary(const ProcessReport& p) {
  std::string out = "{";
  field(&out, "kind", "\"process\"");
  field(&out, "node", jsonString(p.node));
  field(&out, "pid", std::to_string(p.pid));
  field(&out, "version", jsonString(p.version));
  field(&out, "slurm_job_id", jsonString(p.slurmJobId.empty() ? "unknown" : p.slurmJobId));
  field(&out, "slots", num(static_cast<uint64_t>(p.slots)));
  field(&out, "orphans",
        "{\"foreign\":" + num(p.orphans[static_cast<int>(Orphan::Foreign)]) +
            ",\"stale\":" + num(p.orphans[static_cast<int>(Orphan::Stale)]) +
            ",\"group_left_open\":" + num(p.orphans[static_cast<int>(Orphan::GroupLeftOpen)]) +
            "}");
  field(&out, "groups_in_use", num(static_cast<uint64_t>(p.groupsInUse)));
  const CommCounts& n = p.communicators;
  field(&out, "communicators",
        "{\"live\":" + num(n.live) + ",\"finished\":" + num(n.finished) +
            ",\"records\":" + num(n.records) + ",\"dropped\":" + num(n.dropped) +
            ",\"dropped_calls\":" + num(n.droppedCalls) + "}");
  out += "}\n";
  if (!p.recordJson.empty()) out += p.recordJson + "\n";
  for (const CommReport& c : p.comms) appendCommunicator(&out, p, c);
  return out;
}

void appendCommunicator(std::string* out, const ProcessReport& p, const CommReport& c) {
  *out += '{';
  field(out, "kind", "\"communicator\"");
  field(out, "comm", commId(c));
  field(out, "comm_name", jsonString(c.identity.name));
  field(out, "rank", std::to_string(c.identity.rank));
  field(out, "nranks", std::to_string(c.identity.nRanks));
  field(out, "n_nodes", std::to_string(c.identity.nNodes));
  field(out, "gpu", jsonString(c.identity.gpu.empty() ? "unknown" : c.identity.gpu));
  field(out, "node", jsonString(p.node));
  field(out, "pid", std::to_string(p.pid));
  field(out, "abi", std::to_string(c.identity.abiVersion));
  field(out, "finalized", c.finalized ? "true" : "false");
  if (c.folded > 0) {
    field(out, "folded", num(c.folded));
    field(out, "first_comm", jsonString(commIdText(c.firstCommId)));
    field(out, "last_comm", jsonString(commIdText(c.lastCommId)));
  }
  field(out, "seen", num(c.collectives.seen));
  field(out, "measured", num(c.collectives.measured));
  field(out, "skipped", skippedObject(c.collectives));
  field(out, "calibration_overflow", num(c.samplesOverflow));
  std::string groups = "{";
  for (int g = 0; g < static_cast<int>(GroupOutcome::Count); ++g) {
    if (g > 0) groups += ',';
    groups += jsonString(groupOutcomeName(static_cast<GroupOutcome>(g))) + ":" + num(c.groups[g]);
  }
  groups += '}';
  field(out, "p2p",
        "{\"seen\":" + num(c.p2p.seen) + ",\"measured\":" + num(c.p2p.measured) +
            ",\"skipped\":" + skippedObject(c.p2p) +
            ",\"peers\":{\"Send\":" + num(static_cast<uint64_t>(c.peersSentTo)) + ",\"Recv\":" +
            num(static_cast<uint64_t>(c.peersReceivedFrom)) + "},\"groups\":" + groups + "}");
  *out += "}\n";
  for (const KeyReport& k : c.keys) keyLine(out, p, c, k);
  for (size_t i = 0; i < c.samples.size(); ++i) {
    calibrationLine(out, p, c, c.samples[i],
                    i < c.sampleDecisions.size() ? c.sampleDecisions[i] : "NCCL");
  }
}

}  // namespace pilot::metrics
