#include "monitor/analysis.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace pilot::cli::monitor {
namespace {

using GroupKey =
    std::tuple<std::string, std::string, uint64_t, std::string, std::string, int, std::string>;

GroupKey keyOf(const CollectiveRecord& r) {
  return {r.comm, r.collective, r.sizeBucketBytes, r.algo, r.proto, r.channels, r.decision};
}

std::vector<RankTime> timesOf(const Group& g) {
  std::vector<RankTime> times;
  for (const RankFigures& f : g.ranks) times.push_back({f.rank, f.calls, f.meanUs});
  return times;
}

void pool(Group& g, const std::vector<const CollectiveRecord*>& records, double threshold) {
  uint64_t bins[metrics::kBins] = {};
  double minUs = 0, maxUs = 0, timeUs = 0, busTime = 0, expectedSum = 0, expectedLive = 0;
  uint64_t expectedCalls = 0;
  bool first = true;
  for (const CollectiveRecord* r : records) {
    if (r->calls == 0) continue;
    g.calls += r->calls;
    for (unsigned b = 0; b < metrics::kBins; ++b) bins[b] += r->bins[b];
    minUs = first ? r->minUs : std::min(minUs, r->minUs);
    maxUs = first ? r->maxUs : std::max(maxUs, r->maxUs);
    first = false;
    timeUs += r->timeSumUs;
    busTime += r->busGbs * r->timeSumUs;  // GB/s x time = bus bytes
    if (r->expectedCalls > 0 && r->expectedUs > 0) {
      const double expected = r->expectedUs * static_cast<double>(r->expectedCalls);
      expectedCalls += r->expectedCalls;
      expectedSum += expected;
      if (r->driftRatio > 0) expectedLive += expected / r->driftRatio;
    }
    g.ranks.push_back({r->rank, r->calls, r->timeSumUs / static_cast<double>(r->calls), r->busGbs});
  }
  std::sort(g.ranks.begin(), g.ranks.end(),
            [](const RankFigures& a, const RankFigures& b) { return a.rank < b.rank; });
  g.p50Us = metrics::binQuantile(bins, 0.5, minUs, maxUs);
  g.p99Us = metrics::binQuantile(bins, 0.99, minUs, maxUs);
  g.busGbs = timeUs > 0 ? busTime / timeUs : 0;
  if (expectedCalls > 0) g.expectedUs = expectedSum / static_cast<double>(expectedCalls);
  if (expectedLive > 0) {
    g.driftRatio = expectedSum / expectedLive;
    g.drift = g.driftRatio < 1.0 - threshold;
  }
  const GroupShortest shortest = shortestOf(timesOf(g));
  g.shortestRank = shortest.rank;
  g.spread = shortest.spread;
}

}  // namespace

Analysis analyze(const Summaries& s, double driftThreshold) {
  Analysis a;
  a.files = s.files.size();
  a.notes = s.notes;
  for (const CommRecord& c : s.comms) {
    if (c.folded > 0) a.folded[c.comm] = std::max(a.folded[c.comm], c.folded);
  }
  // One record per (communicator, rank, key): a rank found in two files keeps the one with
  // more calls (an older run's file left in the directory, say).
  std::map<std::tuple<GroupKey, int>, const CollectiveRecord*> unique;
  std::set<std::pair<std::string, int>> ranks;
  for (const CollectiveRecord& r : s.collectives) {
    auto& slot = unique[{keyOf(r), r.rank}];
    if (slot != nullptr && slot->file != r.file) {
      a.notes.push_back("comm " + r.comm + " rank " + std::to_string(r.rank) + " is in " +
                        slot->file + " and " + r.file + "; the one with more calls is used");
    }
    if (slot == nullptr || r.calls > slot->calls) slot = &r;
    ranks.insert({r.comm, r.rank});
  }
  a.rankRecords = ranks.size();
  std::map<GroupKey, std::vector<const CollectiveRecord*>> grouped;
  for (const auto& [key, record] : unique) grouped[std::get<0>(key)].push_back(record);
  for (const auto& [key, records] : grouped) {
    const CollectiveRecord& r = *records.front();
    Group g;
    g.comm = r.comm;
    g.commName = r.commName;
    g.nRanks = r.nRanks;
    g.nNodes = r.nNodes;
    g.collective = r.collective;
    g.messageSize = r.messageSize;
    g.algo = r.algo;
    g.proto = r.proto;
    g.decision = r.decision;
    g.band = r.band;
    g.sizeBucketBytes = r.sizeBucketBytes;
    g.channels = r.channels;
    pool(g, records, driftThreshold);
    if (g.calls > 0) a.groups.push_back(std::move(g));
  }
  // The late arriver per communicator.
  std::map<std::string, std::vector<const Group*>> byComm;
  for (const Group& g : a.groups) byComm[g.comm].push_back(&g);
  for (const auto& [comm, groups] : byComm) {
    std::vector<std::vector<RankTime>> times;
    for (const Group* g : groups) times.push_back(timesOf(*g));
    LateArriver late;
    static_cast<LateVote&>(late) = lateArriverOf(times);
    late.comm = comm;
    late.commName = groups.front()->commName;
    a.late.push_back(late);
  }
  return a;
}

}  // namespace pilot::cli::monitor
