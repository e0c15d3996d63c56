// The sweep loop: decide what still has to run, start up to `jobs` runs, poll them, judge each
// finished run from its exit status and its own output, and save the state after every change.
#include "pilot/calibration/sweep_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "pilot/calibration/labels.h"
#include "pilot/calibration/nccl_tests_parser.h"
#include "pilot/calibration/sweep_plan.h"
#include "sweep/file_io.h"
#include "sweep/progress.h"
#include "sweep/subprocess.h"

namespace pilot::calibration {
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t gStopRequests = 0;
extern "C" void onStopSignal(int) {
  gStopRequests = gStopRequests + 1;
}

/// Our handlers for the sweep's lifetime; the previous ones come back afterwards.
class StopSignals {
 public:
  StopSignals() {
    gStopRequests = 0;
    struct sigaction sa {};
    sa.sa_handler = onStopSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a sleep ends early so the loop reacts at once
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~StopSignals() {
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

/// flock on DIR/.lock: two `sweep run`s on one directory would run everything twice and
/// overwrite each other's state.
class DirectoryLock {
 public:
  Status acquire(const std::string& dir) {
    const std::string path = dir + "/.lock";
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return Error{"cannot open " + path};
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      return Error{"another `nccl-pilot sweep run` is working in " + dir};
    }
    return Status::success();
  }
  ~DirectoryLock() {
    if (fd_ >= 0) close(fd_);
  }

 private:
  int fd_ = -1;
};

std::string nowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

/// nccl-tests writes PATH.N when PATH exists; a rerun must start from no JSON at all.
void removeOldJson(const std::string& dir, const PlannedRun& run) {
  namespace fs = std::filesystem;
  const fs::path jsonPath = fs::path(dir) / run.json;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(jsonPath.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    const std::string base = jsonPath.filename().string();
    if (name == base || name.rfind(base + ".", 0) == 0) fs::remove(entry.path(), ec);
  }
}

/// Judges a run that exited 0 from its own output: "" when complete and sound, else why not.
std::string judgeOutput(const std::string& dir, const PlannedRun& run, bool wantJson,
                        bool* wroteJson) {
  *wroteJson = false;
  if (wantJson) {
    auto text = readFile(dir + "/" + run.json);
    *wroteJson = text.ok() && !parseNcclTestsJson(*text, run.json).runs.empty();
  }
  auto log = readFile(dir + "/" + run.log);
  if (!log.ok()) return "no log";
  const ParsedOutput parsed = parseNcclTestsText(*log, run.log);
  if (parsed.runs.empty()) return "no nccl-tests output in the log";
  for (const ParsedRun& p : parsed.runs) {
    if (p.run.failed) return p.run.problems.empty() ? "failed" : p.run.problems.back();
    if (!p.evidence.endedCleanly) return "the log ends before nccl-tests' footer";
  }
  return "";
}

struct Active {
  size_t run = 0;  // index into the plan
  pid_t pid = 0;
  bool json = false;
  Clock::time_point start, killAt;
  bool terminating = false, killed = false, timedOut = false;
};

class SweepRunner {
 public:
  SweepRunner(std::string dir, const RunOptions& options, SweepPlan plan, SweepState state)
      : dir_(std::move(dir)),
        o_(options),
        plan_(std::move(plan)),
        state_(std::move(state)),
        out_(options.out ? *options.out : std::cerr) {}

  Expected<RunSummary> run();

 private:
  Status resolveBinaries();
  std::vector<size_t> selectRuns();
  void launch(size_t index);
  void finish(Active& a, const detail::ExitStatus& status);
  void save();

  std::string dir_;
  RunOptions o_;
  SweepPlan plan_;
  SweepState state_;
  std::ostream& out_;
  RunSummary summary_;
  std::map<std::string, std::string> binary_;  // program -> path to run
  std::map<std::string, bool> json_;           // program -> takes -J
  std::unique_ptr<detail::SweepProgress> progress_;
  std::vector<Active> active_;
};

Status SweepRunner::resolveBinaries() {
  const std::string testsDir = o_.testsDir.empty() ? plan_.options.testsDir : o_.testsDir;
  const bool local = plan_.options.launcher == Launcher::Local;
  for (const PlannedRun& run : plan_.runs) {
    if (binary_.count(run.program)) continue;
    const std::string found = findTestBinary(testsDir, run.program);
    std::string use = o_.testsDir.empty() ? run.binary : o_.testsDir + "/" + run.program;
    bool takesJson = plan_.options.jsonOutput;
    if (found.empty()) {
      if (local) {
        return Error{run.program + " not found " +
                     (testsDir.empty() ? std::string("on PATH") : "in " + testsDir) +
                     " (build nccl-tests, or pass --tests-dir)"};
      }
      out_ << "note: " << run.program << " is not on this machine; running '" << use << "' through "
           << launcherName(plan_.options.launcher) << " as planned\n";
    } else {
      if (local) use = found;
      if (auto probed = probeJsonSupport(found)) takesJson = *probed;
      if (takesJson != plan_.options.jsonOutput) {
        out_ << "note: " << run.program << (takesJson ? " takes" : " does not take") << " -J; runs "
             << (takesJson ? "write" : "skip") << " JSON unlike the plan's commands\n";
      }
    }
    binary_[run.program] = use;
    json_[run.program] = takesJson;
  }
  return Status::success();
}

std::vector<size_t> SweepRunner::selectRuns() {
  std::vector<size_t> queue;
  int failedBefore = 0;
  for (size_t i = 0; i < plan_.runs.size(); ++i) {
    const PlannedRun& run = plan_.runs[i];
    auto it = state_.runs.find(run.id);
    if (it != state_.runs.end()) {
      const RunRecord& r = it->second;
      if (r.status == RunStatus::Done) {
        // Done, and the output still says so (a log can be lost or cut short afterwards).
        bool ignored = false;
        const bool jsonThere = !r.json || detail::isRegularFile(dir_ + "/" + run.json);
        if (jsonThere && judgeOutput(dir_, run, false, &ignored).empty()) {
          ++summary_.skipped;
          continue;
        }
        out_ << "note: " << run.id << " was done but its output is gone or incomplete; "
             << "running it again\n";
      }
      if (r.status == RunStatus::Failed && !o_.retryFailed) {
        ++failedBefore;
        continue;
      }
    }
    queue.push_back(i);
  }
  summary_.failed += failedBefore;
  if (failedBefore > 0) {
    out_ << "note: " << failedBefore
         << " run(s) failed before and are not retried (see state.json; --retry-failed runs "
            "them again)\n";
  }
  return queue;
}

void SweepRunner::save() {
  if (Status s = writeState(dir_, state_); !s.ok()) {
    out_ << "warning: " << s.error() << "\n";
  }
}

void SweepRunner::launch(size_t index) {
  const PlannedRun& run = plan_.runs[index];
  RunRecord& record = state_.runs[run.id];
  record.status = RunStatus::Running;
  record.attempts += 1;
  record.exitCode = -1;
  record.signal = 0;
  record.message.clear();
  record.tail.clear();
  Active a;
  a.run = index;
  a.json = json_[run.program];
  record.json = a.json;
  removeOldJson(dir_, run);

  detail::SpawnSpec spec;
  spec.argv = runArgv(run, a.json, binary_[run.program]);
  spec.setEnv = run.env;
  spec.setEnv.emplace_back("NCCL_PILOT_SWEEP_RUN", run.id);
  for (const char* name : kForcingVariables) spec.unsetEnv.push_back(name);
  spec.cwd = dir_;
  spec.logPath = run.log;
  auto pid = detail::spawn(spec);
  a.start = Clock::now();
  if (!pid.ok()) {
    record.status = RunStatus::Failed;
    record.message = pid.error();
    record.finished = nowUtc();
    ++summary_.failed;
    save();
    progress_->started(run.id);
    progress_->finished(run.id, false, 0, pid.error());
    return;
  }
  a.pid = *pid;
  active_.push_back(a);
  save();
  progress_->started(run.id);
}

void SweepRunner::finish(Active& a, const detail::ExitStatus& status) {
  const PlannedRun& run = plan_.runs[a.run];
  RunRecord& r = state_.runs[run.id];
  r.seconds = std::chrono::duration<double>(Clock::now() - a.start).count();
  r.exitCode = status.exitCode;
  r.signal = status.signal;
  r.finished = nowUtc();
  bool wroteJson = false;
  if (a.timedOut) {
    r.status = RunStatus::Failed;
    std::ostringstream limit;
    limit << o_.timeoutSeconds;
    r.message = "timed out after " + limit.str() + " s";
  } else if (a.terminating) {
    r.status = RunStatus::Interrupted;
    r.message = "stopped by a signal to nccl-pilot; runs again next time";
  } else if (status.signal != 0) {
    r.status = RunStatus::Failed;
    r.message = "killed by signal " + std::to_string(status.signal);
  } else if (status.exitCode != 0) {
    r.status = RunStatus::Failed;
    r.message = "exit code " + std::to_string(status.exitCode);
    bool ignored = false;
    if (std::string why = judgeOutput(dir_, run, false, &ignored); !why.empty()) {
      r.message += ": " + why;  // the parser quotes the first error line of the log
    }
  } else if (std::string why = judgeOutput(dir_, run, a.json, &wroteJson); !why.empty()) {
    r.status = RunStatus::Failed;
    r.message = "exit code 0, but " + why;
  } else {
    r.status = RunStatus::Done;
    if (a.json && !wroteJson) r.message = "no usable JSON written; the text log is used";
  }
  r.json = wroteJson;
  if (r.status == RunStatus::Failed) r.tail = detail::tailLines(dir_ + "/" + run.log, 20);
  switch (r.status) {
    case RunStatus::Done:
      ++summary_.done;
      break;
    case RunStatus::Interrupted:
      ++summary_.interrupted;
      break;
    default:
      ++summary_.failed;
  }
  save();
  if (r.status == RunStatus::Interrupted) {
    progress_->note(run.id + ": interrupted");
  } else {
    std::string detail = r.message;
    progress_->finished(run.id, r.status == RunStatus::Done, r.seconds, detail);
  }
}

Expected<RunSummary> SweepRunner::run() {
  summary_.planned = static_cast<int>(plan_.runs.size());
  if (Status s = resolveBinaries(); !s.ok()) return Error{s.error()};
  for (const char* name : kForcingVariables) {
    if (const char* v = std::getenv(name)) {
      out_ << "note: " << name << "=" << v << " in this environment is not passed on: each run "
           << "sets exactly its configuration's variables\n";
    }
  }
  if (const char* tuner = std::getenv("NCCL_TUNER_PLUGIN")) {
    out_ << "warning: NCCL_TUNER_PLUGIN=" << tuner << " is set: the default runs measure that "
         << "tuner's choices, not NCCL's own\n";
  }
  const std::vector<size_t> queue = selectRuns();
  if (o_.dryRun) {
    for (const PlannedRun& run : plan_.runs) {
      const bool queued = std::find_if(queue.begin(), queue.end(), [&](size_t i) {
                            return plan_.runs[i].id == run.id;
                          }) != queue.end();
      if (!queued) {
        auto it = state_.runs.find(run.id);
        out_ << "# skip " << run.id << " ("
             << (it == state_.runs.end() ? "?" : runStatusName(it->second.status)) << ")\n";
        continue;
      }
      PlannedRun shown = run;
      shown.binary = binary_[run.program];
      out_ << shellCommand(shown, json_[run.program]) << "\n";
    }
    return summary_;
  }

  progress_ = std::make_unique<detail::SweepProgress>(out_, o_.progressBar, summary_.planned,
                                                      summary_.skipped);
  if (summary_.skipped > 0) {
    progress_->note(std::to_string(summary_.skipped) + " run(s) already done; resuming");
  }
  StopSignals signals;
  size_t next = 0;
  bool stopping = false;
  const int jobs = std::max(1, o_.jobs);
  const auto grace = std::chrono::milliseconds(static_cast<long>(o_.killGraceSeconds * 1000));
  while (true) {
    const Clock::time_point now = Clock::now();
    if (gStopRequests > 0 && !stopping) {
      stopping = true;
      summary_.stopped = true;
      progress_->note("stopping: ending " + std::to_string(active_.size()) +
                      " run(s) and saving the state (Ctrl-C again to kill at once)");
      for (Active& a : active_) {
        detail::signalGroup(a.pid, SIGTERM);
        a.terminating = true;
        a.killAt = now + grace;
      }
    }
    while (!stopping && active_.size() < static_cast<size_t>(jobs) && next < queue.size()) {
      launch(queue[next++]);
    }
    if (active_.empty() && (stopping || next >= queue.size())) break;
    for (size_t i = 0; i < active_.size();) {
      Active& a = active_[i];
      if (auto status = detail::poll(a.pid)) {
        finish(a, *status);
        active_.erase(active_.begin() + static_cast<long>(i));
        continue;
      }
      if (!a.terminating && o_.timeoutSeconds > 0 &&
          now - a.start > std::chrono::milliseconds(static_cast<long>(o_.timeoutSeconds * 1000))) {
        detail::signalGroup(a.pid, SIGTERM);
        a.terminating = a.timedOut = true;
        a.killAt = now + grace;
      }
      if (a.terminating && !a.killed && (now >= a.killAt || gStopRequests > 1)) {
        detail::signalGroup(a.pid, SIGKILL);
        a.killed = true;
      }
      ++i;
    }
    progress_->tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  progress_->close();
  return summary_;
}

}  // namespace

std::string findTestBinary(const std::string& testsDir, const std::string& program) {
  if (!testsDir.empty()) return detail::findExecutable(testsDir + "/" + program);
  return detail::findExecutable(program);
}

std::optional<bool> probeJsonSupport(const std::string& binary) {
  auto output = detail::runCapture({binary, "--help"}, 5);
  if (!output.ok()) return std::nullopt;
  return output->find("output_file") != std::string::npos ||
         output->find("-J,") != std::string::npos;
}

Expected<RunSummary> runSweep(const std::string& dir, const RunOptions& options) {
  auto plan = readPlan(dir);
  if (!plan.ok()) return Error{plan.error()};
  DirectoryLock lock;
  if (!options.dryRun) {
    if (Status s = lock.acquire(dir); !s.ok()) return Error{s.error()};
  }
  auto state = readState(dir);
  if (!state.ok()) return Error{state.error()};
  // A run left "running" by a crashed nccl-pilot never finished.
  for (auto& [id, record] : state->runs) {
    if (record.status == RunStatus::Running) record.status = RunStatus::Interrupted;
  }
  SweepRunner runner(dir, options, std::move(*plan), std::move(*state));
  return runner.run();
}

}  // namespace pilot::calibration
