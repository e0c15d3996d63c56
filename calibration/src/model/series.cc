#include "pilot/calibration/series.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "pilot/core/text.h"

namespace pilot::calibration {

std::string ShapeKey::str() const {
  std::string s = collective.empty() ? std::string("?") : collective;
  s += " nodes=" + (nodes > 0 ? std::to_string(nodes) : std::string("?"));
  s += " ranks=" + (ranks > 0 ? std::to_string(ranks) : std::string("?"));
  if (!setup.empty()) s += " setup=" + setup;
  return s;
}

int ShapeKey::ranksPerNode() const {
  if (nodes <= 0 || ranks <= 0 || ranks % nodes != 0) return 0;
  return ranks / nodes;
}

bool ShapeKey::operator<(const ShapeKey& o) const {
  return std::tie(collective, setup, ranks, nodes) <
         std::tie(o.collective, o.setup, o.ranks, o.nodes);
}

bool ShapeKey::operator==(const ShapeKey& o) const {
  return collective == o.collective && nodes == o.nodes && ranks == o.ranks && setup == o.setup;
}

const SizeStat* Series::at(uint64_t size) const {
  auto it = std::lower_bound(sizes.begin(), sizes.end(), size,
                             [](const SizeStat& s, uint64_t v) { return s.size < v; });
  return it != sizes.end() && it->size == size ? &*it : nullptr;
}

std::string Series::countText() const {
  return calls > 0 ? " " + std::to_string(calls) + " calls" : " x" + std::to_string(runs.size());
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string seriesKey(const Config& c) {
  return text::toLower(c.algo) + "|" + text::toLower(c.proto) + "|" +
         std::to_string(c.minChannels) + "|" + std::to_string(c.maxChannels);
}

bool sameForcing(const Config& a, const Config& b) {
  return seriesKey(a) == seriesKey(b);
}

namespace {

/// Why a run cannot be used, or an empty list.
std::vector<std::string> exclusionReasons(const Run& run) {
  std::vector<std::string> why;
  if (run.failed) {
    why.push_back(run.problems.empty() ? std::string("marked failed by the parser")
                                       : "failed: " + run.problems.front());
    for (size_t i = 1; i < run.problems.size(); ++i) why.push_back(run.problems[i]);
  }
  if (run.collective.empty()) why.push_back("unknown collective");
  // The parser marks these runs failed; checked again so a hand-built Dataset cannot slip a
  // wrong result into a fit.
  for (const Sample& s : run.samples) {
    if (s.wrong > 0) {
      why.push_back("#wrong = " + std::to_string(s.wrong) + " at size " + std::to_string(s.size));
      break;
    }
  }
  bool any = false;
  for (const Sample& s : run.samples) any = any || (!s.inPlace && s.size > 0 && s.timeUs > 0);
  if (!any && why.empty()) why.push_back("no out-of-place measurements");
  return why;
}

/// The run's in-place median per size, for the noise estimate only.
std::map<uint64_t, double> inPlaceTimes(const Run& run) {
  std::map<uint64_t, std::vector<double>> times;
  for (const Sample& s : run.samples) {
    if (s.inPlace && s.size > 0 && s.timeUs > 0 && std::isfinite(s.timeUs)) {
      times[s.size].push_back(s.timeUs);
    }
  }
  std::map<uint64_t, double> out;
  for (auto& [size, t] : times) out[size] = median(t);
  return out;
}

/// The run's out-of-place median per size (a run may repeat a row: MPI-duplicated output).
std::map<uint64_t, std::pair<double, double>> perSize(const Run& run, int& dropped) {
  std::map<uint64_t, std::vector<double>> times, busbw;
  for (const Sample& s : run.samples) {
    if (s.inPlace || s.size == 0) continue;
    if (!(s.timeUs > 0) || !std::isfinite(s.timeUs)) {
      ++dropped;
      continue;
    }
    times[s.size].push_back(s.timeUs);
    busbw[s.size].push_back(s.busbw);
  }
  std::map<uint64_t, std::pair<double, double>> out;
  for (auto& [size, t] : times) out[size] = {median(t), median(busbw[size])};
  return out;
}

}  // namespace

std::map<uint64_t, double> runTimes(const Run& run) {
  int dropped = 0;
  std::map<uint64_t, double> out;
  for (auto& [size, tb] : perSize(run, dropped)) out[size] = tb.first;
  return out;
}

Measurements summarize(const Dataset& data) {
  Measurements out;
  // shape -> forcing key -> series (std::map keeps the output order stable).
  std::map<ShapeKey, std::map<std::string, Series>> groups;
  std::map<ShapeKey, std::vector<std::string>> versions;
  std::map<ShapeKey, std::vector<std::pair<uint8_t, std::string>>> networks;
  for (size_t i = 0; i < data.runs.size(); ++i) {
    const Run& run = data.runs[i];
    std::vector<std::string> why = exclusionReasons(run);
    if (!why.empty()) {
      out.excluded.push_back({static_cast<int>(i), run.source, run.collective,
                              run.config.isDefault() ? "default" : run.config.label, why});
      continue;
    }
    ShapeKey key{run.collective, run.nodes, run.ranks, run.setup};
    Series& series = groups[key][seriesKey(run.config)];
    if (series.runs.empty()) {
      series.config = run.config;
      series.label = run.config.isDefault() ? "default" : run.config.label;
      if (series.label.empty()) series.label = seriesKey(run.config);
    }
    series.runs.push_back(static_cast<int>(i));
    if (!run.ncclVersion.empty()) versions[key].push_back(run.ncclVersion);
    networks[key].emplace_back(run.fabrics, run.network);
  }

  for (auto& [key, bySeries] : groups) {
    Shape shape;
    shape.key = key;
    const auto& v = versions[key];
    if (!v.empty() && std::all_of(v.begin(), v.end(), [&](const auto& x) { return x == v[0]; })) {
      shape.ncclVersion = v[0];
    }
    // A fabric only when every run shows the same one: a run that does not say could have
    // crossed another network.
    const auto& n = networks[key];
    if (std::all_of(n.begin(), n.end(), [&](const auto& x) { return x.first == n[0].first; })) {
      shape.fabrics = n[0].first;
    }
    if (std::all_of(n.begin(), n.end(), [&](const auto& x) { return x.second == n[0].second; })) {
      shape.network = n[0].second;
    }
    for (auto& [forcing, series] : bySeries) {
      // size -> one (time, busbw) per run that measured it
      std::map<uint64_t, std::vector<std::pair<double, double>>> bySize;
      std::map<uint64_t, std::vector<double>> inPlace;
      for (int r : series.runs) {
        for (auto& [size, t] : inPlaceTimes(data.runs[static_cast<size_t>(r)])) {
          inPlace[size].push_back(t);
        }
        int dropped = 0;
        for (auto& [size, tb] : perSize(data.runs[static_cast<size_t>(r)], dropped)) {
          bySize[size].push_back(tb);
        }
        if (dropped > 0) {
          out.notes.push_back(data.runs[static_cast<size_t>(r)].source + ": " +
                              std::to_string(dropped) + " row(s) without a usable time ignored");
        }
      }
      for (auto& [size, values] : bySize) {
        SizeStat st;
        st.size = size;
        std::vector<double> bw;
        for (auto& [t, b] : values) st.times.push_back(t), bw.push_back(b);
        st.timeUs = median(st.times);
        st.busbw = median(bw);
        st.minUs = *std::min_element(st.times.begin(), st.times.end());
        st.maxUs = *std::max_element(st.times.begin(), st.times.end());
        st.spread = st.times.size() > 1 ? (st.maxUs - st.minUs) / st.timeUs : 0.0;
        if (auto ip = inPlace.find(size); ip != inPlace.end()) st.inPlaceUs = median(ip->second);
        series.sizes.push_back(std::move(st));
      }
      if (series.isDefault()) shape.defaultSeries = static_cast<int>(shape.series.size());
      shape.series.push_back(std::move(series));
    }
    // The default first, then by label: stable colours and columns in reports.
    std::stable_sort(shape.series.begin(), shape.series.end(),
                     [](const Series& a, const Series& b) {
                       if (a.isDefault() != b.isDefault()) return a.isDefault();
                       return a.label < b.label;
                     });
    shape.defaultSeries = shape.series.empty() || !shape.series[0].isDefault() ? -1 : 0;
    out.shapes.push_back(std::move(shape));
  }
  return out;
}

}  // namespace pilot::calibration
