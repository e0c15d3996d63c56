#include "hang_test_support.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "hang/state_json.h"
#include "hang/state_reader.h"
#include "pilot/core/file.h"

namespace pilot::cli::hang::testing {

JobDir::JobDir() {
  std::string pattern = ::testing::TempDir() + "/pilot-hang-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "cannot make " << pattern;
  dir_ = pattern;
}

JobDir::~JobDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string JobDir::write(const StateFile& s, const std::string& name) {
  return writeText(
      name.empty() ? "nccl_pilot_" + s.node + "_" + std::to_string(s.pid) + ".state.json" : name,
      renderStateFile(s));
}

std::string JobDir::writeText(const std::string& name, const std::string& text) {
  const std::string path = dir_ + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  if (Status s = writeFile(path, text); !s.ok()) ADD_FAILURE() << s.error();
  return path;
}

HangReport JobDir::judge(std::optional<int64_t> nowMs, std::optional<double> stallS,
                         int64_t readerNowMs, uint64_t mostRanks) const {
  HangOptions o;
  o.nowMs = nowMs;
  o.stallS = stallS;
  o.readerNowMs = readerNowMs;
  o.mostRanks = mostRanks;
  o.probe = probe;
  return hang::judge(readInputs({dir_}), o);
}

StateFile process(const std::string& node, int64_t pid, int64_t ageMs) {
  StateFile s;
  s.node = node;
  s.pid = pid;
  s.job = "4711";
  s.library = "0.1.0+gtest";
  s.writtenMs = kNow - ageMs;
  s.nextDueMs = s.writtenMs + 1000;
  s.stallS = kStallS;
  return s;
}

CommState allReduceRank(int rank, int nRanks, uint64_t launched, uint64_t done, double waitS) {
  CommState c;
  c.comm = "0xd9";
  c.commName = "dp";
  c.rank = rank;
  c.nRanks = nRanks;
  c.nNodes = 1;
  if (launched > 0) {
    c.ops["AllReduce"] = {launched, done};
    c.last = OpRef{"AllReduce", launched - 1, kBytes, -1, waitS};
  }
  if (launched > done) {
    InFlight o;
    static_cast<OpRef&>(o) = OpRef{"AllReduce", done, kBytes, -1, waitS};
    o.channels = 2;
    o.started = {0, 1};
    c.oldest = o;
    c.inFlight = launched - done;
    c.waitingS = waitS;
    c.stalled = waitS >= kStallS;
  }
  if (done > 0) c.lastDoneAgeS = waitS;
  return c;
}

StateFile rankProcess(const CommState& c, int64_t ageMs) {
  StateFile s = process("n0", 100 + c.rank, ageMs);
  s.comms.push_back(c);
  return s;
}

const RankDetail& rankOf(const Stall& s, int rank) {
  static const RankDetail kNone;
  for (const RankDetail& d : s.ranks)
    if (d.rank == rank) return d;
  ADD_FAILURE() << "no detail for rank " << rank;
  return kNone;
}

}  // namespace pilot::cli::hang::testing

namespace pilot::cli::hang::testing {

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' is not in:\n" << text;
}

}  // namespace pilot::cli::hang::testing
