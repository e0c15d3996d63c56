// provideTopologyFile: the decision whether to hand NCCL a topology file, and the memfd that
// carries it. Runs inside the net plugin's first init, which NCCL calls before it reads
// NCCL_TOPO_FILE (init.cc: ncclNetInit precedes ncclTopoGetSystem), so setting the variable
// here is seen by the very first communicator (research/topology.md §1.4).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "pilot/core/text.h"
#include "pilot/topology/nccl_xml.h"
#include "pilot/topology/topo_file.h"

namespace pilot::topology {
namespace {

constexpr unsigned long kFlags = subsys::Net | subsys::Graph;
constexpr const char* kMemfdName = "nccl-pilot-topo";

std::string errnoText(int error) {
  return std::strerror(error);
}

/// Writes all of `data`, retrying short writes and EINTR. Returns 0 or an errno value.
int writeAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<size_t>(n);
  }
  return 0;
}

/// The memfd holding `xml`, or -errno.
///
/// Not MFD_CLOEXEC, on purpose. NCCL_TOPO_FILE lives in environ, and environ is inherited by
/// everything the process starts: fork() children keep every descriptor anyway, but an exec'ed
/// child (a launcher re-exec'ing itself, multiprocessing "spawn") keeps ours only without
/// CLOEXEC. With CLOEXEC that child would inherit NCCL_TOPO_FILE=/proc/self/fd/N pointing at
/// nothing, or at whatever file it opened under the same number. aws-ofi-nccl creates its
/// topology memfd with flags 0 for the same reason. The cost is one small read-only descriptor
/// in exec'ed children. The content is sealed so no holder of the descriptor can change it.
int createTopologyMemfd(const std::string& xml) {
  int fd = ::memfd_create(kMemfdName, MFD_ALLOW_SEALING);
  if (fd < 0) return -errno;
  if (fd <= STDERR_FILENO) {
    // stdin/stdout/stderr were closed: a program that reopens them would silently replace our
    // file under the same number. Move it above 2 (F_DUPFD does not set close-on-exec).
    const int moved = ::fcntl(fd, F_DUPFD, STDERR_FILENO + 1);
    const int error = errno;
    ::close(fd);
    if (moved < 0) return -error;
    fd = moved;
  }
  if (const int error = writeAll(fd, xml); error != 0) {
    ::close(fd);
    return -error;
  }
  // Best effort: a kernel without sealing still serves the file.
  (void)::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  return fd;
}

/// Copies the file for NCCL_PILOT_TOPO_DUMP. Returns "" or why not.
std::string writeDump(const std::string& path, const std::string& xml) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errnoText(errno);
  int error = writeAll(fd, xml);
  if (::close(fd) != 0 && error == 0) error = errno;
  return error == 0 ? std::string() : errnoText(error);
}

enum class FdLink { NotProcFd, File, OurMemfd, Dead };

/// What a preset NCCL_TOPO_FILE of the form /proc/self/fd/N points at. A parent that exported
/// our variable but did not pass the descriptor on (Python's subprocess closes every fd above
/// 2 by default) leaves a closed number, or one this process reused for a socket or pipe: both
/// are Dead. A file (a user's `3<topo.xml` redirect, another plugin's memfd) is the user's.
FdLink inspectProcFd(const std::string& path) {
  constexpr std::string_view kPrefix = "/proc/self/fd/";
  if (path.compare(0, kPrefix.size(), kPrefix) != 0) return FdLink::NotProcFd;
  if (!text::parseUnsigned(std::string_view(path).substr(kPrefix.size()))) {
    return FdLink::NotProcFd;
  }
  char target[256];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
  if (n < 0) return FdLink::Dead;
  const std::string link(target, static_cast<size_t>(n));
  if (link.rfind(std::string("/memfd:") + kMemfdName, 0) == 0) return FdLink::OurMemfd;
  // "socket:[..]", "pipe:[..]", "anon_inode:[..]" are not files NCCL could read.
  return !link.empty() && link[0] == '/' ? FdLink::File : FdLink::Dead;
}

TopoFileOutcome finish(Logger& log, LogLevel level, TopoFileOutcome::Kind kind, std::string path,
                       std::string summary) {
  log.logf(level, kFlags, __FILE__, __LINE__, "%s", summary.c_str());
  TopoFileOutcome outcome;
  outcome.kind = kind;
  outcome.path = std::move(path);
  outcome.summary = std::move(summary);
  return outcome;
}

/// "4 GPUs, 4 NICs; 0000:07:00.0->mlx5_0 PHB->PIX, ...": what the INFO line says we found.
RepairPolicy readRepairPolicy(const EnvLookup& env, Logger& log) {
  auto value = readText(env, setting::kTopoRepair);
  if (!value) return RepairPolicy::Auto;
  if (auto policy = parseRepairPolicy(*value)) return *policy;
  PILOT_LOG(log, Warn, kFlags | subsys::Env, "%s=%s is not auto, on or off; using auto",
            setting::kTopoRepair, value->c_str());
  return RepairPolicy::Auto;
}

std::string describe(const Machine& detected, const std::vector<GpuNicPair>& pairs,
                     const RepairResult* repair, const std::string& repairWhy) {
  std::string s = std::to_string(detected.gpus.size()) + " GPU(s), " +
                  std::to_string(detected.nics.size()) + " NIC(s)";
  if (pairs.empty()) s += "; no GPU-NIC pairs";
  for (size_t i = 0; i < pairs.size(); ++i) {
    const GpuNicPair& pair = pairs[i];
    s += i == 0 ? "; pairs " : ", ";
    const Gpu& gpu = detected.gpus.at(static_cast<size_t>(pair.gpu));
    const PciNode& node = detected.pci.at(static_cast<size_t>(gpu.pci));
    s += node.busId ? node.busId->str() : "gpu" + std::to_string(pair.gpu);
    s += "->";
    for (size_t k = 0; k < pair.nics.size(); ++k) {
      if (k > 0) s += "+";
      s += detected.nics.at(static_cast<size_t>(pair.nics[k])).name;
    }
    s += " ";
    s += pathName(pair.path);
    if (repair != nullptr) {
      const PathType after = pairPathOn(detected, pair, repair->machine);
      if (after != pair.path) s += std::string("->") + pathName(after);
    }
  }
  if (repair == nullptr) {
    s += "; " + repairWhy;
  } else if (repair->repaired) {
    s += "; repaired (" + std::to_string(repair->actions.size()) + " synthetic switch(es))";
  } else {
    s += "; no repair needed";
  }
  return s;
}

}  // namespace

TopoFileOutcome provideTopologyFile(const EnvLookup& env, Logger& log, EnvironmentWriter& writer,
                                    const DetectFn& detect) {
  using Kind = TopoFileOutcome::Kind;
  auto readSwitch = [&](const char* name) {
    auto value = readBool(env, name, true);
    if (value.ok()) return value.value();
    PILOT_LOG(log, Warn, kFlags, "%s; using the default 1", value.error().c_str());
    return true;
  };

  if (!readSwitch(setting::kTopo)) {
    return finish(log, LogLevel::Info, Kind::Disabled, "",
                  std::string(setting::kTopo) +
                      "=0: no topology file from nccl-pilot; NCCL detects the machine on its own");
  }

  if (auto preset = readText(env, setting::kNcclTopoFile)) {
    const FdLink link = inspectProcFd(*preset);
    if (link != FdLink::Dead) {
      std::string why = link == FdLink::OurMemfd
                            ? " is the nccl-pilot topology file already given to this process"
                            : " is set by the user or the environment";
      return finish(log, LogLevel::Info, Kind::UserFileKept, *preset,
                    "NCCL_TOPO_FILE=" + *preset + why + "; keeping it, no file written");
    }
    PILOT_LOG(log, Info, kFlags,
              "NCCL_TOPO_FILE=%s names no open file in this process (inherited from a parent "
              "without its descriptor); replacing it",
              preset->c_str());
  }

  Expected<Machine> detected = detect();
  if (!detected.ok()) {
    return finish(
        log, LogLevel::Warn, Kind::Failed, "",
        "topology detection failed: " + detected.error() + "; NCCL detects the machine on its own");
  }
  const Machine& machine = detected.value();
  for (const std::string& note : machine.notes) {
    PILOT_LOG(log, Info, kFlags, "topology: %s", note.c_str());
  }

  if (machine.gpus.empty()) {
    // NCCL places its own GPU from sysfs when the file lacks it, so a GPU-less file would only
    // add our CPU and PCI attributes (which win over NCCL's) to a machine NCCL cannot use.
    return finish(log, LogLevel::Info, Kind::NoGpu, "",
                  "no GPU found (" + machine.source + ", " + std::to_string(machine.nics.size()) +
                      " NIC(s)); no topology file, NCCL detects the machine on its own");
  }

  const std::vector<GpuNicPair> pairs = pairGpusWithNics(machine);
  std::optional<RepairResult> repair;
  std::string repairWhy;
  if (shouldRepair(readRepairPolicy(env, log), machine, &repairWhy)) {
    repair = repairFlatTopology(machine, pairs);
    for (const std::string& action : repair->actions) {
      PILOT_LOG(log, Info, kFlags, "topology repair: %s", action.c_str());
    }
  }
  const Machine& written = repair && repair->repaired ? repair->machine : machine;

  Expected<std::string> xml = writeNcclXml(written);
  if (!xml.ok()) {
    return finish(log, LogLevel::Warn, Kind::Failed, "",
                  "cannot write the NCCL topology file: " + xml.error() +
                      "; NCCL detects the machine on its own");
  }

  const int fd = createTopologyMemfd(xml.value());
  if (fd < 0) {
    return finish(log, LogLevel::Warn, Kind::Failed, "",
                  "cannot create the in-memory topology file: " + errnoText(-fd) +
                      "; NCCL detects the machine on its own");
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (!writer.set(setting::kNcclTopoFile, path)) {
    ::close(fd);
    return finish(log, LogLevel::Warn, Kind::Failed, "",
                  "cannot set NCCL_TOPO_FILE (out of memory); NCCL detects the machine on its own");
  }

  if (auto dump = readText(env, setting::kTopoDump)) {
    const std::string why = writeDump(*dump, xml.value());
    if (why.empty()) {
      PILOT_LOG(log, Info, kFlags, "wrote a copy of the topology file to %s=%s", setting::kTopoDump,
                dump->c_str());
    } else {
      PILOT_LOG(log, Warn, kFlags, "cannot write %s=%s: %s (the topology file is still used)",
                setting::kTopoDump, dump->c_str(), why.c_str());
    }
  }

  TopoFileOutcome outcome =
      finish(log, LogLevel::Info, Kind::Written, path,
             "NCCL_TOPO_FILE=" + path + " (" + machine.source +
                 "): " + describe(machine, pairs, repair ? &*repair : nullptr, repairWhy));
  outcome.fd = fd;
  return outcome;
}

}  // namespace pilot::topology
