// What the profiler host tests share: the environment of a scenario (each runs in a forked
// child, since the library reads its settings once per process), a scratch directory, the files
// the library wrote there, promtool, and the figures GPU timestamps imply, computed here
// independently of metrics/.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "exposition.h"
#include "profiler_host.h"

namespace fakeprof {

inline void setEnv(const std::map<std::string, std::string>& vars) {
  for (const char* name :
       {"NCCL_PILOT_METRICS", "NCCL_PILOT_METRICS_DIR", "NCCL_PILOT_METRICS_INTERVAL_S",
        "NCCL_PILOT_METRICS_SAMPLE", "NCCL_PILOT_METRICS_MIN_BYTES", "NCCL_PILOT_METRICS_PORT",
        "NCCL_PILOT_METRICS_BIND", "NCCL_PILOT_METRICS_DRIFT", "NCCL_PILOT_METRICS_DRIFT_CALLS",
        "NCCL_PILOT_TUNER_TABLE", "NCCL_TUNER_CONFIG_FILE", "SLURM_JOB_ID", "LOCAL_RANK",
        "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}) {
    unsetenv(name);
  }
  for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), 1);
}

/// A fresh directory under /tmp (left behind on failure for a look, removed by the test).
inline std::string scratchDir() {
  char pattern[] = "/tmp/pilot-profiler-XXXXXX";
  const char* made = mkdtemp(pattern);
  EXPECT_NE(made, nullptr);
  return made ? made : "/tmp";
}

inline void removeDir(const std::string& dir) {
  const std::string command = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(command.c_str()), 0);
}

/// Files in `dir` ending in `suffix`.
inline std::vector<std::string> filesEnding(const std::string& dir, const std::string& suffix) {
  return filesIn(dir, suffix);
}

inline void expectPromtoolAccepts(const std::string& file);

/// After a finalize that was not the process's last: the exporter writes its last figures soon
/// after (MetricsRuntime::kCloseExportDelayMs), not before the finalize returns. Waits until the
/// textfile in `dir` no longer reads `before` (up to 5 s).
inline void waitForExport(const std::string& dir, const std::string& before) {
  for (int i = 0; i < 500; ++i) {
    auto files = filesEnding(dir, ".prom");
    if (files.size() == 1 && readWholeFile(files[0]) != before) return;
    usleep(10'000);
  }
  ADD_FAILURE() << "no export within 5 s";
}
inline std::string textfileText(const std::string& dir) {
  auto files = filesEnding(dir, ".prom");
  return files.size() == 1 ? readWholeFile(files[0]) : std::string();
}

/// The one textfile the process wrote into `dir`, parsed, after promtool checked it.
inline Exposition textfileIn(const std::string& dir) {
  auto files = filesEnding(dir, ".prom");
  EXPECT_EQ(files.size(), 1u) << "textfiles in " << dir;
  if (files.size() != 1) return {};
  expectPromtoolAccepts(files[0]);
  Exposition e = parseExposition(readWholeFile(files[0]));
  EXPECT_TRUE(e.errors.empty()) << "unparsable line: " << (e.errors.empty() ? "" : e.errors[0]);
  return e;
}

inline std::string hostName() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

/// nccl-tests' bus bandwidth in GB/s of one collective (doc/PERFORMANCE.md).
inline double busGbs(const std::string& func, double messageBytes, int nRanks, double ns) {
  const double n = nRanks;
  double factor = 1.0, traffic = messageBytes;
  if (func == "AllReduce") factor = 2.0 * (n - 1) / n;
  if (func == "AllGather" || func == "ReduceScatter") traffic *= n, factor = (n - 1) / n;
  return traffic * factor / ns;  // bytes per ns = GB/s
}

inline double geometricMean(const std::vector<double>& values) {
  double logs = 0;
  for (double v : values) logs += std::log(v);
  return std::exp(logs / static_cast<double>(values.size()));
}

/// Runs `promtool check metrics` on a file (textfileIn does, on every file the tests read). Exit 0
/// = clean; promtool's exit 3 lists lint problems, and the only acceptable ones are those of NCCL
/// Inspector's metric names, which we keep for its dashboards. Skips (fails under CI=true) when
/// promtool is not installed.
inline void expectPromtoolAccepts(const std::string& file) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") {
      ADD_FAILURE() << "promtool not installed (Debian package prometheus; tools/install-deps.sh)";
    } else {
      std::printf("SKIP promtool check: promtool not installed (Debian package prometheus)\n");
    }
    return;
  }
  const std::string command = "promtool check metrics < '" + file + "' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  ASSERT_TRUE(code == 0 || code == 3) << "promtool rejected " << file << ":\n" << output;
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    const bool inspectorName =
        line ==
            "nccl_collective_exec_time_microseconds use base unit \"seconds\" instead of "
            "\"microseconds\"" ||
        line ==
            "nccl_p2p_exec_time_microseconds use base unit \"seconds\" instead of "
            "\"microseconds\"";
    EXPECT_TRUE(inspectorName) << "promtool: " << line;
  }
}

}  // namespace fakeprof
