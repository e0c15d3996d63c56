#include "pilot/metrics/finished_comms.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "pilot/core/mix.h"
#include "pilot/metrics/summary.h"

namespace pilot::metrics {
namespace {

/// What makes two finished communicators one record: everything their lines say but the id.
std::string identityKey(const CommReport& c) {
  const CommIdentity& id = c.identity;
  std::string key = id.name;
  key += '\0';
  for (int64_t v :
       {int64_t{id.nRanks}, int64_t{id.nNodes}, int64_t{id.rank}, int64_t{id.abiVersion},
        static_cast<int64_t>(id.facts.nccl.lo), static_cast<int64_t>(id.facts.nccl.hi),
        id.facts.fabric ? static_cast<int64_t>(*id.facts.fabric) : int64_t{-1}}) {
    key += std::to_string(v);
    key += ',';
  }
  return key + id.gpu + '\0' + c.tableSha256;
}

uint64_t measuredCalls(const CommReport& c) {
  return c.collectives.measured + c.p2p.measured;
}

/// A view with its leading and trailing empty bins cut off (a record keeps only what counts).
CallSamples::View trimmed(const CallSamples::View& v) {
  CallSamples::View out = v;
  size_t first = 0, last = v.counts.size();
  while (first < last && v.counts[first] == 0) ++first;
  while (last > first && v.counts[last - 1] == 0) --last;
  out.counts.assign(v.counts.begin() + static_cast<std::ptrdiff_t>(first),
                    v.counts.begin() + static_cast<std::ptrdiff_t>(last));
  out.firstBin = v.firstBin + static_cast<int>(first);
  return out;
}

/// Adds `v`'s calls to `into` (the same key): bins by their absolute index, so windows that
/// started at different bins add up exactly.
void merge(CallSamples::View& into, const CallSamples::View& v) {
  const CallSamples::View t = trimmed(v);
  if (t.calls == 0) return;
  into.minNs = into.calls == 0 ? t.minNs : std::min(into.minNs, t.minNs);
  into.maxNs = std::max(into.maxNs, t.maxNs);
  into.calls += t.calls;
  into.sumNs += t.sumNs;
  if (t.counts.empty()) return;
  if (into.counts.empty()) {
    into.firstBin = t.firstBin;
    into.counts = t.counts;
    return;
  }
  const int lo = std::min(into.firstBin, t.firstBin);
  const int hi = std::max(into.firstBin + static_cast<int>(into.counts.size()),
                          t.firstBin + static_cast<int>(t.counts.size()));
  if (lo < into.firstBin || hi > into.firstBin + static_cast<int>(into.counts.size())) {
    std::vector<uint64_t> wider(static_cast<size_t>(hi - lo), 0);
    std::copy(into.counts.begin(), into.counts.end(), wider.begin() + (into.firstBin - lo));
    into.counts.swap(wider);
    into.firstBin = lo;
  }
  for (size_t b = 0; b < t.counts.size(); ++b) {
    into.counts[static_cast<size_t>(t.firstBin - into.firstBin) + b] += t.counts[b];
  }
}

void addCounts(TaskCounts& into, const TaskCounts& c) {
  into.seen += c.seen;
  into.measured += c.measured;
  for (int s = 0; s < static_cast<int>(Skip::Count); ++s) into.skipped[s] += c.skipped[s];
}

}  // namespace

uint64_t FinishedComms::foldedId(const CommIdentity& id) {
  uint64_t h = mix64(0x666f6c646564ull ^ static_cast<uint64_t>(static_cast<uint32_t>(id.nRanks)));
  h = mix64(h ^ static_cast<uint64_t>(static_cast<uint32_t>(id.nNodes)));
  for (size_t i = 0; i < id.name.size(); i += 8) {
    uint64_t chunk = 0;
    std::memcpy(&chunk, id.name.data() + i, std::min<size_t>(8, id.name.size() - i));
    h = mix64(h ^ chunk);
  }
  return mix64(h ^ id.name.size());
}

void FinishedComms::add(const CommReport& c, const ProcessReport& process) {
  ++finished_;
  const std::string key = identityKey(c);
  auto found = byIdentity_.find(key);
  if (found == byIdentity_.end()) {
    if (records_.size() == kMaxRecords) {
      const Record& oldest = records_.front();
      dropped_ += oldest.report.folded;
      droppedCalls_ += measuredCalls(oldest.report);
      byIdentity_.erase(oldest.identity);
      records_.pop_front();
    }
    Record& r = records_.emplace_back();
    r.identity = key;
    r.report.identity = c.identity;
    r.report.finalized = true;
    r.report.tableSha256 = c.tableSha256;
    r.report.firstCommId = c.identity.commId;
    byIdentity_.emplace(key, std::prev(records_.end()));
  } else {
    records_.splice(records_.end(), records_, found->second);  // now the most recent
  }
  Record& r = records_.back();
  fold(r, c);
  r.report.lastCommId = c.identity.commId;
  r.report.identity.commId = r.report.folded == 1 ? c.identity.commId : foldedId(c.identity);
  r.text.clear();
  appendCommunicator(&r.text, process, r.report);
}

void FinishedComms::fold(Record& r, const CommReport& c) {
  CommReport& into = r.report;
  ++into.folded;
  addCounts(into.collectives, c.collectives);
  addCounts(into.p2p, c.p2p);
  for (int g = 0; g < static_cast<int>(GroupOutcome::Count); ++g) into.groups[g] += c.groups[g];
  // Distinct peers cannot be added up from counts: the most any of them reached.
  into.peersSentTo = std::max(into.peersSentTo, c.peersSentTo);
  into.peersReceivedFrom = std::max(into.peersReceivedFrom, c.peersReceivedFrom);
  into.samplesOverflow += c.samplesOverflow;
  for (const KeyReport& k : c.keys) {
    std::tuple<bool, uint64_t> id{k.other, k.other ? 0 : k.fields.pack()};
    auto it = r.keys.find(id);
    if (it == r.keys.end() && !k.other && r.keys.size() >= kMaxKeys) {
      id = {true, 0};  // past the record's keys: its "other" one, as a communicator's
      it = r.keys.find(id);
    }
    if (it == r.keys.end()) {
      KeyReport fresh = k;
      if (std::get<0>(id)) {
        fresh = KeyReport{};
        fresh.other = true;
        fresh.total = k.total;
      }
      fresh.interval = KeyTotals{};
      r.keys.emplace(id, into.keys.size());
      into.keys.push_back(std::move(fresh));
      continue;
    }
    into.keys[it->second].total.add(k.total);
  }
  for (size_t i = 0; i < c.samples.size(); ++i) {
    const CallSamples::View& v = c.samples[i];
    const uint64_t id = CallSamples::pack(v.key);
    auto it = r.samples.find(id);
    if (it == r.samples.end()) {
      if (r.samples.size() >= kMaxSamples) {
        into.samplesOverflow += v.calls;
        continue;
      }
      r.samples.emplace(id, into.samples.size());
      CallSamples::View fresh;
      fresh.key = v.key;
      merge(fresh, v);
      into.samples.push_back(std::move(fresh));
      into.sampleDecisions.push_back(i < c.sampleDecisions.size() ? c.sampleDecisions[i] : "NCCL");
      continue;
    }
    merge(into.samples[it->second], v);
  }
}

void FinishedComms::appendSummary(std::string* out) const {
  for (const Record& r : records_) *out += r.text;
}

CommCounts FinishedComms::counts() const {
  CommCounts c;
  c.finished = finished_;
  c.records = records_.size();
  c.dropped = dropped_;
  c.droppedCalls = droppedCalls_;
  return c;
}

std::vector<const CommReport*> FinishedComms::records() const {
  std::vector<const CommReport*> out;
  for (const Record& r : records_) out.push_back(&r.report);
  return out;
}

}  // namespace pilot::metrics
