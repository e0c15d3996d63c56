#include "hang/judge.h"

#include <algorithm>

#include "hang/comm_groups.h"
#include "hang/comm_order.h"
#include "hang/timeline.h"

namespace pilot::cli::hang {
namespace {

/// Which ranks the summaries saw on which communicator, and which of them finalized it (a
/// folded record of several finished ones names its first and last).
SummaryFacts factsOf(const monitor::Summaries& summaries) {
  SummaryFacts f;
  for (const monitor::CommRecord& c : summaries.comms) {
    const std::pair<std::string, int64_t> process{c.node, c.pid};
    for (const std::string* id : {&c.comm, &c.firstComm, &c.lastComm}) {
      if (id->empty()) continue;
      (c.finalized ? f.finalized : f.seen)[{*id, c.rank}] = process;
    }
  }
  return f;
}

}  // namespace

HangReport judge(const Inputs& inputs, const HangOptions& options) {
  HangReport r;
  r.notes = inputs.notes;
  r.files = inputs.states.size();
  r.summaries = inputs.summaries.files.size();
  const Timeline timeline(inputs.states, options.nowMs, options.readerNowMs, options.seen);
  r.referenceMs = timeline.referenceMs();
  r.notes.insert(r.notes.end(), timeline.notes().begin(), timeline.notes().end());
  const Grouping grouping = groupComms(inputs.states, timeline);
  r.notes.insert(r.notes.end(), grouping.notes.begin(), grouping.notes.end());
  r.comms = grouping.groups.size();
  const SummaryFacts facts = factsOf(inputs.summaries);
  JudgeOptions judgeOptions;
  judgeOptions.stallS = options.stallS;
  judgeOptions.mostRanks = options.mostRanks;
  judgeOptions.probe = options.probe;
  for (const CommGroup& g : grouping.groups) {
    if (std::optional<Stall> s = judgeComm(g, timeline, facts, judgeOptions)) {
      judgeOptions.mostRanks -= std::min(judgeOptions.mostRanks, static_cast<uint64_t>(g.nRanks));
      r.stalls.push_back(std::move(*s));
    }
    if (std::optional<Straggler> s = stragglerOf(g, timeline)) r.stragglers.push_back(*s);
    if (measuredWindow(g, timeline)) ++r.measured;
  }
  findOrderInversions(&r.stalls);
  return r;
}

}  // namespace pilot::cli::hang
