#include "sweep/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace pilot::calibration::detail {
namespace {

std::vector<std::string> buildEnvironment(const SpawnSpec& spec) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    const std::string name = kv.substr(0, kv.find('='));
    bool drop = false;
    for (const std::string& u : spec.unsetEnv) drop = drop || u == name;
    for (const auto& set : spec.setEnv) drop = drop || set.first == name;
    if (!drop) env.push_back(std::move(kv));
  }
  for (const auto& [name, value] : spec.setEnv) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string findExecutable(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return "";
}

Expected<pid_t> spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return Error{"empty command"};
  const std::string program = findExecutable(spec.argv[0]);
  if (program.empty()) return Error{spec.argv[0] + ": not found or not executable"};
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> argvStrings = spec.argv;
  std::vector<std::string> envStrings = buildEnvironment(spec);
  std::vector<char*> argv = pointers(argvStrings);
  std::vector<char*> envp = pointers(envStrings);
  const char* logPath = spec.logPath.empty() ? "/dev/null" : spec.logPath.c_str();
  const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();

  int errorPipe[2];
  if (pipe2(errorPipe, O_CLOEXEC) != 0) return Error{std::string("pipe: ") + std::strerror(errno)};
  const pid_t pid = fork();
  if (pid < 0) {
    close(errorPipe[0]);
    close(errorPipe[1]);
    return Error{std::string("fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    setpgid(0, 0);
    // Default dispositions: the parent's handlers (and any ignored SIGINT) must not leak in.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    int err = 0;
    if (cwd && chdir(cwd) != 0) err = errno;
    int in = err ? -1 : open("/dev/null", O_RDONLY);
    int out = err || in < 0 ? -1 : open(logPath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!err && (in < 0 || out < 0)) err = errno;
    if (!err && (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)) err = errno;
    if (!err) execve(program.c_str(), argv.data(), envp.data());
    if (!err) err = errno;
    ssize_t ignored = write(errorPipe[1], &err, sizeof err);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no window where a stop would miss the child's group
  close(errorPipe[1]);
  int childErrno = 0;
  ssize_t n;
  do {
    n = read(errorPipe[0], &childErrno, sizeof childErrno);
  } while (n < 0 && errno == EINTR);
  close(errorPipe[0]);
  if (n == static_cast<ssize_t>(sizeof childErrno)) {
    int status;
    waitpid(pid, &status, 0);
    return Error{spec.argv[0] + ": cannot start: " + std::strerror(childErrno)};
  }
  return pid;
}

std::optional<ExitStatus> poll(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  ExitStatus s;
  if (r < 0) return s;  // not our child any more: report it ended, status unknown
  if (WIFEXITED(status)) s.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) s.signal = WTERMSIG(status);
  return s;
}

void signalGroup(pid_t pid, int sig) {
  if (pid > 0) kill(-pid, sig);
}

Expected<std::string> runCapture(const std::vector<std::string>& argv, double timeoutSeconds) {
  char pattern[] = "/tmp/nccl-pilot-capture-XXXXXX";
  int fd = mkstemp(pattern);
  if (fd < 0) return Error{std::string("mkstemp: ") + std::strerror(errno)};
  close(fd);
  SpawnSpec spec;
  spec.argv = argv;
  spec.logPath = pattern;
  auto pid = spawn(spec);
  if (!pid.ok()) {
    unlink(pattern);
    return Error{pid.error()};
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long>(timeoutSeconds * 1000));
  std::optional<ExitStatus> status;
  while (!(status = poll(*pid))) {
    if (std::chrono::steady_clock::now() > deadline) {
      signalGroup(*pid, SIGKILL);
      while (!poll(*pid)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      unlink(pattern);
      return Error{argv[0] + " did not finish within " +
                   std::to_string(static_cast<int>(timeoutSeconds)) + " s"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string output;
  if (FILE* f = std::fopen(pattern, "rb")) {
    char buffer[4096];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof buffer, f)) > 0) output.append(buffer, got);
    std::fclose(f);
  }
  unlink(pattern);
  return output;
}

}  // namespace pilot::calibration::detail
