// `nccl-pilot hang` from what it read to what it says: the reference time (timeline), the
// communicators regrouped (comm_groups), each judged (verdict, why) and its straggler
// (straggler), and every note on the way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hang/state_reader.h"
#include "hang/straggler.h"
#include "hang/verdict.h"

namespace pilot::cli::hang {

struct HangOptions {
  std::optional<int64_t> nowMs;           ///< --now
  int64_t readerNowMs = 0;                ///< this machine's clock
  std::optional<double> stallS;           ///< --stall-s
  uint64_t mostRanks = kMostRanksListed;  ///< over all stalled communicators
  ProcessProbe probe;                     ///< this host's view of its ranks' processes
  const Observations* seen = nullptr;     ///< what a watch saw of the writers (watch.h)
};

struct HangReport {
  std::vector<Stall> stalls;
  std::vector<Straggler> stragglers;
  std::vector<std::string> notes;
  size_t files = 0;      ///< state files used
  size_t summaries = 0;  ///< summary files read
  size_t comms = 0;      ///< communicators judged
  /// communicators with a closed export window on a live rank: where a straggler was looked for
  size_t measured = 0;
  int64_t referenceMs = 0;
  /// `doctor --job`'s one line on the same inputs ("" without a FAIL): the command fills it.
  std::string jobAudit;
};

HangReport judge(const Inputs& inputs, const HangOptions& options);

}  // namespace pilot::cli::hang
