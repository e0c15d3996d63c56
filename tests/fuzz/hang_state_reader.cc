// The state reader and the verdict on arbitrary bytes (hang_state_fuzz, part A).
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "fuzz_support.h"
#include "hang/judge.h"
#include "hang/report.h"
#include "hang/state_json.h"
#include "hang/state_reader.h"
#include "hang_oracle.h"

namespace fuzz {
namespace {

using namespace pilot::cli::hang;

/// Whether the text is a version-1 state object at all, read apart from the reader.
bool looksLikeState(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return !j.is_discarded() && j.is_object() &&
         j.value("format", nlohmann::json()) == "nccl-pilot-state" &&
         j.value("version", nlohmann::json()) == 1;
}

void checkOp(const OpRef& op, int nRanks, const std::string& where) {
  if (op.op.empty() || op.op.size() > kMaxTextBytes || op.peer < -1 || op.peer >= nRanks ||
      !(op.ageS >= 0))
    die(where + " out of its bounds");
}

void checkBounds(const StateFile& s) {
  if (s.node.empty() || s.node.size() > kMaxTextBytes || s.pid < 0 || s.pid > (1ll << 40) ||
      s.writtenMs < 0 || s.writtenMs > kMaxUnixMs || s.nextDueMs < 0 || s.nextDueMs > kMaxUnixMs ||
      !(s.stallS >= 0) || s.comms.size() > kMaxComms || s.job.size() > kMaxTextBytes)
    die("a file's fields out of their bounds");
  for (const CommState& c : s.comms) {
    if (c.comm.empty() || c.comm.size() > kMaxTextBytes || c.nRanks < 1 || c.nRanks > kMaxRanks ||
        c.rank < 0 || c.rank >= c.nRanks || c.nNodes < 0 || c.nNodes > c.nRanks ||
        !(c.waitingS >= 0) || !(c.windowS >= 0))
      die("comm " + c.comm + " out of its bounds");
    for (const auto& [kind, n] : c.ops)
      if (n.done > n.launched || kind.empty()) die("ops of " + c.comm);
    for (const auto* peers : {&c.sends, &c.recvs}) {
      for (const auto& [peer, n] : *peers)
        if (peer < 0 || peer >= c.nRanks || n.done > n.launched) die("a peer of " + c.comm);
    }
    if (c.last) checkOp(*c.last, c.nRanks, "last of " + c.comm);
    if (c.oldest) {
      checkOp(*c.oldest, c.nRanks, "oldest of " + c.comm);
      for (const ProxyEntry& e : c.oldest->proxy) {
        if (e.peer < 0 || e.peer >= c.nRanks || e.channel < 0 || e.steps < -1 || e.of < 0)
          die("a proxy entry of " + c.comm);
      }
    }
    for (const WindowKey& k : c.window)
      if (k.op.empty() || !(k.meanUs >= 0)) die("a window key of " + c.comm);
  }
}

/// The file, then a second rank of each of its communicators (the next rank, another pid):
/// the verdict then compares ranks.
void checkVerdict(const StateFile& s, const std::string& text) {
  // A verdict walks every rank of a communicator: a million-rank one is read (above) but not
  // judged here, or one input would outlast the run's 10 s.
  size_t ranks = 0;
  for (const CommState& c : s.comms) ranks += static_cast<size_t>(c.nRanks);
  if (ranks > (1u << 16)) return;
  const std::string dir = emptyScratch("hang");
  writeScratch("hang/a.state.json", text);
  StateFile other = s;
  other.pid = s.pid + 1;
  for (CommState& c : other.comms) c.rank = (c.rank + 1) % c.nRanks;
  writeScratch("hang/b.state.json", renderStateFile(other));
  HangOptions options;
  options.nowMs = s.writtenMs + static_cast<int64_t>(std::fmod(s.stallS, 100.0) * 1000);
  options.readerNowMs = s.writtenMs;
  const HangReport r = judge(readInputs({dir}), options);
  for (const Stall& st : r.stalls) {
    std::set<int> seen;
    for (const auto* list : {&st.notLaunched, &st.frozen, &st.stuck, &st.missing, &st.finalized}) {
      for (int rank : *list) {
        if (rank < 0 || rank >= st.nRanks || !seen.insert(rank).second)
          die("comm " + st.comm + ": rank " + std::to_string(rank) + " listed twice or outside");
      }
    }
    for (int rank : st.suspects)
      if (rank < 0 || rank >= st.nRanks) die("a suspect outside comm " + st.comm);
    if (st.why.empty()) die("a stall without why");
  }
  (void)reportText(r);
  if (nlohmann::json::parse(reportJson(r), nullptr, false).is_discarded())
    die("the JSON report does not parse");
}

}  // namespace

void checkStateReader(const std::string& text) {
  pilot::Expected<StateFile> s = parseStateFile(text, "fuzz.state.json");
  if (!s.ok()) {
    checkError(s.error(), "fuzz.state.json: ");
    return;
  }
  if (!looksLikeState(text)) die("accepted, but it is no version-1 state object");
  checkBounds(*s);
  const std::string rendered = renderStateFile(*s);
  pilot::Expected<StateFile> back = parseStateFile(rendered, "again.state.json");
  if (!back.ok()) die("a record rendered is refused: " + back.error());
  if (renderStateFile(*back) != rendered) die("a record rendered reads back otherwise");
  checkVerdict(*s, text);
}

}  // namespace fuzz
