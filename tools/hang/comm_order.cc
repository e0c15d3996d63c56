#include "hang/comm_order.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "hang/why.h"

namespace pilot::cli::hang {
namespace {

constexpr size_t kMostStallsPerProcess = 16;

/// One process's part in one stall.
struct Part {
  size_t stall = 0;
  int rank = 0;
  bool running = false;  ///< it runs the stall's operation (else it waits to start it)
};

/// One process that runs stall `first` and waits to start stall `second`.
struct Ordered {
  int firstRank = 0, secondRank = 0;
  const RankDetail* detail = nullptr;  ///< its detail in the first stall
};

std::string opIn(const Stall& s) {
  return (s.commName.empty() ? s.comm : s.commName) + " " + opLabel(s.op, s.seq, -1);
}

/// The why of `s`, one of the two stalls: `few` run `firstStall` before `otherStall`, `many`
/// the other way round; `ranksHere` are the few's ranks in `s`.
std::string orderWhy(const Stall& firstStall, const Stall& otherStall,
                     const std::vector<Ordered>& few, size_t many, std::vector<int> ranksHere) {
  std::sort(ranksHere.begin(), ranksHere.end());
  const bool one = ranksHere.size() == 1;
  std::string who =
      one ? "rank " + std::to_string(ranksHere.front()) : "ranks " + rankText(ranksHere);
  std::string why = "order across communicators: " + who + (one ? " runs " : " run ") +
                    opIn(firstStall) + " before " + opIn(otherStall) + " while the other " +
                    std::to_string(many) + " rank" + (many == 1 ? " runs " : "s run ") +
                    (otherStall.commName.empty() ? otherStall.comm : otherStall.commName) +
                    " first, so each side waits for the other — the program calls collectives "
                    "on the two communicators in another order on " +
                    (one ? "that rank" + processText(few.front().detail) : "those ranks") +
                    "; every rank must call them in one order";
  if (one && !pidText(few.front().detail).empty())
    why += " (py-spy dump" + pidText(few.front().detail) + " shows where)";
  return why;
}

}  // namespace

void findOrderInversions(std::vector<Stall>* stalls) {
  std::map<std::tuple<std::string, std::string, int64_t>, std::vector<Part>> byProcess;
  for (size_t i = 0; i < stalls->size(); ++i) {
    const Stall& s = (*stalls)[i];
    const bool anyStarted = std::any_of(s.ranks.begin(), s.ranks.end(),
                                        [](const RankDetail& d) { return d.kernelStarted; });
    for (const RankDetail& d : s.ranks) {
      if (d.node.empty()) continue;
      const bool stuck = d.state == RankState::Stuck;
      const bool running = stuck && (d.kernelStarted || !anyStarted);
      const bool waiting = d.state == RankState::NotLaunched || (stuck && !running);
      if (!running && !waiting) continue;
      auto& parts = byProcess[{s.job, d.node, d.pid}];
      if (parts.size() < kMostStallsPerProcess) parts.push_back({i, d.rank, running});
    }
  }
  // (runs first, waits to start) -> the processes that do so
  std::map<std::pair<size_t, size_t>, std::vector<Ordered>> orders;
  for (const auto& [process, parts] : byProcess) {
    for (const Part& run : parts) {
      if (!run.running) continue;
      for (const Part& wait : parts) {
        if (wait.running || wait.stall == run.stall) continue;
        orders[{run.stall, wait.stall}].push_back(
            {run.rank, wait.rank, rankDetail((*stalls)[run.stall], run.rank)});
      }
    }
  }
  for (const auto& [key, forward] : orders) {
    const auto [x, y] = key;
    if (x > y) continue;
    auto back = orders.find({y, x});
    if (back == orders.end()) continue;
    // The fewer run them the other way round.
    const bool forwardFew = forward.size() < back->second.size();
    const std::vector<Ordered>& few = forwardFew ? forward : back->second;
    const size_t many = forwardFew ? back->second.size() : forward.size();
    const size_t first = forwardFew ? x : y, second = forwardFew ? y : x;
    std::vector<int> inFirst, inSecond;
    for (const Ordered& o : few) {
      inFirst.push_back(o.firstRank);
      inSecond.push_back(o.secondRank);
    }
    Stall& a = (*stalls)[first];
    Stall& b = (*stalls)[second];
    const std::string whyA = orderWhy(a, b, few, many, inFirst);
    const std::string whyB = orderWhy(a, b, few, many, inSecond);
    a.why = whyA;
    b.why = whyB;
    a.kind = b.kind = "order";
    std::sort(inFirst.begin(), inFirst.end());
    std::sort(inSecond.begin(), inSecond.end());
    a.suspects = inFirst;
    b.suspects = inSecond;
  }
}

}  // namespace pilot::cli::hang
