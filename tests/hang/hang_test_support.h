// What the hang tests share: a scratch metrics directory the test writes state files (and
// summaries) into, read back and judged by the real reader; and state records of an
// AllReduce job (every rank launching and completing AllReduce on comm "dp"), each test
// changing what its case needs.
#pragma once

#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "hang/judge.h"
#include "hang/state_file.h"

namespace pilot::cli::hang::testing {

/// The tests' "now" (unix ms) and the threshold their files carry.
constexpr int64_t kNow = 1'764'770'000'000;
constexpr double kStallS = 2;
constexpr uint64_t kBytes = 4 << 20;

class JobDir {
 public:
  JobDir();
  ~JobDir();
  JobDir(const JobDir&) = delete;
  JobDir& operator=(const JobDir&) = delete;

  /// Writes `s` as nccl_pilot_<node>_<pid>.state.json (or `name`); returns the path.
  std::string write(const StateFile& s, const std::string& name = "");
  std::string writeText(const std::string& name, const std::string& text);
  /// Reads the directory and judges it as of `nowMs` (--now), or of `readerNowMs` without.
  HangReport judge(std::optional<int64_t> nowMs = kNow, std::optional<double> stallS = {},
                   int64_t readerNowMs = kNow, uint64_t mostRanks = kMostRanksListed) const;
  const std::string& path() const { return dir_; }
  /// What judge() sees of the ranks' processes (none by default: another host).
  ProcessProbe probe;

 private:
  std::string dir_;
};

/// A process written `ageMs` before kNow, due again a second after.
StateFile process(const std::string& node, int64_t pid, int64_t ageMs = 300);

/// Rank `rank` of the nranks-rank comm "dp" (id 0xd9): `launched` AllReduces, `done` of them
/// done, the last `waitS` ago; with one in flight it has waited `waitS` (stalled from kStallS).
CommState allReduceRank(int rank, int nRanks, uint64_t launched, uint64_t done, double waitS);

/// One process per rank (node "n0", pid 100 + rank) holding `c`.
StateFile rankProcess(const CommState& c, int64_t ageMs = 300);

/// `text` holds `part` (the message shows both when not).
::testing::AssertionResult Contains(const std::string& text, const std::string& part);

/// The first stall's rank detail, or a failed assertion's empty one.
const RankDetail& rankOf(const Stall& s, int rank);

}  // namespace pilot::cli::hang::testing
