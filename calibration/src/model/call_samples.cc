// Profiler metrics as Measurements: per-call histograms pooled per shape, size and
// configuration, reduced to robust statistics of log time (docs/calibration.md, "Calibrate
// from your jobs").
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "pilot/calibration/metrics_summary.h"
#include "pilot/core/fabric.h"
#include "pilot/tuner/names.h"
#include "pilot/tuner/table.h"

namespace pilot::calibration {
namespace {

/// A standard deviation below the bins' own resolution is not measured: the floor is the
/// standard deviation of a value spread evenly over one bin.
const double kBinLog = std::log(kBinRatio);
const double kMinLogSigma = kBinLog / std::sqrt(12.0);
/// The interval minUs..maxUs spans this many standard errors either side.
constexpr double kIntervalErrors = 2.0;

/// NCCL's bus bandwidth factor (nccl-tests' busbw = algbw x factor).
double busFactor(const std::string& collective, int ranks) {
  if (ranks <= 1) return 1.0;
  const double n = ranks;
  if (collective == "allreduce") return 2.0 * (n - 1) / n;
  if (collective == "allgather" || collective == "reducescatter") return (n - 1) / n;
  return 1.0;
}

std::string configLabel(const std::string& algo, const std::string& proto) {
  return algo + "/" + proto;
}

Config configOf(const std::string& algo, const std::string& proto) {
  Config c;
  c.label = configLabel(algo, proto);
  // NCCL's spellings, as NCCL_ALGO and NCCL_PROTO take them: ruleForConfig reads them.
  if (auto a = tuner::parseAlgorithm(algo)) c.algo = tuner::algorithmDisplayName(*a);
  if (auto p = tuner::parseProtocol(proto)) c.proto = tuner::protocolDisplayName(*p);
  return c;
}

SizeStat sizeStat(uint64_t size, const std::map<int, uint64_t>& bins, const std::string& coll,
                  int ranks) {
  const CallStats cs = callStats(bins);
  SizeStat st;
  st.size = size;
  st.calls = cs.calls;
  st.logSigma = cs.logSigma;
  st.timeUs = std::exp(cs.logMean);
  const double se = cs.calls > 0 ? cs.logSigma / std::sqrt(static_cast<double>(cs.calls)) : 0.0;
  st.minUs = std::exp(cs.logMean - kIntervalErrors * se);
  st.maxUs = std::exp(cs.logMean + kIntervalErrors * se);
  st.spread = (st.maxUs - st.minUs) / st.timeUs;
  st.busbw = static_cast<double>(size) / st.timeUs / 1e3 * busFactor(coll, ranks);
  return st;
}

std::string setupOf(const CallRecord& r) {
  return "NCCL " + (r.nccl.empty() ? std::string("unknown") : r.nccl) + " " +
         (r.fabric.empty() ? std::string("unknown") : r.fabric);
}

}  // namespace

CallStats callStats(const std::map<int, uint64_t>& bins) {
  CallStats out;
  for (const auto& [k, count] : bins) out.calls += count;
  if (out.calls == 0) return out;
  const double n = static_cast<double>(out.calls);
  const double cut = kTrimFraction * n;  // calls trimmed (winsorized) at each end, fractional
  // Each bin's calls sit at its centre in log time: ln(1.02^(k + 1/2) ns / 1000) (microseconds).
  auto value = [](int k) { return (k + 0.5) * kBinLog - std::log(1000.0); };
  // The values at the trimming points: the calls `cut` from each end.
  auto quantileBin = [&](double rank) {
    double seen = 0;
    for (const auto& [k, count] : bins) {
      seen += static_cast<double>(count);
      if (seen > rank) return k;
    }
    return bins.rbegin()->first;
  };
  const double lowValue = value(quantileBin(cut)), highValue = value(quantileBin(n - cut - 1e-9));
  double seen = 0, kept = 0, sum = 0, wSum = 0, wSq = 0;
  for (const auto& [k, count] : bins) {
    const double c = static_cast<double>(count), v = value(k);
    // The part of this bin inside (cut, n - cut): the trimmed mean's share.
    const double inside = std::max(0.0, std::min(seen + c, n - cut) - std::max(seen, cut));
    kept += inside, sum += inside * v;
    const double w = std::clamp(v, lowValue, highValue);
    wSum += c * w, wSq += c * w * w;
    seen += c;
  }
  out.logMean = kept > 0 ? sum / kept : value(quantileBin(n / 2));
  const double wMean = wSum / n;
  const double wVar = n > 1 ? std::max(0.0, (wSq - n * wMean * wMean) / (n - 1)) : 0.0;
  out.logSigma = std::max(std::sqrt(wVar), kMinLogSigma) / (1.0 - 2.0 * kTrimFraction);
  out.p10Us = std::exp(value(quantileBin(0.1 * n)));
  out.p90Us = std::exp(value(quantileBin(0.9 * n - 1e-9)));
  return out;
}

Measurements summarizeMetrics(const MetricsData& data) {
  Measurements out;
  out.notes = data.problems;
  out.notes.insert(out.notes.end(), data.notes.begin(), data.notes.end());
  // shape -> size -> (algo, proto) -> pooled bins, and the records behind each.
  using Cell = std::pair<std::string, std::string>;
  struct Pool {
    std::map<int, uint64_t> bins;
    std::vector<int> records;
    bool byRule = false;  ///< a rule of the job's table chose this configuration
  };
  std::map<ShapeKey, std::map<uint64_t, std::map<Cell, Pool>>> shapes;
  std::map<ShapeKey, CallRecord> first;  // one record per shape: its keys
  std::map<ShapeKey, std::set<std::string>> tables;
  for (size_t i = 0; i < data.records.size(); ++i) {
    const CallRecord& r = data.records[i];
    const ShapeKey key{r.collective, r.nodes, r.ranks, setupOf(r)};
    Pool& pool = shapes[key][r.bytes][{r.algo, r.proto}];
    for (const auto& [k, count] : r.bins) pool.bins[k] += count;
    pool.records.push_back(static_cast<int>(i));
    pool.byRule = pool.byRule || r.byRule;
    first.emplace(key, r);
    if (!r.tableSha256.empty()) tables[key].insert(r.tableSha256);
  }

  // The same collective and size of communicator under several NCCL versions or fabrics:
  // separate shapes, never pooled.
  std::map<std::tuple<std::string, int, int>, std::vector<std::string>> setups;
  for (const auto& [key, bySize] : shapes) {
    setups[{key.collective, key.nodes, key.ranks}].push_back(key.setup);
  }
  for (const auto& [k, list] : setups) {
    if (list.size() < 2) continue;
    std::string all;
    for (const std::string& s : list) all += (all.empty() ? "" : "; ") + s;
    out.notes.push_back(
        "metrics of " + std::get<0>(k) + " nodes=" + std::to_string(std::get<1>(k)) +
        " ranks=" + std::to_string(std::get<2>(k)) + " come from " + std::to_string(list.size()) +
        " NCCL versions or fabrics (" + all + "): fitted as separate shapes, never pooled");
  }

  for (auto& [key, bySize] : shapes) {
    const CallRecord& keys = first.at(key);
    Shape shape;
    shape.key = key;
    shape.perCall = true;
    shape.ncclVersion = keys.nccl;
    if (auto f = parseFabric(keys.fabric)) shape.fabrics = tuner::bit(*f);
    std::map<Cell, Series> series;
    Series def;
    def.label = "default";
    std::vector<const Cell*> kept;  // per size: the baseline's cell where a rule chose it
    for (auto& [size, cells] : bySize) {
      // The baseline: the configuration with the most calls (ties: the first in name order).
      const Cell* baseline = nullptr;
      uint64_t most = 0;
      for (auto& [cell, pool] : cells) {
        uint64_t calls = 0;
        for (const auto& [k, count] : pool.bins) calls += count;
        if (baseline == nullptr || calls > most) baseline = &cell, most = calls;
        Series& s = series[cell];
        if (s.label.empty()) s.config = configOf(cell.first, cell.second), s.label = s.config.label;
        s.sizes.push_back(sizeStat(size, pool.bins, key.collective, key.ranks));
        s.calls += s.sizes.back().calls;
        s.runs.insert(s.runs.end(), pool.records.begin(), pool.records.end());
      }
      const Pool& base = cells.at(*baseline);
      def.sizes.push_back(sizeStat(size, base.bins, key.collective, key.ranks));
      def.calls += def.sizes.back().calls;
      def.runs.insert(def.runs.end(), base.records.begin(), base.records.end());
      kept.push_back(base.byRule ? baseline : nullptr);
    }
    std::map<Cell, int> position;  // the series' index in the shape: the default comes first
    for (const auto& [cell, s] : series)
      position.emplace(cell, static_cast<int>(position.size()) + 1);
    for (size_t i = 0; i < kept.size(); ++i) {
      if (kept[i] != nullptr) def.sizes[i].keptSeries = position.at(*kept[i]);
    }
    shape.series.push_back(std::move(def));
    for (auto& [cell, s] : series) shape.series.push_back(std::move(s));
    shape.defaultSeries = 0;
    if (auto t = tables.find(key); t != tables.end()) {
      out.notes.push_back(
          key.str() + ": the job(s) ran under a tuning table (sha256 " +
          t->second.begin()->substr(0, 12) +
          (t->second.size() > 1 ? " and " + std::to_string(t->second.size() - 1) + " other(s)"
                                : "") +
          "): where its rules decided, the baseline is the table's choice, not NCCL's, and a "
          "fit that finds nothing faster keeps it (a rule again)");
    }
    out.shapes.push_back(std::move(shape));
  }
  return out;
}

}  // namespace pilot::calibration
