#include "hang/state_reader.h"

#include <filesystem>
#include <map>
#include <utility>

#include "pilot/core/file.h"
#include "pilot/core/parallel.h"
#include "pilot/core/text.h"

namespace pilot::cli::hang {
namespace {

using text::endsWith;

namespace fs = std::filesystem;

bool isStateFile(const std::string& name) {
  return endsWith(name, ".state.json");
}
bool isSummary(const std::string& name) {
  return name.rfind("nccl_pilot_", 0) == 0 && endsWith(name, ".jsonl");
}

struct Found {
  std::vector<std::pair<std::string, std::string>> states;  ///< (path, input)
  std::vector<std::string> summaries;
};

/// The state files and summaries of one input: a file as it is, a directory searched.
bool collect(const std::string& input, Found* found, std::vector<std::string>* notes) {
  std::error_code ec;
  if (!fs::is_directory(input, ec)) {
    if (!fs::exists(input, ec)) {
      notes->push_back(input + ": no such file or directory");
      return false;
    }
    const std::string name = fs::path(input).filename().string();
    if (isSummary(name)) {
      found->summaries.push_back(input);
    } else {
      found->states.push_back({input, input});  // named on purpose: read whatever its name
    }
    return true;
  }
  fs::recursive_directory_iterator it(input, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    notes->push_back(input + ": cannot list (" + ec.message() + ")");
    return false;
  }
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) {
      notes->push_back(input + ": listing stopped (" + ec.message() + ")");
      break;
    }
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    if (isStateFile(name)) found->states.push_back({it->path().string(), input});
    if (isSummary(name)) found->summaries.push_back(it->path().string());
  }
  return true;
}

std::optional<StateFile> readState(const std::string& path, std::vector<std::string>* notes) {
  std::string text;
  switch (readFileUpTo(path, kMaxStateBytes, &text)) {
    case ReadOutcome::Ok:
      break;
    case ReadOutcome::TooLarge:
      notes->push_back(path + ": larger than " + std::to_string(kMaxStateBytes >> 20) +
                       " MiB, not a state file of ours");
      return std::nullopt;
    default:
      notes->push_back(path + ": cannot read");
      return std::nullopt;
  }
  Expected<StateFile> s = parseStateFile(text, path);
  if (!s.ok()) {
    notes->push_back(s.error());
    return std::nullopt;
  }
  return std::move(*s);
}

}  // namespace

Inputs readInputs(const std::vector<std::string>& paths) {
  Inputs in;
  Found found;
  for (const std::string& path : paths) in.anyReadable |= collect(path, &found, &in.notes);
  in.stateFilesSeen = found.states.size();
  std::map<std::pair<std::string, int64_t>, size_t> byProcess;
  // Parsed on every core, merged in the order found.
  std::vector<std::optional<StateFile>> parsed(found.states.size());
  std::vector<std::vector<std::string>> notes(found.states.size());
  forEachIndex(found.states.size(),
               [&](size_t i) { parsed[i] = readState(found.states[i].first, &notes[i]); });
  for (size_t i = 0; i < found.states.size(); ++i) {
    const auto& [path, input] = found.states[i];
    in.notes.insert(in.notes.end(), notes[i].begin(), notes[i].end());
    std::optional<StateFile>& s = parsed[i];
    if (!s) continue;
    s->input = input;
    auto [it, fresh] = byProcess.try_emplace({s->node, s->pid}, in.states.size());
    if (fresh) {
      in.states.push_back(std::move(*s));
      continue;
    }
    StateFile& kept = in.states[it->second];
    const bool newer = s->writtenMs > kept.writtenMs;
    in.notes.push_back(kept.path + " and " + path + " are both node " + s->node + " pid " +
                       std::to_string(s->pid) + ": the newer (" + (newer ? path : kept.path) +
                       ") is used");
    if (newer) kept = std::move(*s);
  }
  if (!found.summaries.empty()) {
    auto summaries = monitor::readSummaries(found.summaries);
    if (summaries.ok()) {
      in.summaries = std::move(*summaries);
      in.notes.insert(in.notes.end(), in.summaries.notes.begin(), in.summaries.notes.end());
    } else {
      in.notes.push_back(summaries.error());
    }
  }
  return in;
}

}  // namespace pilot::cli::hang
