// One scenario per fork()ed child, for hosts of the built plugin: the plugin reads its settings
// and detects the machine once per process, as it must inside NCCL, so a scenario with its own
// environment needs a fresh process.
#pragma once

#include <functional>

namespace testsupport {

/// Runs body in a fork()ed child with ordinary gtest assertions, then fails the current test if
/// the child failed one (exit 1), threw (2), leaked under LeakSanitizer (3), or crashed.
void runInChild(const std::function<void()>& body);

}  // namespace testsupport
