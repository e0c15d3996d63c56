// Published data we did not produce (../shared/fixtures, see its README) is not in the
// repository: a user's clone has none. A test that reads it starts with
//   PILOT_REQUIRE_FIXTURE(path);
// which skips the test with one line naming the missing path, or fails it when CI=true, so CI
// never passes by skipping. Tests that only need a plausible machine use tests/topology/data.
#pragma once

#include <string>

#include <gtest/gtest.h>

namespace testsupport {

/// The phrase every skip line carries; tools/run-tests.sh counts the tests that print it.
inline constexpr char kMissingFixture[] = "published fixture missing";

/// The published fixture root, ../shared/fixtures beside the checkout (PILOT_SHARED_FIXTURES,
/// set by tests/CMakeLists.txt), then `relative` under it.
std::string sharedFixture(const std::string& relative = "");

/// "" when `path` exists, else the line a skipped (or, under CI, failed) test prints.
std::string missingFixture(const std::string& path);

/// True when CI is "true" or "1": a missing fixture is a failure there.
bool fixturesRequired();

}  // namespace testsupport

#define PILOT_REQUIRE_FIXTURE(path)                                               \
  do {                                                                            \
    const std::string pilotMissingFixture_ = ::testsupport::missingFixture(path); \
    if (!pilotMissingFixture_.empty()) {                                          \
      if (::testsupport::fixturesRequired()) FAIL() << pilotMissingFixture_;      \
      GTEST_SKIP() << pilotMissingFixture_;                                       \
    }                                                                             \
  } while (0)
