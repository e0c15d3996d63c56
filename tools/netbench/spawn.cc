#include "netbench/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace pilot::cli {

Expected<pid_t> spawnPeer(const std::vector<std::string>& args, int inheritFd) {
  // Everything exec needs is built before fork: the child may only make async-signal-safe calls.
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Error{std::string("fork: ") + std::strerror(errno)};
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    const int flags = ::fcntl(inheritFd, F_GETFD);
    if (flags >= 0) ::fcntl(inheritFd, F_SETFD, flags & ~FD_CLOEXEC);
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  return pid;
}

std::string reapPeer(pid_t pid, double timeoutS) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeoutS * 1e3));
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return std::string("waitpid: ") + std::strerror(errno);
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return "did not exit within " + std::to_string(static_cast<int>(timeoutS)) +
             " s and was killed";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 0) return {};
    if (WEXITSTATUS(status) == 127) return "could not be started (exec failed)";
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return "died of signal " + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
  }
  return "ended abnormally";
}

}  // namespace pilot::cli
