#include "pilot/metrics/summary.h"

#include <cmath>

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

void collectiveLine(std::string* out, const ProcessReport& p, const CommReport& c,
                    const KeyReport& k) {
  const KeyTotals& t = k.total;
  *out += '{';
  field(out, "kind", "\"collective\"");
  field(out, "comm", commId(c));
  field(out, "comm_name", jsonString(c.identity.name));
  field(out, "rank", std::to_string(c.identity.rank));
  field(out, "nranks", std::to_string(c.identity.nRanks));
  field(out, "n_nodes", std::to_string(c.identity.nNodes));
  field(out, "node", jsonString(p.node));
  if (k.other) {
    field(out, "collective", "\"other\"");
  } else {
    field(out, "collective", jsonString(operationName(k.fields.op)));
    field(out, "message_size", jsonString(sizeBucketLabel(k.fields.bucket)));
    field(out, "size_bucket_bytes", num(uint64_t{1} << k.fields.bucket));
    field(out, "algo", jsonString(algorithmLabel(k.fields.algorithm)));
    field(out, "proto", jsonString(protocolLabel(k.fields.protocol)));
    field(out, "channels", std::to_string(k.fields.channels));
    field(out, "decision", jsonString(k.decision));
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

}  // namespace

std::string jsonString(const std::string& value) {
  static const char* const kHex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : value) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

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
            ",\"stale\":" + num(p.orphans[static_cast<int>(Orphan::Stale)]) + "}");
  out += "}\n";
  for (const CommReport& c : p.comms) {
    out += '{';
    field(&out, "kind", "\"communicator\"");
    field(&out, "comm", commId(c));
    field(&out, "comm_name", jsonString(c.identity.name));
    field(&out, "rank", std::to_string(c.identity.rank));
    field(&out, "nranks", std::to_string(c.identity.nRanks));
    field(&out, "n_nodes", std::to_string(c.identity.nNodes));
    field(&out, "gpu", jsonString(c.identity.gpu.empty() ? "unknown" : c.identity.gpu));
    field(&out, "node", jsonString(p.node));
    field(&out, "pid", std::to_string(p.pid));
    field(&out, "abi", std::to_string(c.identity.abiVersion));
    field(&out, "finalized", c.finalized ? "true" : "false");
    field(&out, "seen", num(c.seen));
    field(&out, "measured", num(c.measured));
    std::string skipped = "{";
    for (int s = 0; s < static_cast<int>(Skip::Count); ++s) {
      if (s > 0) skipped += ',';
      skipped += jsonString(skipName(static_cast<Skip>(s))) + ":" + num(c.skipped[s]);
    }
    field(&out, "skipped", skipped + "}");
    out += "}\n";
    for (const KeyReport& k : c.keys) collectiveLine(&out, p, c, k);
  }
  return out;
}

}  // namespace pilot::metrics
