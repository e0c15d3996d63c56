#include "hang/process_fate.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string_view>

#include "pilot/core/file.h"

namespace pilot::cli::hang {
namespace {

/// Seconds since the epoch at which this host booted (/proc/stat's btime), 0 if unknown.
int64_t bootTimeS(const std::string& procRoot) {
  std::string text;
  if (readFileUpTo(procRoot + "/stat", 1 << 20, &text) != ReadOutcome::Ok) return 0;
  const size_t at = text.find("\nbtime ");
  return at == std::string::npos ? 0 : std::atoll(text.c_str() + at + 7);
}

}  // namespace

const char* fateName(Fate f) {
  switch (f) {
    case Fate::Dead:
      return "dead";
    case Fate::Stopped:
      return "stopped";
    case Fate::DiskWait:
      return "disk_wait";
    case Fate::Alive:
      return "alive";
    case Fate::Unknown:
      break;
  }
  return "";
}

std::string thisHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

Fate fateOf(const ProcessProbe& probe, const std::string& node, int64_t pid, int64_t writtenMs) {
  if (probe.hostName.empty() || node != probe.hostName || pid <= 0) return Fate::Unknown;
  std::string stat;
  const std::string path = probe.procRoot + "/" + std::to_string(pid) + "/stat";
  if (readFileUpTo(path, 4096, &stat) != ReadOutcome::Ok) return Fate::Dead;
  // "pid (comm) S ppid ...": the command may hold spaces and parentheses; the state follows
  // the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return Fate::Unknown;
  std::istringstream fields(stat.substr(close + 2));
  std::string state;
  fields >> state;
  // Field 22 (starttime, clock ticks after boot) is the 20th after the state.
  std::string field;
  for (int i = 0; i < 19 && fields >> field; ++i) {
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  const int64_t boot = bootTimeS(probe.procRoot);
  if (!field.empty() && ticks > 0 && boot > 0) {
    const int64_t startMs = boot * 1000 + std::atoll(field.c_str()) * 1000 / ticks;
    if (startMs > writtenMs + 1000) return Fate::Dead;  // the pid is another process's now
  }
  switch (state.empty() ? '?' : state[0]) {
    case 'Z':
    case 'X':
      return Fate::Dead;
    case 'T':
    case 't':
      return Fate::Stopped;
    case 'D':
      return Fate::DiskWait;
    case '?':
      return Fate::Unknown;
    default:
      return Fate::Alive;
  }
}

}  // namespace pilot::cli::hang
