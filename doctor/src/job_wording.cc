// How the job checks name ranks and values: short enough for a job of thousands of ranks
// (ranges, at most 8 items, then "and N more"), and the majority rule of `doctor --compare`
// applied to one value across the ranks of a group.
#include <algorithm>
#include <set>
#include <tuple>

#include "job_check.h"

namespace pilot::doctor::detail {
namespace {

constexpr size_t kListItems = 8;
constexpr size_t kNodeBytes = 32;
constexpr size_t kSplitSides = 3;

bool before(const JobRank* a, const JobRank* b) {
  return std::make_tuple(a->rank < 0, a->rank, a->node, a->pid) <
         std::make_tuple(b->rank < 0, b->rank, b->node, b->pid);
}

}  // namespace

std::string shown(std::string_view value, size_t max) {
  if (value.size() <= max) return std::string(value);
  size_t size = max - 3;
  while (size > 0 && (static_cast<unsigned char>(value[size]) & 0xc0) == 0x80) --size;
  return std::string(value.substr(0, size)) + "...";
}

std::string counted(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string rankList(const Members& input) {
  Members ms = input;
  std::sort(ms.begin(), ms.end(), before);
  const size_t numbered =
      std::count_if(ms.begin(), ms.end(), [](const JobRank* r) { return r->rank >= 0; });
  std::vector<std::string> items;
  size_t i = 0;
  while (i < ms.size() && items.size() < kListItems) {
    const JobRank& r = *ms[i];
    const std::string node = shown(r.node, kNodeBytes);
    if (r.rank < 0) {
      items.push_back("pid " + std::to_string(r.pid) + " (" + node + ")");
      ++i;
      continue;
    }
    if (r.shared) {
      items.push_back(std::to_string(r.rank) + " (" + node + ", pid " + std::to_string(r.pid) +
                      ")");
      ++i;
      continue;
    }
    size_t j = i;
    while (j + 1 < ms.size() && ms[j + 1]->rank == ms[j]->rank + 1 && !ms[j + 1]->shared &&
           ms[j + 1]->node == r.node) {
      ++j;
    }
    const std::string range =
        std::to_string(r.rank) + (j > i ? "-" + std::to_string(ms[j]->rank) : "");
    items.push_back(range + " (" + node + ")");
    i = j + 1;
  }
  std::string out = numbered == 1 ? "rank " : numbered > 1 ? "ranks " : "";
  for (size_t k = 0; k < items.size(); ++k) out += (k ? ", " : "") + items[k];
  if (i < ms.size()) out += " and " + std::to_string(ms.size() - i) + " more";
  return out;
}

std::string sideList(const Members& side, const Members& all) {
  std::map<std::string, size_t> onNode, ofSide;
  std::map<std::string, std::pair<int64_t, int64_t>> span;  // lowest, highest rank of the side
  for (const JobRank* r : all) ++onNode[r->node];
  for (const JobRank* r : side) {
    auto [it, fresh] = span.try_emplace(r->node, r->rank, r->rank);
    it->second = {std::min(it->second.first, r->rank), std::max(it->second.second, r->rank)};
    ++ofSide[r->node];
  }
  // Nodes the side holds whole (two ranks or more) whose ranks are no one range (ranks that go
  // round the nodes): named as nodes, not rank by rank.
  std::vector<std::string> whole;
  size_t perNode = 0;
  bool sameCount = true;
  for (const auto& [node, n] : ofSide) {
    const auto [low, high] = span[node];
    const bool oneRange = low >= 0 && high - low + 1 == static_cast<int64_t>(n);
    if (n < 2 || n != onNode[node] || oneRange) continue;
    whole.push_back(node);
    sameCount = sameCount && (perNode == 0 || perNode == n);
    perNode = n;
  }
  if (whole.empty()) return rankList(side);
  Members rest;
  for (const JobRank* r : side) {
    if (!std::binary_search(whole.begin(), whole.end(), r->node)) rest.push_back(r);
  }
  std::string out = "every rank of " + std::string(whole.size() == 1 ? "node " : "nodes ");
  for (size_t k = 0; k < whole.size() && k < kListItems; ++k)
    out += (k ? ", " : "") + shown(whole[k], kNodeBytes);
  if (whole.size() > kListItems)
    out += " and " + std::to_string(whole.size() - kListItems) + " more";
  out += sameCount ? " (" + std::to_string(perNode) + (whole.size() == 1 ? ")" : " each)")
                   : std::string();
  if (!rest.empty()) out += ", and " + rankList(rest);
  return out;
}

std::string numberList(const std::vector<int64_t>& sorted) {
  std::string out;
  size_t items = 0, i = 0;
  while (i < sorted.size() && items < kListItems) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    out += (items++ ? ", " : "") + std::to_string(sorted[i]) +
           (j > i ? "-" + std::to_string(sorted[j]) : "");
    i = j + 1;
  }
  if (i < sorted.size()) out += " and " + std::to_string(sorted.size() - i) + " more";
  return out;
}

std::vector<Side> sidesOf(const Members& members,
                          const std::function<std::optional<std::string>(const JobRank&)>& value) {
  std::map<std::string, Members> byValue;
  for (const JobRank* r : members) {
    if (std::optional<std::string> v = value(*r)) byValue[*v].push_back(r);
  }
  std::vector<Side> sides;
  for (auto& [v, ranks] : byValue) sides.push_back({v, std::move(ranks)});
  std::stable_sort(sides.begin(), sides.end(),
                   [](const Side& a, const Side& b) { return a.ranks.size() > b.ranks.size(); });
  return sides;
}

void reportSides(JobBuilder& b, const JobGroup& group, const std::vector<Side>& sides,
                 const Wording& w, const char* check, Verdict verdict, const std::string& fix) {
  if (sides.size() < 2) return;
  size_t total = 0;
  for (const Side& s : sides) total += s.ranks.size();
  const std::string at = b.where(group);
  const Side& top = sides[0];
  Members all;
  for (const Side& s : sides) all.insert(all.end(), s.ranks.begin(), s.ranks.end());
  if (top.ranks.size() * 2 > total) {
    for (size_t k = 1; k < sides.size(); ++k) {
      const Side& odd = sides[k];
      const std::string who = w.thing(odd.value) + " on " + sideList(odd.ranks, all);
      std::string evidence = top.ranks.size() + odd.ranks.size() == total
                                 ? "the other " + counted(top.ranks.size(), "rank", "ranks") + " " +
                                       w.others(top.value) + " (majority)"
                                 : w.thing(top.value) + " on " + std::to_string(top.ranks.size()) +
                                       " of the " + std::to_string(total) + " ranks (majority)";
      if (w.detail) evidence += w.detail(odd);
      b.add(check, verdict, who + at, evidence, fix, who + ", majority " + w.brief(top.value));
    }
    return;
  }
  // No majority: every side is named and none is called odd.
  std::string evidence, brief;
  for (size_t k = 0; k < sides.size() && k < kSplitSides; ++k) {
    const std::string side = w.thing(sides[k].value) + " on " + sideList(sides[k].ranks, all);
    evidence += (k ? "; " : "") + side;
    if (k < 2) brief += (k ? "; " : ": ") + side;
  }
  if (sides.size() > kSplitSides) {
    evidence += "; and " + std::to_string(sides.size() - kSplitSides) + " more values";
  }
  evidence += "; no value is held by more than half of the " + std::to_string(total) + " ranks";
  b.add(check, verdict, w.differ + at, evidence, fix, w.differ + at + brief);
}

Members JobBuilder::all() const {
  Members out;
  for (const JobRank& r : audit_->ranks) out.push_back(&r);
  return out;
}

std::string JobBuilder::where(const JobGroup& group) const {
  return groups_.size() > 1 && !group.name.empty() ? " in " + group.name : "";
}

std::string JobBuilder::scope() const {
  std::set<std::string> nodes;
  for (const JobRank& r : audit_->ranks) nodes.insert(r.node);
  return counted(audit_->ranks.size(), "rank", "ranks") + " on " +
         counted(nodes.size(), "node", "nodes");
}

void JobBuilder::add(const char* check, Verdict verdict, std::string subject, std::string evidence,
                     std::string fix, std::string brief) {
  if (++counts_[{check, verdict}] > kMaxPerKind) return;
  if (verdict == Verdict::Fail) audit_->failBriefs.push_back(brief.empty() ? subject : brief);
  audit_->findings.push_back(
      {check, verdict, std::move(subject), std::move(evidence), std::move(fix)});
}

void JobBuilder::passUnlessFound(const char* check, std::string evidence) {
  for (const auto& [key, count] : counts_) {
    if (key.first == check && count > 0) return;
  }
  add(check, Verdict::Pass, scope(), std::move(evidence), "");
}

void JobBuilder::finish() {
  for (const auto& [key, count] : counts_) {
    if (count <= kMaxPerKind) continue;
    const std::string more = std::to_string(count - kMaxPerKind) + " more " +
                             verdictName(key.second) + " findings of " + key.first;
    size_t last = 0;
    for (size_t i = 0; i < audit_->findings.size(); ++i) {
      const Finding& f = audit_->findings[i];
      if (f.check == key.first && f.verdict == key.second) last = i + 1;
    }
    audit_->findings.insert(
        audit_->findings.begin() + static_cast<std::ptrdiff_t>(last),
        {key.first, key.second, more,
         "not shown: the first " + std::to_string(kMaxPerKind) + " are above", ""});
    if (key.second == Verdict::Fail) audit_->failBriefs.push_back(more);
  }
}

}  // namespace pilot::doctor::detail
