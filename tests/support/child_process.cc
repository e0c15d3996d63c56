#include "child_process.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

// Present in sanitizer builds only: lets a child run the leak check that _exit would skip.
extern "C" int __lsan_do_recoverable_leak_check() __attribute__((weak));

namespace testsupport {
namespace {

[[noreturn]] void finishChild(int status) {
  if (status == 0 && ::testing::Test::HasFailure()) status = 1;
  if (status == 0 && __lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check()) {
    status = 3;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(status);  // the parent's atexit handlers and gtest state are not ours to run
}

}  // namespace

void runInChild(const std::function<void()>& body) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  ASSERT_NE(pid, -1) << "fork: " << std::strerror(errno);
  if (pid == 0) {
    int status = 0;
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: uncaught exception: %s\n", e.what());
      status = 2;
    } catch (...) {
      std::fprintf(stderr, "child: uncaught exception\n");
      status = 2;
    }
    finishChild(status);
  }
  int status = 0;
  pid_t waited;
  do {
    waited = waitpid(pid, &status, 0);
  } while (waited == -1 && errno == EINTR);
  ASSERT_EQ(waited, pid) << "waitpid: " << std::strerror(errno);
  ASSERT_FALSE(WIFSIGNALED(status)) << "child killed by signal " << WTERMSIG(status) << " ("
                                    << strsignal(WTERMSIG(status)) << ")";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "the child scenario failed (1: assertions above, 2: exception, 3: leak)";
}

}  // namespace testsupport
