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
  Family(std::string* out, const std::string& name, const char* type, const std::string& help)
      : out_(out) {
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
  return algoProtoLabel(k.fields.algorithm, k.fields.protocol);
}

/// Send and Recv keys go to the P2P series; everything else (collectives, grouped all-to-alls,
/// the shared "other" key) to the collective series.
bool isP2pKey(const KeyReport& k) {
  return !k.other && isPointToPoint(k.fields.op);
}

/// Our labels for one key of one communicator: a collective's, or a Send's or Recv's (the
/// operation as p2p_operation; no algorithm, protocol or decision: NCCL picks none for it).
std::string keyLabels(const ProcessReport& p, const CommReport& c, const KeyReport& k,
                      const char* extraName = nullptr, const std::string& extraValue = "") {
  const CommIdentity& id = c.identity;
  Labels l = {{"node", p.node},
              {"gpu", orUnknown(id.gpu)},
              {"comm", commIdText(id.commId)},
              {"comm_name", orUnknown(id.name)},
              {"rank", std::to_string(id.rank)},
              {"nranks", std::to_string(id.nRanks)},
              {"n_nodes", std::to_string(id.nNodes)}};
  if (isP2pKey(k)) {
    l.emplace_back("p2p_operation", operationName(k.fields.op));
    l.emplace_back("message_size", sizeBucketLabel(k.fields.bucket));
    l.emplace_back("channels", std::to_string(k.fields.channels));
  } else {
    l.emplace_back("collective", k.other ? "other" : operationName(k.fields.op));
    l.emplace_back("message_size", k.other ? "other" : sizeBucketLabel(k.fields.bucket));
    l.emplace_back("algo_proto", algoProto(k));
    l.emplace_back("channels", k.other ? "other" : std::to_string(k.fields.channels));
    l.emplace_back("decision", k.other ? "other" : k.decision);
  }
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
/// Send and Recv have their own two series, labelled by p2p_operation instead of collective and
/// without algo_proto, as Inspector writes them.
void renderInspector(std::string* out, const ProcessReport& p) {
  std::map<std::string, KeyTotals> collectives, p2p;
  for (const CommReport& c : p.comms) {
    const CommIdentity& id = c.identity;
    const std::string version = "v" + std::to_string(id.abiVersion) + ".1";
    for (const KeyReport& k : c.keys) {
      if (k.interval.calls == 0) continue;
      Labels l = {{"version", version},
                  {"slurm_job_id", p.slurmJobId.empty() ? "unknown" : p.slurmJobId},
                  {"node", p.node},
                  {"gpu", orUnknown(id.gpu)},
                  {"comm_name", orUnknown(id.name)},
                  {"n_nodes", std::to_string(id.nNodes)},
                  {"nranks", std::to_string(id.nRanks)}};
      if (isP2pKey(k)) {
        l.emplace_back("p2p_operation", operationName(k.fields.op));
        l.emplace_back("message_size", sizeBucketLabel(k.fields.bucket));
        p2p[labelText(l)].add(k.interval);
      } else {
        l.emplace_back("collective", k.other ? "other" : operationName(k.fields.op));
        l.emplace_back("message_size", k.other ? "other" : sizeBucketLabel(k.fields.bucket));
        l.emplace_back("algo_proto", algoProto(k));
        collectives[labelText(l)].add(k.interval);
      }
    }
  }
  struct Kind {
    const std::map<std::string, KeyTotals>& buckets;
    const char *bandwidth, *time, *what;
  };
  for (const Kind& kind : {Kind{collectives, "nccl_bus_bandwidth_gbs",
                                "nccl_collective_exec_time_microseconds", "collectives"},
                           Kind{p2p, "nccl_p2p_bus_bandwidth_gbs",
                                "nccl_p2p_exec_time_microseconds", "Send/Recv operations"}}) {
    Family bw(out, kind.bandwidth, "gauge",
              std::string("Bus bandwidth in GB/s (NCCL Inspector's series: geometric mean over "
                          "the ") +
                  kind.what + " completed since the previous write)");
    for (const auto& [labels, t] : kind.buckets) {
      const double gm =
          t.busCalls > 0 ? std::exp(t.logBusGbs / static_cast<double>(t.busCalls)) : 0;
      bw.sample(kind.bandwidth, labels, number(gm));
    }
    Family exec(out, kind.time, "gauge",
                std::string("Kernel execution time in microseconds (NCCL Inspector's series: "
                            "mean over the ") +
                    kind.what + " completed since the previous write)");
    for (const auto& [labels, t] : kind.buckets) {
      const double mean = static_cast<double>(t.timeNs) / static_cast<double>(t.calls) / 1000.0;
      exec.sample(kind.time, labels, number(mean));
    }
  }
}

/// Our cumulative series per key: collectives' (nccl_pilot_collective_*) or Send/Recv's
/// (nccl_pilot_p2p_*).
void renderKeyFamilies(std::string* out, const ProcessReport& p, bool pointToPoint) {
  const std::string prefix = pointToPoint ? "nccl_pilot_p2p" : "nccl_pilot_collective";
  const std::string what = pointToPoint ? "Send/Recv operations" : "collectives";
  const auto forKeys = [&](auto&& emit) {
    for (const CommReport& c : p.comms) {
      for (const KeyReport& k : c.keys) {
        if (isP2pKey(k) == pointToPoint) emit(c, k);
      }
    }
  };
  {
    const std::string name = prefix + "_calls_total";
    Family f(out, name, "counter",
             "Measured " + what + " (timed on the GPU) since the communicator was created");
    forKeys([&](const CommReport& c, const KeyReport& k) {
      f.sample(name, keyLabels(p, c, k), number(k.total.calls));
    });
  }
  {
    const std::string name = prefix + "_time_seconds";
    Family f(out, name, "histogram",
             std::string("Kernel time per ") + (pointToPoint ? "operation" : "collective") +
                 ": the longest channel's GPU stop minus start");
    forKeys([&](const CommReport& c, const KeyReport& k) {
      uint64_t cumulative = 0;
      for (unsigned octave = 0; octave <= kOctaves; ++octave) {
        // le = 2^octave us holds bins 0 .. 2*octave exactly (histogram.h).
        for (unsigned b = octave == 0 ? 0 : 2 * octave - 1; b <= 2 * octave; ++b) {
          cumulative += k.total.bins[b];
        }
        const std::string le = number(std::ldexp(1e-6, static_cast<int>(octave)));
        f.sample(name + "_bucket", keyLabels(p, c, k, "le", le), number(cumulative));
      }
      f.sample(name + "_bucket", keyLabels(p, c, k, "le", "+Inf"), number(k.total.calls));
      f.sample(name + "_sum", keyLabels(p, c, k),
               number(static_cast<double>(k.total.timeNs) * 1e-9));
      f.sample(name + "_count", keyLabels(p, c, k), number(k.total.calls));
    });
  }
  {
    const std::string name = prefix + "_bytes_total";
    Family f(out, name, "counter",
             "Message bytes (count x element size, per rank) of the measured " + what);
    forKeys([&](const CommReport& c, const KeyReport& k) {
      f.sample(name, keyLabels(p, c, k), number(k.total.messageBytes));
    });
  }
  {
    // The collectives' series predates the prefixes: its name stays.
    const std::string name = pointToPoint ? "nccl_pilot_p2p_bus_bandwidth_bytes_per_second"
                                          : "nccl_pilot_bus_bandwidth_bytes_per_second";
    Family f(out, name, "gauge",
             "Bus bandwidth (nccl-tests' factors; 1 for a Send or Recv) of all measured " + what +
                 ": bus bytes over kernel time, since the communicator was created");
    forKeys([&](const CommReport& c, const KeyReport& k) {
      f.sample(name, keyLabels(p, c, k), number(busGbs(k.total) * 1e9));
    });
  }
}

void renderKeys(std::string* out, const ProcessReport& p) {
  renderKeyFamilies(out, p, false);
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
  renderKeyFamilies(out, p, true);
  {
    // The count of peers, not a series per peer: a rank of a large communicator may reach
    // thousands.
    Family f(out, "nccl_pilot_p2p_peers", "gauge",
             "Distinct ranks of the communicator this rank sent to (Send) or received from "
             "(Recv)");
    for (const CommReport& c : p.comms) {
      f.sample("nccl_pilot_p2p_peers", commLabels(p, c, "p2p_operation", "Send"),
               number(static_cast<uint64_t>(c.peersSentTo)));
      f.sample("nccl_pilot_p2p_peers", commLabels(p, c, "p2p_operation", "Recv"),
               number(static_cast<uint64_t>(c.peersReceivedFrom)));
    }
  }
}

void renderProcess(std::string* out, const ProcessReport& p) {
  // The process-wide series carry the pid: the ranks of a node write one textfile each into
  // one node_exporter directory, which drops a series another file already had.
  const std::string pid = std::to_string(p.pid);
  for (const bool pointToPoint : {false, true}) {
    const char* name =
        pointToPoint ? "nccl_pilot_profiler_p2p_events_total" : "nccl_pilot_profiler_events_total";
    Family f(out, name, "counter",
             std::string(pointToPoint ? "Send/Recv operations" : "Collectives") +
                 " the profiler saw, by outcome (measured, or why not)");
    for (const CommReport& c : p.comms) {
      const TaskCounts& t = pointToPoint ? c.p2p : c.collectives;
      f.sample(name, commLabels(p, c, "outcome", "seen"), number(t.seen));
      f.sample(name, commLabels(p, c, "outcome", "measured"), number(t.measured));
      for (int s = 0; s < static_cast<int>(Skip::Count); ++s) {
        f.sample(name, commLabels(p, c, "outcome", skipName(static_cast<Skip>(s))),
                 number(t.skipped[s]));
      }
    }
  }
  {
    Family f(out, "nccl_pilot_p2p_groups_total", "counter",
             "NCCL groups (kernel plans) holding Send/Recv operations, by outcome: an exchange "
             "with every other rank measured as one AlltoAll, partial (fewer peers, or an "
             "operation not measured), or untracked (no group entry was free)");
    for (const CommReport& c : p.comms) {
      for (int g = 0; g < static_cast<int>(GroupOutcome::Count); ++g) {
        f.sample("nccl_pilot_p2p_groups_total",
                 commLabels(p, c, "outcome", groupOutcomeName(static_cast<GroupOutcome>(g))),
                 number(c.groups[g]));
      }
    }
  }
  {
    Family f(out, "nccl_pilot_profiler_orphan_events_total", "counter",
             "Events that matched no work of ours: kernel events whose parent was foreign "
             "(another process's or not ours at all) or stale (its task already completed or "
             "was let go of at its communicator's finalize), and groups whose stop never came "
             "(group_left_open: closed at their thread's next group, or after it exited)");
    f.sample("nccl_pilot_profiler_orphan_events_total",
             labelText({{"node", p.node}, {"pid", pid}, {"reason", "foreign"}}),
             number(p.orphans[static_cast<int>(Orphan::Foreign)]));
    f.sample("nccl_pilot_profiler_orphan_events_total",
             labelText({{"node", p.node}, {"pid", pid}, {"reason", "stale"}}),
             number(p.orphans[static_cast<int>(Orphan::Stale)]));
    f.sample("nccl_pilot_profiler_orphan_events_total",
             labelText({{"node", p.node}, {"pid", pid}, {"reason", "group_left_open"}}),
             number(p.orphans[static_cast<int>(Orphan::GroupLeftOpen)]));
  }
  {
    Family f(out, "nccl_pilot_profiler_communicators", "gauge",
             "Communicators measured now (their series are in this file until their finalize)");
    f.sample("nccl_pilot_profiler_communicators", labelText({{"node", p.node}, {"pid", pid}}),
             number(p.communicators.live));
  }
  {
    Family f(out, "nccl_pilot_profiler_communicators_finished_total", "counter",
             "Communicators finalized since the process started (the summary keeps their "
             "figures, folded per name and shape)");
    f.sample("nccl_pilot_profiler_communicators_finished_total",
             labelText({{"node", p.node}, {"pid", pid}}), number(p.communicators.finished));
  }
  {
    Family f(out, "nccl_pilot_profiler_slots", "gauge",
             "In-flight collective slots of the process (a collective started while all are "
             "taken is not measured)");
    f.sample("nccl_pilot_profiler_slots", labelText({{"node", p.node}, {"pid", pid}}),
             number(static_cast<uint64_t>(p.slots)));
  }
  {
    Family f(out, "nccl_pilot_profiler_slots_in_use", "gauge",
             "Collectives started and not yet completed");
    f.sample("nccl_pilot_profiler_slots_in_use", labelText({{"node", p.node}, {"pid", pid}}),
             number(static_cast<uint64_t>(p.slotsInUse)));
  }
  {
    Family f(out, "nccl_pilot_profiler_groups_in_use", "gauge",
             "Groups holding Send/Recv operations whose kernels have not all completed");
    f.sample("nccl_pilot_profiler_groups_in_use", labelText({{"node", p.node}, {"pid", pid}}),
             number(static_cast<uint64_t>(p.groupsInUse)));
  }
  {
    Family f(out, "nccl_pilot_build_info", "gauge", "The nccl-pilot library that wrote this");
    f.sample("nccl_pilot_build_info",
             labelText({{"node", p.node}, {"version", p.version}, {"pid", std::to_string(p.pid)}}),
             "1");
  }
}

}  // namespace

/// What each live communicator launched and waits for (report.h LiveState): the series a
/// fleet's Prometheus joins across ranks to see a stall and the ranks behind the others.
void renderLive(std::string* out, const ProcessReport& p) {
  // One rank of one communicator, and what a series adds to it.
  auto labels = [&](const CommReport& c, Labels extra = {}) {
    const CommIdentity& id = c.identity;
    Labels l = {{"node", p.node},
                {"gpu", orUnknown(id.gpu)},
                {"comm", commIdText(id.commId)},
                {"comm_name", orUnknown(id.name)},
                {"rank", std::to_string(id.rank)},
                {"nranks", std::to_string(id.nRanks)}};
    l.insert(l.end(), extra.begin(), extra.end());
    return labelText(l);
  };
  // Launches and completions per kind. Every kind, zeros too: a rank that never launched one
  // must still have a series for Prometheus to compare with the ranks that did.
  struct PerKind {
    const char *name, *help;
    uint64_t LaunchCount::*count;
  };
  const PerKind perKind[] = {
      {"nccl_pilot_comm_operations_launched_total",
       "Operations this rank launched on the communicator, by kind (Send and Recv over every "
       "peer)",
       &LaunchCount::launched},
      {"nccl_pilot_comm_operations_completed_total",
       "Operations of this rank completed on the communicator, by kind (Send and Recv over "
       "every peer)",
       &LaunchCount::done},
  };
  for (const PerKind& g : perKind) {
    Family f(out, g.name, "counter", g.help);
    for (const CommReport& c : p.comms) {
      if (!c.hasLive) continue;
      for (int k = 0; k < kNumOperations; ++k) {
        f.sample(g.name, labels(c, {{"operation", operationName(static_cast<Operation>(k))}}),
                 number(c.live.view.kinds[k].*g.count));
      }
    }
  }
  {
    // The oldest operation in flight, for `nccl-pilot hang --prometheus`: its number as the
    // value and its kind as a label (a series per kind a rank waits in, not per operation).
    Family f(out, "nccl_pilot_comm_oldest_in_flight_seq", "gauge",
             "Number of the oldest operation in flight (per kind, from 0), by kind; no sample "
             "when nothing is in flight");
    for (const CommReport& c : p.comms) {
      const InFlightView& v = c.live.view;
      if (!c.hasLive || v.inFlight == 0 || !v.hasOldest) continue;
      f.sample("nccl_pilot_comm_oldest_in_flight_seq",
               labels(c, {{"operation", operationName(v.oldest.op)}}), number(v.oldest.seq));
    }
  }
  struct Oldest {
    const char *name, *help;
    double (*value)(const OperationView&);
  };
  const Oldest oldest[] = {
      {"nccl_pilot_comm_oldest_in_flight_bytes", "Size of the oldest operation in flight",
       [](const OperationView& o) { return static_cast<double>(o.bytes); }},
      {"nccl_pilot_comm_oldest_in_flight_peer",
       "Peer rank of the oldest operation in flight when a Send/Recv, -1 for a collective",
       [](const OperationView& o) { return static_cast<double>(o.peer); }},
      {"nccl_pilot_comm_oldest_in_flight_channels_started",
       "Kernel channels of the oldest operation in flight that started (0: queued on the GPU "
       "behind another, or not reported)",
       [](const OperationView& o) { return static_cast<double>(__builtin_popcountll(o.started)); }},
  };
  for (const Oldest& g : oldest) {
    Family f(out, g.name, "gauge", g.help);
    for (const CommReport& c : p.comms) {
      const InFlightView& v = c.live.view;
      if (c.hasLive && v.inFlight > 0 && v.hasOldest)
        f.sample(g.name, labels(c), number(g.value(v.oldest)));
    }
  }
  {
    Family f(out, "nccl_pilot_comm_process_id", "gauge",
             "The process (pid) of this rank of the communicator");
    for (const CommReport& c : p.comms) {
      if (c.hasLive)
        f.sample("nccl_pilot_comm_process_id", labels(c), number(static_cast<uint64_t>(p.pid)));
    }
  }
  struct Gauge {
    const char *name, *help;
    double (*value)(const LiveState&);
  };
  const Gauge gauges[] = {
      {"nccl_pilot_comm_operations_in_flight", "Operations launched and not completed",
       [](const LiveState& l) { return static_cast<double>(l.view.inFlight); }},
      {"nccl_pilot_comm_oldest_in_flight_seconds",
       "Age of the oldest operation in flight, 0 when none",
       [](const LiveState& l) {
         return l.view.hasOldest && l.nowNs > l.view.oldest.launchNs
                    ? static_cast<double>(l.nowNs - l.view.oldest.launchNs) / 1e9
                    : 0.0;
       }},
      {"nccl_pilot_comm_waiting_seconds",
       "Seconds without a completion while an operation is in flight (since the last "
       "completion or the oldest's launch, the later), 0 when none",
       [](const LiveState& l) { return l.waitingS; }},
      {"nccl_pilot_comm_stalled", "1 when waiting_seconds reached NCCL_PILOT_STALL_S",
       [](const LiveState& l) { return l.stalled ? 1.0 : 0.0; }},
  };
  for (const Gauge& g : gauges) {
    Family f(out, g.name, "gauge", g.help);
    for (const CommReport& c : p.comms) {
      if (c.hasLive) f.sample(g.name, labels(c), number(g.value(c.live)));
    }
  }
  {
    Family f(out, "nccl_pilot_comm_stall_threshold_seconds", "gauge",
             "NCCL_PILOT_STALL_S of this process");
    for (const CommReport& c : p.comms) {
      if (c.hasLive) {
        f.sample("nccl_pilot_comm_stall_threshold_seconds", labels(c), number(p.stallSeconds));
      }
    }
  }
  {
    // The late arriver's evidence: the rank whose kernels are the shortest arrived last.
    Family f(out, "nccl_pilot_comm_window_kernel_seconds", "gauge",
             "Mean kernel time per call of the last export window, per collective and size");
    for (const CommReport& c : p.comms) {
      if (!c.hasLive) continue;
      for (const WindowKey& w : c.live.window) {
        f.sample("nccl_pilot_comm_window_kernel_seconds",
                 labels(c, {{"collective", operationName(w.op)},
                            {"message_size", sizeBucketLabel(sizeBucket(w.bytes))}}),
                 number(w.meanUs / 1e6));
      }
    }
  }
}

std::string renderTextfile(const ProcessReport& report) {
  std::string out;
  renderInspector(&out, report);
  renderKeys(&out, report);
  renderLive(&out, report);
  renderProcess(&out, report);
  out += report.recordSeries;
  return out;
}

}  // namespace pilot::metrics
