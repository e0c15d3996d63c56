// libFuzzer target: arbitrary bytes as a sweep's manifest.json (parseManifest: what `sweep run`
// resumes and the loader reads) and as its state.json (readState: which runs are done). For
// every input:
//  1. no crash, no exception, no undefined behaviour (ASan/UBSan);
//  2. a refused manifest or state is one error that says why (the state's names the file),
//     never a partial plan or state;
//  3. a plan read keeps the reader's promise that run ids and logs are plain relative names;
//     written by formatManifest and read again it is the same plan, and writes the same text;
//  4. a state read has known statuses; written by writeState and read again it is the same;
//  5. as a run's log, its last lines (file_io.h's tailLines, what a failed run's record keeps)
//     are those of a plain reading: without their CR, trailing empty ones dropped, at most 5.
// Any violation aborts with the details on stderr.
#include <algorithm>
#include <string>

#include "fuzz_support.h"
#include "pilot/calibration/labels.h"
#include "pilot/calibration/sweep_plan.h"
#include "pilot/calibration/sweep_run.h"
#include "sweep/file_io.h"

using namespace pilot::calibration;

namespace {

bool sameConfig(const Config& a, const Config& b) {
  return a.label == b.label && a.algo == b.algo && a.proto == b.proto &&
         a.minChannels == b.minChannels && a.maxChannels == b.maxChannels;
}

bool sameConfigs(const std::vector<Config>& a, const std::vector<Config>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), sameConfig);
}

bool sameOptions(const PlanOptions& a, const PlanOptions& b) {
  return a.collectives == b.collectives && sameConfigs(a.configs, b.configs) &&
         a.repeats == b.repeats && a.defaultRepeats == b.defaultRepeats && a.nodes == b.nodes &&
         a.gpusPerNode == b.gpusPerNode && a.minBytes == b.minBytes && a.maxBytes == b.maxBytes &&
         a.stepFactor == b.stepFactor && a.iters == b.iters && a.warmup == b.warmup &&
         a.check == b.check && a.launcher == b.launcher && a.testsDir == b.testsDir &&
         a.hosts == b.hosts && a.launcherArgs == b.launcherArgs && a.testArgs == b.testArgs &&
         a.env == b.env && a.jsonOutput == b.jsonOutput && a.setup == b.setup;
}

bool sameRun(const PlannedRun& a, const PlannedRun& b) {
  return a.id == b.id && a.collective == b.collective && a.nodes == b.nodes && a.ranks == b.ranks &&
         sameConfig(a.config, b.config) && a.repeat == b.repeat && a.program == b.program &&
         a.launcherArgv == b.launcherArgv && a.binary == b.binary && a.testArgv == b.testArgv &&
         a.env == b.env && a.log == b.log && a.json == b.json;
}

std::string format(const SweepPlan& plan) {
  try {
    return formatManifest(plan);
  } catch (const std::exception& e) {
    fuzz::die(std::string("formatManifest threw on a plan it read: ") + e.what());
  }
}

void checkManifest(const std::string& text) {
  pilot::Expected<SweepPlan> plan = parseManifest(text);
  if (!plan.ok()) return fuzz::checkError(plan.error(), "");
  for (const PlannedRun& r : plan->runs) {
    if (r.id.empty() || r.id.find('/') != std::string::npos || r.log.empty() ||
        r.log.front() == '/' || r.log.find("..") != std::string::npos)
      fuzz::die("a run whose id or log is not a plain relative name: " + r.id + " " + r.log);
  }
  const std::string written = format(*plan);
  pilot::Expected<SweepPlan> again = parseManifest(written);
  if (!again.ok()) fuzz::die("a manifest we wrote does not read: " + again.error());
  bool same = sameOptions(plan->options, again->options) && plan->notes == again->notes &&
              plan->runs.size() == again->runs.size();
  for (size_t i = 0; same && i < plan->runs.size(); ++i)
    same = sameRun(plan->runs[i], again->runs[i]);
  if (!same) fuzz::die("written and read again, the plan changed:\n" + written);
  if (format(*again) != written) fuzz::die("written twice, the manifest changed");
}

bool sameRecord(const RunRecord& a, const RunRecord& b) {
  return a.status == b.status && a.exitCode == b.exitCode && a.signal == b.signal &&
         a.seconds == b.seconds && a.attempts == b.attempts && a.json == b.json &&
         a.message == b.message && a.tail == b.tail && a.finished == b.finished;
}

void checkState(const std::string& text) {
  const std::string dir = fuzz::emptyScratch("state");
  const std::string path = fuzz::writeScratch("state/state.json", text);
  pilot::Expected<SweepState> state = readState(dir);
  if (!state.ok()) return fuzz::checkError(state.error(), path);
  for (const auto& [id, r] : state->runs) {
    if (std::string(runStatusName(r.status)) == "?") fuzz::die("run " + id + ": unknown status");
  }
  const std::string out = fuzz::emptyScratch("state-written");
  if (pilot::Status s = writeState(out, *state); !s.ok()) fuzz::die("writeState: " + s.error());
  pilot::Expected<SweepState> again = readState(out);
  if (!again.ok()) fuzz::die("a state we wrote does not read: " + again.error());
  bool same = again->runs.size() == state->runs.size();
  for (auto a = state->runs.begin(), b = again->runs.begin(); same && a != state->runs.end();
       ++a, ++b)
    same = a->first == b->first && sameRecord(a->second, b->second);
  if (!same) fuzz::die("written and read again, the sweep state changed");
}

void checkTail(const std::string& text) {
  std::vector<std::string> want;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    want.push_back(text.substr(start, end - start));
    if (!want.back().empty() && want.back().back() == '\r') want.back().pop_back();
    start = end + 1;
  }
  while (!want.empty() && want.back().empty()) want.pop_back();
  if (want.size() > 5) want.erase(want.begin(), want.end() - 5);
  if (detail::tailLines(fuzz::writeScratch("run.log", text), 5) != want)
    fuzz::die("the log's last lines are not its last lines");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  checkManifest(text);
  checkState(text);
  checkTail(text);
  return 0;
}
