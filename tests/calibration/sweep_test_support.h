// Helpers for the parsing and sweep tests: fixture paths, scratch directories, counting.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pilot/calibration/measurements.h"
#include "published_fixture.h"

namespace pilot::calibration::test {

/// A published nccl-tests output (../shared/fixtures/nccl-tests/NAME); a test reading one
/// starts with PILOT_REQUIRE_FIXTURE(fixture(NAME)).
inline std::string fixture(const std::string& name = "") {
  return testsupport::sharedFixture(name.empty() ? "nccl-tests" : "nccl-tests/" + name);
}

inline std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// A fresh directory under the build tree's temp dir, removed with the object.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "pilot-calibration-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Out-of-place rows of a run (one per size).
inline size_t rows(const calibration::Run& run) {
  size_t n = 0;
  for (const Sample& s : run.samples) n += s.inPlace ? 0 : 1;
  return n;
}

inline std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

/// True when some line contains `needle`.
inline bool mentions(const std::vector<std::string>& lines, const std::string& needle) {
  for (const std::string& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace pilot::calibration::test
