#include "record/process_record.h"

#include <dlfcn.h>
#include <link.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "pilot/core/config.h"
#include "pilot/core/file.h"
#include "pilot/core/sha256.h"
#include "pilot/metrics/runtime.h"
#include "pilot/provenance/conf_files.h"
#include "pilot/topology/fabric.h"
#include "pilot/version.h"
#include "tuner/process_facts.h"

extern char** environ;

namespace pilot::plugin {
namespace {

constexpr unsigned long kFlags = subsys::Init | subsys::Env;
constexpr size_t kMaxTableBytes = 64u << 20;  // the tuner's own limit is lower
constexpr size_t kMaxConfBytes = 1u << 20;
constexpr size_t kMaxNameBytes = 128;

std::string formatVersion(int code) {
  if (code <= 0) return {};
  // NCCL's code since 2.9: major * 10000 + minor * 100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

/// The file of this copy of the library (symlinks resolved: the name says which build).
std::string ownPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&ownPath), &info) == 0 || info.dli_fname == nullptr)
    return {};
  char* resolved = realpath(info.dli_fname, nullptr);
  std::string out = resolved != nullptr ? resolved : info.dli_fname;
  std::free(resolved);
  return out;
}

/// How many objects the process has loaded so far (dlpi_adds): the mapped libnccl are looked
/// for again only when it changed.
unsigned long long loadedObjects() {
  unsigned long long adds = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* out) -> int {
        if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
          *static_cast<unsigned long long*>(out) = info->dlpi_adds;
        return 1;  // one object tells
      },
      &adds);
  return adds;
}

/// Every mapped object that defines ncclGetVersion itself (not through its dependencies), with
/// the version it answers. The loader's lock is held during dl_iterate_phdr, so the names are
/// gathered first and asked afterwards. About 27 us an object (400 objects: 11-19 ms), once per
/// plugin kind and whenever objects were loaded since.
std::vector<provenance::Library> mappedNccls() {
  std::vector<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) -> int {
        if (info->dlpi_name != nullptr && std::strchr(info->dlpi_name, '/') != nullptr)
          static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
        return 0;
      },
      &names);
  std::vector<provenance::Library> out;
  for (const std::string& name : names) {
    if (out.size() >= provenance::kMaxLibraries) break;
    void* handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* symbol = dlsym(handle, "ncclGetVersion");
    Dl_info info{};
    if (symbol != nullptr && dladdr(symbol, &info) != 0 && info.dli_fname != nullptr &&
        name == info.dli_fname) {
      int code = 0;
      using GetVersion = int (*)(int*);
      const bool answered = reinterpret_cast<GetVersion>(symbol)(&code) == 0;
      out.push_back({name, answered ? formatVersion(code) : std::string()});
    }
    dlclose(handle);
  }
  return out;
}

std::string homeDirectory() {
  // NCCL asks the passwd entry, not $HOME.
  passwd entry{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwuid_r(getuid(), &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr)
    return {};
  return found->pw_dir != nullptr ? found->pw_dir : "";
}

/// Whether NCCL's IB transport would find an RDMA port, NCCL_IB_DISABLE and NCCL_NET aside.
bool rdmaUp() {
  const EnvLookup env = processEnv();
  const EnvLookup without = [env](const char* name) -> std::optional<std::string> {
    if (std::strcmp(name, "NCCL_IB_DISABLE") == 0 || std::strcmp(name, "NCCL_NET") == 0)
      return std::nullopt;
    return env(name);
  };
  return topology::detectFabric(without).rdma;
}

void readSettings(provenance::ProcessRecord& r) {
  // The nccl.conf files NCCL merged, in its order: a value is attributed to the first file
  // that holds it, as NCCL's setenv(..., 0) keeps the first.
  const char* confSetting = std::getenv("NCCL_CONF_FILE");
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> files;
  for (const std::string& path : provenance::ncclConfFiles(
           confSetting ? std::optional<std::string>(confSetting) : std::nullopt, homeDirectory())) {
    std::string text;
    if (readFileUpTo(path, kMaxConfBytes, &text) == ReadOutcome::Ok) {
      r.confFiles.push_back(path);
      files.emplace_back(path, provenance::parseNcclConf(text));
    }
  }
  // The file whose value NCCL took for `name` (the first that sets it), and that value.
  auto fromFile = [&](const std::string& name) -> std::pair<std::string, std::string> {
    for (const auto& [path, lines] : files) {
      for (const auto& line : lines) {
        if (line.first == name) return {path, line.second};
      }
    }
    return {};
  };
  std::vector<std::pair<std::string, std::string>> seen;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (entry.rfind("NCCL_", 0) != 0 || eq == std::string_view::npos) continue;
    seen.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  // Names a file sets that the environment does not hold (NCCL merges them at its init).
  for (const auto& [path, lines] : files) {
    for (const auto& [name, value] : lines) {
      if (name.rfind("NCCL_", 0) != 0) continue;
      bool present = false;
      for (const auto& s : seen) present = present || s.first == name;
      if (!present) seen.emplace_back(name, value);
    }
  }
  std::sort(seen.begin(), seen.end());  // the environment's order says nothing
  std::optional<bool> rdma;
  for (const auto& [name, value] : seen) {
    if (r.settings.size() >= provenance::kMaxSettings || name.size() > kMaxNameBytes) {
      ++r.settingsDropped;
      continue;
    }
    provenance::Setting s;
    s.name = name;
    s.value = value.substr(0, provenance::kMaxValueBytes);
    if (const auto [path, fileValue] = fromFile(name); !path.empty() && fileValue == value)
      s.source = path;
    if (name == "NCCL_IB_DISABLE" && !rdma) rdma = rdmaUp();
    const provenance::Classification c =
        provenance::classifySetting(name, value, rdma.value_or(false));
    s.cls = c.cls;
    s.why = c.why;
    s.closest = c.closest;
    r.settings.push_back(std::move(s));
  }
}

std::string tableDigest(const std::string& path) {
  std::string text;
  if (path.empty() || readFileUpTo(path, kMaxTableBytes, &text) != ReadOutcome::Ok) return {};
  return sha256Hex(text);
}

/// Binds the abstract socket `what` of this process, once: true for the first caller in the
/// process (any copy of the library), false afterwards. The socket is kept open until the
/// process exits (a copy unloaded and loaded again still finds it). Without sockets (a
/// sandbox), every copy counts as first: its lines may then repeat, never go missing.
bool firstInProcess(const char* what) {
  char ns[64] = {};
  const ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  const std::string name = std::string("nccl-pilot/") + what + "/" +
                           (n > 0 ? std::string(ns, static_cast<size_t>(n)) : "pid") + "/" +
                           std::to_string(getpid());
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const size_t length = std::min(name.size(), sizeof address.sun_path - 1);
  std::memcpy(address.sun_path + 1, name.data(), length);  // sun_path[0] = 0: abstract
  const auto size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), size) == 0) return true;  // kept open
  const bool taken = errno == EADDRINUSE;
  close(fd);
  return !taken;
}

struct State {
  std::mutex mutex;
  std::vector<provenance::LoadedPlugin> plugins;  // this copy's, in the order NCCL called
  std::string table, tableSha;
  bool tableRead = false;
  bool started = false;              // this copy published a record
  unsigned long long scannedAt = 0;  // loadedObjects() when `libraries` was read
  std::vector<provenance::Library> libraries;
};
State& state() {
  static State s;
  return s;
}

}  // namespace

provenance::ProcessRecord buildProcessRecord(const void* caller,
                                             std::vector<provenance::Library> libraries) {
  provenance::ProcessRecord r;
  r.pid = getpid();
  const provenance::LauncherRank rank =
      provenance::launcherRank([](const char* name) -> const char* { return std::getenv(name); });
  r.rank = rank.rank;
  r.rankFrom = rank.from;
  r.localRank = rank.local;
  r.pilotVersion = kVersion;
  const FoundVersion nccl = findRunningNccl(caller);
  r.nccl.version = formatVersion(nccl.code);
  r.nccl.path = nccl.path;
  r.ncclHow = nccl.code != 0 ? nccl.where : nccl.tried;
  r.libraries = std::move(libraries);
  for (const char* name :
       {"NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN", "NCCL_ENV_PLUGIN"}) {
    if (const char* v = std::getenv(name))
      r.pluginSettings.emplace_back(name, std::string(v).substr(0, provenance::kMaxValueBytes));
  }
  if (const char* v = std::getenv("NCCL_ENV_PLUGIN")) r.envPlugin = v;
  readSettings(r);
  return r;
}

void noteProcessInit(const char* kind, int abi, const void* caller, Logger& log) noexcept {
  try {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (const provenance::LoadedPlugin& p : s.plugins) {
      if (p.kind == kind && p.abi == abi) return;
    }
    s.plugins.push_back({kind, abi, ownPath()});
    if (const unsigned long long adds = loadedObjects(); adds == 0 || adds != s.scannedAt) {
      s.libraries = mappedNccls();
      s.scannedAt = adds;
    }
    provenance::ProcessRecord r = buildProcessRecord(caller, s.libraries);
    r.plugins = s.plugins;
    if (!s.tableRead) {
      s.tableRead = true;
      if (const char* t = std::getenv(setting::kTunerTable)) s.table = t;
      s.tableSha = tableDigest(s.table);
    }
    r.table = s.table;
    r.tableSha256 = s.tableSha;
    const bool first = !s.started && firstInProcess("record");
    s.started = true;
    metrics::MetricsRuntime& runtime = metrics::MetricsRuntime::process();
    runtime.publishRecord(r, first, log);
    const std::string problems = provenance::ownProblems(r);
    const std::string where = runtime.recordPath();
    if (!problems.empty() && firstInProcess("warned")) {
      PILOT_LOG(log, Warn, kFlags,
                "this process: %s. Compare the ranks: nccl-pilot doctor --job %s", problems.c_str(),
                where.empty() ? "DIR (set NCCL_PILOT_METRICS_DIR)"
                              : where.substr(0, where.rfind('/')).c_str());
    } else if (first) {
      PILOT_LOG(log, Info, kFlags,
                "process: NCCL %s (%s), %zu libnccl mapped, %zu NCCL_* settings%s%s",
                r.nccl.version.empty() ? "of unknown version" : r.nccl.version.c_str(),
                r.nccl.path.empty() ? r.ncclHow.c_str() : r.nccl.path.c_str(), r.libraries.size(),
                r.settings.size(), where.empty() ? "" : "; record in ", where.c_str());
    }
  } catch (...) {
    // No record is no harm: NCCL goes on, and doctor --job says which rank has none.
  }
}

}  // namespace pilot::plugin
