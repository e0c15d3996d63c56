#include "hang/live.h"

#include <filesystem>

#include "hang/report.h"
#include "hang/timeline.h"
#include "hang/why.h"
#include "pilot/core/text.h"

namespace pilot::cli::hang {
namespace {

using text::endsWith;

namespace fs = std::filesystem;

/// The inputs `hang` is given: directories, state files and summaries by their names.
std::vector<std::string> hangInputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const std::string& input : inputs) {
    std::error_code ec;
    const std::string name = fs::path(input).filename().string();
    if (fs::is_directory(input, ec) ||
        (fs::is_regular_file(input, ec) &&
         (endsWith(name, ".state.json") ||
          (name.rfind("nccl_pilot_", 0) == 0 && endsWith(name, ".jsonl"))))) {
      out.push_back(input);
    }
  }
  return out;
}

/// Whether `path` is a state file or a directory holding one at any depth (a cheap listing:
/// without one, nothing is read twice).
bool holdsStateFile(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return endsWith(path, ".state.json");
  fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (endsWith(it->path().filename().string(), ".state.json") && it->is_regular_file(ec)) {
      return true;
    }
  }
  return false;
}

/// `s` as one shell word: as it is when it holds nothing a shell reads, else single-quoted.
std::string shellWord(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of(
                                       "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "abcdefghijklmnopqrstuvwxyz"
                                       "0123456789_-./:=+,@%") == std::string::npos;
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

monitor::Live liveOf(const HangReport& report, size_t stateFilesSeen,
                     const std::string& hangCommand) {
  monitor::Live live;
  live.stateFilesSeen = stateFilesSeen;
  live.stateFiles = report.files;
  live.comms = report.comms;
  live.measured = report.measured;
  live.asOf = utcText(report.referenceMs);
  live.hangCommand = hangCommand;
  for (const Straggler& s : report.stragglers) {
    live.stragglers.push_back(
        {s.comm, s.commName, s.job, s.rank, s.wins, s.compared, s.lostMsPerOp});
  }
  for (const Stall& s : report.stalls) {
    live.stalls.push_back({s.comm, s.commName, s.job, s.nRanks, stallOperationText(s), s.stalledS,
                           s.suspects.empty() ? "" : rankText(s.suspects), s.why});
  }
  return live;
}

LiveRead readLive(const std::vector<std::string>& inputs, const HangOptions& options) {
  LiveRead out;
  const std::vector<std::string> paths = hangInputs(inputs);
  bool any = false;
  for (const std::string& path : paths) any = any || holdsStateFile(path);
  if (!any) return out;  // no live state: nothing is read or said
  const Inputs read = readInputs(paths);
  if (read.stateFilesSeen == 0) return out;
  const HangReport report = judge(read, options);
  // Files that hold no communicator say the job ended (each process's last write is final and
  // empty), or that nothing was created yet: nothing live to show, and nothing to note.
  if (!read.states.empty() && report.comms == 0) return out;
  std::string command = "nccl-pilot hang";
  for (const std::string& path : paths) command += " " + shellWord(path);
  out.live = liveOf(report, read.stateFilesSeen, command);
  out.notes = report.notes;
  return out;
}

}  // namespace pilot::cli::hang
