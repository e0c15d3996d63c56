// Child processes for the sweep: each run in its own process group (so a stop reaches the
// launcher and everything it started, and the terminal's Ctrl-C reaches only us), output to
// a log file, polled rather than waited for so one loop can watch several and a signal flag.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pilot/core/result.h"

namespace pilot::calibration::detail {

struct SpawnSpec {
  std::vector<std::string> argv;  ///< argv[0] is resolved on PATH when it has no '/'
  std::vector<std::pair<std::string, std::string>> setEnv;
  std::vector<std::string> unsetEnv;
  std::string cwd;      ///< "" = ours
  std::string logPath;  ///< stdout and stderr, truncated first; "" = /dev/null
};

/// Starts the child; stdin is /dev/null.
Expected<pid_t> spawn(const SpawnSpec& spec);

struct ExitStatus {
  int exitCode = -1;  ///< -1 when killed by a signal
  int signal = 0;
};

/// Non-blocking: the status once the child has ended, nullopt while it runs.
std::optional<ExitStatus> poll(pid_t pid);

/// Sends `sig` to the child's whole process group.
void signalGroup(pid_t pid, int sig);

/// Runs a command to completion (at most `timeoutSeconds`, then killed) and returns its
/// stdout and stderr together; error when it cannot be started or times out.
Expected<std::string> runCapture(const std::vector<std::string>& argv, double timeoutSeconds);

/// `name` on PATH (or as given when it has a '/'), if executable; "" otherwise.
std::string findExecutable(const std::string& name);

}  // namespace pilot::calibration::detail
