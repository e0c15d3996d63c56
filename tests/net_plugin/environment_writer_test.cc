// processEnvironmentWriter: the environ swap that sets NCCL_TOPO_FILE while other threads may
// be in getenv. Labelled "threads": the TSan preset runs it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "pilot/topology/topo_file.h"

namespace pilot::topology {
namespace {

char** currentEnviron() {
  return __atomic_load_n(&environ, __ATOMIC_ACQUIRE);
}

int entriesNamed(const char* name) {
  const size_t length = std::strlen(name);
  int n = 0;
  for (char** e = currentEnviron(); e != nullptr && *e != nullptr; ++e) {
    n += std::strncmp(*e, name, length) == 0 && (*e)[length] == '=';
  }
  return n;
}

/// getenv as glibc does it, reading environ with acquire ordering.
const char* modelGetenv(const char* name) {
  const size_t length = std::strlen(name);
  for (char** e = currentEnviron(); e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, name, length) == 0 && (*e)[length] == '=') return *e + length + 1;
  }
  return nullptr;
}

std::vector<std::string> snapshot() {
  std::vector<std::string> out;
  for (char** e = currentEnviron(); e != nullptr && *e != nullptr; ++e) out.push_back(*e);
  return out;
}

TEST(ProcessEnvironmentWriter, AddsThenReplacesAVariable) {
  constexpr const char* kName = "PILOT_ENV_WRITER_ADD";
  ASSERT_EQ(std::getenv(kName), nullptr);
  const std::vector<std::string> before = snapshot();
  EnvironmentWriter& writer = processEnvironmentWriter();
  ASSERT_TRUE(writer.set(kName, "/proc/self/fd/7"));
  ASSERT_NE(std::getenv(kName), nullptr);
  EXPECT_STREQ(std::getenv(kName), "/proc/self/fd/7");
  ASSERT_TRUE(writer.set(kName, "second"));
  EXPECT_STREQ(std::getenv(kName), "second");
  EXPECT_EQ(entriesNamed(kName), 1);
  // Everything else is where it was.
  std::vector<std::string> after = snapshot();
  after.erase(std::remove(after.begin(), after.end(), std::string(kName) + "=second"), after.end());
  EXPECT_EQ(after, before);
  unsetenv(kName);  // glibc's unsetenv edits our array in place: it must be a writable copy
  EXPECT_EQ(std::getenv(kName), nullptr);
}

TEST(ProcessEnvironmentWriter, ReplacesAVariableSetWithSetenvAndKeepsTheOldArrayIntact) {
  constexpr const char* kName = "PILOT_ENV_WRITER_OLD";
  setenv(kName, "from-setenv", 1);
  char** const old = currentEnviron();
  std::vector<std::string> oldEntries;
  for (char** e = old; *e != nullptr; ++e) oldEntries.push_back(*e);

  ASSERT_TRUE(processEnvironmentWriter().set(kName, "from-writer"));
  EXPECT_STREQ(std::getenv(kName), "from-writer");
  EXPECT_NE(currentEnviron(), old);
  // A reader still walking the previous array sees exactly what it saw before.
  size_t i = 0;
  for (char** e = old; *e != nullptr; ++e, ++i) {
    ASSERT_LT(i, oldEntries.size());
    EXPECT_EQ(oldEntries[i], *e);
  }
  EXPECT_EQ(i, oldEntries.size());
  setenv(kName, "setenv-after-swap", 1);  // glibc copies our array; it must keep working
  EXPECT_STREQ(std::getenv(kName), "setenv-after-swap");
  EXPECT_EQ(entriesNamed(kName), 1);
  unsetenv(kName);
}

TEST(ProcessEnvironmentWriter, RejectsBadNames) {
  EnvironmentWriter& writer = processEnvironmentWriter();
  EXPECT_FALSE(writer.set("", "x"));
  EXPECT_FALSE(writer.set("A=B", "x"));
  EXPECT_FALSE(writer.set(nullptr, "x"));
}

TEST(ProcessEnvironmentWriter, ReadersInOtherThreadsNeverSeeATornEnvironment) {
  constexpr const char* kName = "PILOT_ENV_WRITER_RACE";
  constexpr int kWrites = 300;
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0};
  std::atomic<int> bad{0};
  setenv("PILOT_ENV_WRITER_STABLE", "1", 1);  // before the threads: setenv is not thread-safe
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        // The real getenv must never crash or lose an untouched variable. Its result is only
        // compared with NULL: glibc is not instrumented, so ThreadSanitizer cannot see which
        // array getenv loaded, and reading the string here would look unordered to it.
        (void)std::getenv(kName);
        if (std::getenv("PILOT_ENV_WRITER_STABLE") == nullptr) ++bad;
        // The contents are checked through getenv's own algorithm with the ordering it relies
        // on made explicit: an acquire load of environ (on hardware, getenv's address
        // dependency) paired with the writer's release store.
        const char* value = modelGetenv(kName);
        if (value != nullptr && std::strncmp(value, "value-", 6) != 0) ++bad;
        ++reads;
      }
    });
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kWrites; ++i) {
        if (!processEnvironmentWriter().set(kName, "value-" + std::to_string(w * kWrites + i))) {
          ++bad;
        }
      }
    });
  }
  for (std::thread& t : writers) t.join();
  stop = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(entriesNamed(kName), 1);
  ASSERT_NE(std::getenv(kName), nullptr);
  EXPECT_EQ(std::strncmp(std::getenv(kName), "value-", 6), 0);
  unsetenv(kName);
}

}  // namespace
}  // namespace pilot::topology
