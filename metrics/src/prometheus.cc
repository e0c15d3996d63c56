#include "pilot/metrics/prometheus.h"

#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "pilot/core/text.h"

namespace pilot::metrics {
namespace {

using Labels = std::vector<std::pair<const char*, std::string>>;

std::string labelText(const Labels& labels) {
  std::string out;
  for (const auto& [name, value] : labels) {
    if (!out.empty()) out += ',';
    out += name;
    out += "=\"";
    out += escapeLabelValue(value);
    out += '"';
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return text::formatDecimal(v);
}

std::string number(uint64_t v) {
  return std::to_string(v);
}

class Family {
 public:
  Family(std::string* out, const char* name, const char* type, const char* help) : out_(out) {
    *out_ += "# HELP ";
    *out_ += name;
    *out_ += ' ';
    *out_ += help;
    *out_ += "\n# TYPE ";
    *out_ += name;
    *out_ += ' ';
    *out_ += type;
    *out_ += '\n';
  }
  void sample(const std::string& name, const std::string& labels, const std::string& value) {
    *out_ += name;
    *out_ += '{';
    *out_ += labels;
    *out_ += "} ";
    *out_ += value;
    *out_ += '\n';
  }

 private:
  std::string* out_;
};

std::string orUnknown(const std::string& s) {
  return s.empty() ? "unknown" : s;
}

std::string algoProto(const KeyReport& k) {
  if (k.other) return "other";
  return std::string(algorithmLabel(k.fields.algorithm)) + "_" + protocolLabel(k.fields.protocol);
}

/// Our labels for one key of one communicator.
std::string keyLabels(const ProcessReport& p, const CommReport& c, const KeyReport& k,
                      const char* extraName = nullptr, const std::string& extraValue = "") {
  const CommIdentity& id = c.identity;
  Labels l = {{"node", p.node},
              {"gpu", orUnknown(id.gpu)},
              {"comm", commIdText(id.commId)},
              {"comm_name", orUnknown(id.name)},
              {"rank", std::to_string(id.rank)},
              {"nranks", std::to_string(id.nRanks)},
              {"n_nodes", std::to_string(id.nNodes)},
              {"collective", k.other ? "other" : operationName(k.fields.op)},
              {"message_size", k.other ? "other" : sizeBucketLabel(k.fields.bucket)},
              {"algo_proto", algoProto(k)},
              {"channels", k.other ? "other" : std::to_string(k.fields.channels)},
              {"decision", k.other ? "other" : k.decision}};
  if (extraName != nullptr) l.emplace_back(extraName, extraValue);
  return labelText(l);
}

std::string commLabels(const ProcessReport& p, const CommReport& c, const char* name,
                       const char* value) {
  const CommIdentity& id = c.identity;
  return labelText({{"node", p.node},
                    {"gpu", orUnknown(id.gpu)},
                    {"comm", commIdText(id.commId)},
                    {"comm_name", orUnknown(id.name)},
                    {"rank", std::to_string(id.rank)},
                    {name, value}});
}

/// Inspector's series: one per label set, over the interval (keys that differ only in what
/// Inspector does not label, channels and decision, or communicators sharing a name, merge).
void renderInspector(std::string* out, const ProcessReport& p) {
  std::map<std::string, KeyTotals> buckets;
  for (const CommReport& c : p.comms) {
    const CommIdentity& id = c.identity;
    const std::string version = "v" + std::to_string(id.abiVersion) + ".1";
    for (const KeyReport& k : c.keys) {
      if (k.interval.calls == 0) continue;
      const std::string labels =
          labelText({{"version", version},
                     {"slurm_job_id", p.slurmJobId.empty() ? "unknown" : p.slurmJobId},
                     {"node", p.node},
                     {"gpu", orUnknown(id.gpu)},
                     {"comm_name", orUnknown(id.name)},
                     {"n_nodes", std::to_string(id.nNodes)},
                     {"nranks", std::to_string(id.nRanks)},
                     {"collective", k.other ? "other" : operationName(k.fields.op)},
                     {"message_size", k.other ? "other" : sizeBucketLabel(k.fields.bucket)},
                     {"algo_proto", algoProto(k)}});
      buckets[labels].add(k.interval);
    }
  }
  Family bw(out, "nccl_bus_bandwidth_gbs", "gauge",
            "Bus bandwidth in GB/s (NCCL Inspector's series: geometric mean over the collectives "
            "completed since the previous write)");
  for (const auto& [labels, t] : buckets) {
    const double gm = t.busCalls > 0 ? std::exp(t.logBusGbs / static_cast<double>(t.busCalls)) : 0;
    bw.sample("nccl_bus_bandwidth_gbs", labels, number(gm));
  }
  Family exec(out, "nccl_collective_exec_time_microseconds", "gauge",
              "Kernel execution time in microseconds (NCCL Inspector's series: mean over the "
              "collectives completed since the previous write)");
  for (const auto& [labels, t] : buckets) {
    const double mean = static_cast<double>(t.timeNs) / static_cast<double>(t.calls) / 1000.0;
    exec.sample("nccl_collective_exec_time_microseconds", labels, number(mean));
  }
}

void renderKeys(std::string* out, const ProcessReport& p) {
  {
    Family f(out, "nccl_pilot_collective_calls_total", "counter",
             "Collectives measured (timed on the GPU) since the communicator was created");
    for (const CommReport& c : p.comms)
      for (const KeyReport& k : c.keys)
        f.sample("nccl_pilot_collective_calls_total", keyLabels(p, c, k), number(k.total.calls));
  }
  {
    const char* name = "nccl_pilot_collective_time_seconds";
    Family f(out, name, "histogram",
             "Kernel time per collective: the longest channel's GPU stop minus start");
    for (const CommReport& c : p.comms) {
      for (const KeyReport& k : c.keys) {
        uint64_t cumulative = 0;
        for (unsigned octave = 0; octave <= kOctaves; ++octave) {
          // le = 2^octave us holds bins 0 .. 2*octave exactly (histogram.h).
          for (unsigned b = octave == 0 ? 0 : 2 * octave - 1; b <= 2 * octave; ++b) {
            cumulative += k.total.bins[b];
          }
          const std::string le = number(std::ldexp(1e-6, static_cast<int>(octave)));
          f.sample(std::string(name) + "_bucket", keyLabels(p, c, k, "le", le), number(cumulative));
        }
        f.sample(std::string(name) + "_bucket", keyLabels(p, c, k, "le", "+Inf"),
                 number(k.total.calls));
        f.sample(std::string(name) + "_sum", keyLabels(p, c, k),
                 number(static_cast<double>(k.total.timeNs) * 1e-9));
        f.sample(std::string(name) + "_count", keyLabels(p, c, k), number(k.total.calls));
      }
    }
  }
  {
    Family f(out, "nccl_pilot_collective_bytes_total", "counter",
             "Message bytes (count x element size, per rank) of the measured collectives");
    for (const CommReport& c : p.comms)
      for (const KeyReport& k : c.keys)
        f.sample("nccl_pilot_collective_bytes_total", keyLabels(p, c, k),
                 number(k.total.messageBytes));
  }
  {
    Family f(out, "nccl_pilot_bus_bandwidth_bytes_per_second", "gauge",
             "Bus bandwidth (nccl-tests' factors) of all measured collectives: bus bytes over "
             "kernel time, since the communicator was created");
    for (const CommReport& c : p.comms)
      for (const KeyReport& k : c.keys)
        f.sample("nccl_pilot_bus_bandwidth_bytes_per_second", keyLabels(p, c, k),
                 number(busGbs(k.total) * 1e9));
  }
  {
    Family f(out, "nccl_pilot_expected_time_seconds", "gauge",
             "Calibrated time per collective from the deciding rule's expect= points, "
             "averaged over the measured calls");
    for (const CommReport& c : p.comms)
      for (const KeyReport& k : c.keys)
        if (k.total.expectedCalls > 0)
          f.sample("nccl_pilot_expected_time_seconds", keyLabels(p, c, k),
                   number(k.total.expectedNs / static_cast<double>(k.total.expectedCalls) * 1e-9));
  }
  {
    Family f(out, "nccl_pilot_drift_ratio", "gauge",
             "Live over calibrated bus bandwidth (calibrated time over kernel time) of the calls "
             "with a calibrated expectation; below 1 is slower than calibrated");
    for (const CommReport& c : p.comms)
      for (const KeyReport& k : c.keys)
        if (k.total.expectedCalls > 0 && k.total.expectedLiveNs > 0)
          f.sample("nccl_pilot_drift_ratio", keyLabels(p, c, k),
                   number(k.total.expectedNs / static_cast<double>(k.total.expectedLiveNs)));
  }
}

void renderProcess(std::string* out, const ProcessReport& p) {
  {
    Family f(out, "nccl_pilot_profiler_events_total", "counter",
             "Collectives the profiler saw, by outcome (measured, or why not)");
    for (const CommReport& c : p.comms) {
      f.sample("nccl_pilot_profiler_events_total", commLabels(p, c, "outcome", "seen"),
               number(c.seen));
      f.sample("nccl_pilot_profiler_events_total", commLabels(p, c, "outcome", "measured"),
               number(c.measured));
      for (int s = 0; s < static_cast<int>(Skip::Count); ++s) {
        f.sample("nccl_pilot_profiler_events_total",
                 commLabels(p, c, "outcome", skipName(static_cast<Skip>(s))), number(c.skipped[s]));
      }
    }
  }
  {
    Family f(out, "nccl_pilot_profiler_orphan_events_total", "counter",
             "Kernel events whose parent was not a collective of ours: foreign (another "
             "process's or not ours at all) or stale (its collective already completed)");
    f.sample("nccl_pilot_profiler_orphan_events_total",
             labelText({{"node", p.node}, {"reason", "foreign"}}),
             number(p.orphans[static_cast<int>(Orphan::Foreign)]));
    f.sample("nccl_pilot_profiler_orphan_events_total",
             labelText({{"node", p.node}, {"reason", "stale"}}),
             number(p.orphans[static_cast<int>(Orphan::Stale)]));
  }
  {
    Family f(out, "nccl_pilot_profiler_slots", "gauge",
             "In-flight collective slots of the process (a collective started while all are "
             "taken is not measured)");
    f.sample("nccl_pilot_profiler_slots", labelText({{"node", p.node}}),
             number(static_cast<uint64_t>(p.slots)));
  }
  {
    Family f(out, "nccl_pilot_profiler_slots_in_use", "gauge",
             "Collectives started and not yet completed");
    f.sample("nccl_pilot_profiler_slots_in_use", labelText({{"node", p.node}}),
             number(static_cast<uint64_t>(p.slotsInUse)));
  }
  {
    Family f(out, "nccl_pilot_build_info", "gauge", "The nccl-pilot library that wrote this");
    f.sample("nccl_pilot_build_info",
             labelText({{"node", p.node}, {"version", p.version}, {"pid", std::to_string(p.pid)}}),
             "1");
  }
}

}  // namespace

std::string escapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string renderTextfile(const ProcessReport& report) {
  std::string out;
  renderInspector(&out, report);
  renderKeys(&out, report);
  renderProcess(&out, report);
  return out;
}

}  // namespace pilot::metrics
