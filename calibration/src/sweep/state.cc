// state.json: one record per run that was started. Rewritten whole (atomically) after every
// change, so an interrupted `sweep run` leaves a state the next one can trust.
#include <nlohmann/json.hpp>

#include "pilot/calibration/sweep_run.h"
#include "pilot/core/text.h"
#include "sweep/file_io.h"

namespace pilot::calibration {
namespace {

using nlohmann::json;

constexpr RunStatus kStatuses[] = {RunStatus::Pending, RunStatus::Running, RunStatus::Done,
                                   RunStatus::Failed, RunStatus::Interrupted};

}  // namespace

const char* runStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::Pending:
      return "pending";
    case RunStatus::Running:
      return "running";
    case RunStatus::Done:
      return "done";
    case RunStatus::Failed:
      return "failed";
    case RunStatus::Interrupted:
      return "interrupted";
  }
  return "?";
}

Expected<SweepState> readState(const std::string& dir) {
  const std::string path = dir + "/state.json";
  SweepState state;
  if (!detail::isRegularFile(path)) return state;
  auto text = readFile(path);
  if (!text.ok()) return Error{text.error()};
  const json doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  const json* runs = doc.is_object() && doc.contains("runs") ? &doc.at("runs") : nullptr;
  if (!runs || !runs->is_object()) {
    return Error{path + " is not a sweep state file; move it away to start the sweep afresh"};
  }
  try {
    for (const auto& [id, j] : runs->items()) {
      // A count no int holds is refused: converting it would be undefined (UBSan, under
      // tests/fuzz/sweep_manifest_fuzz).
      for (const char* key : {"exit_code", "signal", "attempts"}) {
        const json* v = j.is_object() && j.contains(key) ? &j.at(key) : nullptr;
        if (v && v->is_number_float() && !text::truncatesInto<int>(v->get<double>()))
          return Error{path + ": run " + id + ": \"" + key + "\" is out of range"};
      }
      RunRecord r;
      const std::string status = j.value("status", "pending");
      r.status = RunStatus::Pending;
      for (RunStatus s : kStatuses) {
        if (status == runStatusName(s)) r.status = s;
      }
      r.exitCode = j.value("exit_code", -1);
      r.signal = j.value("signal", 0);
      r.seconds = j.value("seconds", 0.0);
      r.attempts = j.value("attempts", 0);
      r.json = j.value("json", false);
      r.message = j.value("message", "");
      r.tail = j.value("tail", std::vector<std::string>());
      r.finished = j.value("finished", "");
      state.runs[id] = std::move(r);
    }
  } catch (const json::exception& e) {
    return Error{path + ": " + e.what()};
  }
  return state;
}

Status writeState(const std::string& dir, const SweepState& state) {
  json runs = json::object();
  for (const auto& [id, r] : state.runs) {
    json j{{"status", runStatusName(r.status)},
           {"exit_code", r.exitCode},
           {"signal", r.signal},
           {"seconds", r.seconds},
           {"attempts", r.attempts},
           {"json", r.json},
           {"message", r.message},
           {"finished", r.finished}};
    if (!r.tail.empty()) j["tail"] = r.tail;
    runs[id] = std::move(j);
  }
  // Invalid UTF-8 from a log tail is replaced, never a reason to lose the state.
  const std::string text =
      json{{"runs", runs}}.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  return detail::writeFileAtomic(dir + "/state.json", text);
}

}  // namespace pilot::calibration
