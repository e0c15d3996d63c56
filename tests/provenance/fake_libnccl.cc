// A stand-in libnccl.so.2 that loads plugins as NCCL's communicator init does, so the plugin's
// provenance record sees what it would in a real rank: its init called from inside a library
// named libnccl.so.2 (dladdr on the return address names this file), an ncclGetVersion in that
// library only (loaded RTLD_LOCAL by the rank driver, as a framework's extension module loads
// its NCCL), and the environment after NCCL merged its nccl.conf files. Built once per version
// (FAKE_NCCL_VERSION), each copy in its own directory.
//
// What it follows of NCCL (2.27 / 2.28, src/misc/param.cc and src/plugin/*.cc):
// - initEnv, once per process: NCCL_CONF_FILE's file if set and not empty, else ~/.nccl.conf
//   (the passwd entry's home), then /etc/nccl.conf; NAME=VALUE lines, '#' lines skipped,
//   nothing trimmed, setenv(name, value, 0) so the environment wins;
// - a plugin name is dlopened as given, then as libnccl-<kind>-<name>.so (RTLD_NOW|RTLD_LOCAL);
//   the tuner and the profiler come from NCCL_TUNER_PLUGIN / NCCL_PROFILER_PLUGIN's library,
//   else from the net plugin's;
// - the newest symbol the release knows (research/nccl-plugin-apis-2026.md): 2.28 takes net v11,
//   tuner v5, profiler v5; 2.27 net v10, tuner v4, profiler v4;
// - net: init, then devices(); none (or a failed init) disables it, and 2.28 finalizes the
//   context right away; destroy: profiler finalize, tuner finalize, net finalize, each dlclosed.
// Its own lines go to stderr as "fake-nccl <version>: ..."; the plugin's through the logger
// below as "NCCL WARN ..." / "NCCL INFO ...", whatever NCCL_DEBUG says, so a test counts them.
#include <dlfcn.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "net_host_abi.h"
#include "profiler_host_abi.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kVersion = FAKE_NCCL_VERSION;
constexpr bool kIs228 = kVersion >= 22803;

std::string versionText() {
  return std::to_string(kVersion / 10000) + "." + std::to_string(kVersion / 100 % 100) + "." +
         std::to_string(kVersion % 100);
}

void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char* fmt, ...) {
  char buffer[2048];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  std::fprintf(stderr, "fake-nccl %s: %s\n", versionText().c_str(), buffer);
}

// NCCL's ncclDebugLog, printing every level (NCCL would filter by NCCL_DEBUG).
void logLine(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  char buffer[4096];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  const char* name = level == NCCL_LOG_WARN    ? "WARN"
                     : level == NCCL_LOG_INFO  ? "INFO"
                     : level == NCCL_LOG_TRACE ? "TRACE"
                                               : "VERSION";
  std::fprintf(stderr, "%s:%d NCCL %s %s\n", "fakehost", static_cast<int>(getpid()), name, buffer);
}

void setEnvFile(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return;
  char* line = nullptr;
  size_t size = 0;
  ssize_t n;
  while ((n = getline(&line, &size, file)) != -1) {
    if (line[0] == '#') continue;
    if (n > 0 && line[n - 1] == '\n') line[n - 1] = '\0';
    const char* eq = std::strchr(line, '=');
    if (eq == nullptr) continue;
    const std::string name(line, std::min<size_t>(eq - line, 1023));
    const std::string value = std::string(eq + 1).substr(0, 1023);
    const bool kept = getenv(name.c_str()) != nullptr;
    setenv(name.c_str(), value.c_str(), 0);
    say("%s: %s=%s%s", path.c_str(), name.c_str(), value.c_str(),
        kept ? " (the environment's value holds)" : "");
  }
  std::free(line);
  std::fclose(file);
}

void initEnv() {
  static bool done = false;
  if (done) return;
  done = true;
  const char* user = getenv("NCCL_CONF_FILE");
  if (user != nullptr && user[0] != '\0') {
    setEnvFile(user);
  } else if (const passwd* pw = getpwuid(getuid()); pw != nullptr && pw->pw_dir != nullptr) {
    setEnvFile(std::string(pw->pw_dir) + "/.nccl.conf");
  }
  setEnvFile("/etc/nccl.conf");
}

void* openPluginLib(const char* kind, const char* name) {
  if (name == nullptr || name[0] == '\0') return nullptr;
  void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) return handle;
  const std::string prefixed = std::string("libnccl-") + kind + "-" + name + ".so";
  handle = dlopen(prefixed.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) say("%s plugin %s: %s", kind, name, dlerror());
  return handle;
}

/// The newest of `symbols` the library has; `*abi` its version.
void* newest(void* lib, const char* prefix, const int* abis, int* abi) {
  for (; *abis != 0; ++abis) {
    const std::string symbol = prefix + std::to_string(*abis);
    if (void* found = dlsym(lib, symbol.c_str())) {
      *abi = *abis;
      return found;
    }
  }
  return nullptr;
}

constexpr int kNet228[] = {11, 10, 0}, kNet227[] = {10, 0};
constexpr int kTuner228[] = {5, 4, 0}, kTuner227[] = {4, 0};
constexpr int kProfiler228[] = {5, 4, 0}, kProfiler227[] = {4, 0};

struct Comm {
  uint64_t id = 0;
  void *netLib = nullptr, *net = nullptr, *netCtx = nullptr;
  void *tunerLib = nullptr, *tuner = nullptr, *tunerCtx = nullptr;
  void *profilerLib = nullptr, *profiler = nullptr, *profilerCtx = nullptr;
  int netAbi = 0, tunerAbi = 0, profilerAbi = 0;
};

void initNet(Comm& c) {
  c.netLib = openPluginLib("net", getenv("NCCL_NET_PLUGIN"));
  if (c.netLib == nullptr) return;
  c.net = newest(c.netLib, "ncclNetPlugin_v", kIs228 ? kNet228 : kNet227, &c.netAbi);
  if (c.net == nullptr) return say("net plugin: no ncclNetPlugin_v symbol this NCCL loads");
  int rc, ndev = 0;
  if (c.netAbi >= 11) {
    auto* net = static_cast<nethost::NetPerComm*>(c.net);
    nethost::CommConfig config{-1};  // NCCL_NET_TRAFFIC_CLASS_UNDEF
    rc = net->init(&c.netCtx, c.id, &config, reinterpret_cast<nethost::Logger>(logLine), nullptr);
  } else {
    rc = static_cast<nethost::NetV10*>(c.net)->init(reinterpret_cast<nethost::Logger>(logLine),
                                                    nullptr);
  }
  if (rc == 0) static_cast<nethost::NetOld*>(c.net)->devices(&ndev);
  say("net plugin %s: ncclNetPlugin_v%d init %d, %d devices", getenv("NCCL_NET_PLUGIN"), c.netAbi,
      rc, ndev);
  if ((rc != 0 || ndev <= 0) && c.netAbi >= 11) {
    static_cast<nethost::NetPerComm*>(c.net)->finalize(c.netCtx);  // 2.28.9 disables it so
    c.netCtx = nullptr;
  }
}

/// The tuner or profiler library: its own setting's, else the net plugin's (another reference).
void* pluginLib(const char* kind, const char* setting, const char** from) {
  *from = getenv(setting);
  if (void* lib = openPluginLib(kind, *from)) return lib;
  *from = getenv("NCCL_NET_PLUGIN");
  return openPluginLib("net", *from);
}

void initTuner(Comm& c, int nRanks) {
  const char* from = nullptr;
  c.tunerLib = pluginLib("tuner", "NCCL_TUNER_PLUGIN", &from);
  if (c.tunerLib == nullptr) return;
  c.tuner = newest(c.tunerLib, "ncclTunerPlugin_v", kIs228 ? kTuner228 : kTuner227, &c.tunerAbi);
  if (c.tuner == nullptr) return say("tuner: no ncclTunerPlugin_v symbol in %s", from);
  int rc;
  if (c.tunerAbi >= 5) {
    ncclNvlDomainInfo_v5_t nvl = {1, nRanks, nRanks};
    static ncclTunerConstants_v5_t constants;  // zeros: the fake's cost model is not needed
    rc = static_cast<ncclTuner_v5_t*>(c.tuner)->init(&c.tunerCtx, c.id, nRanks, 1, logLine, &nvl,
                                                     &constants);
  } else {
    rc = static_cast<ncclTuner_v4_t*>(c.tuner)->init(nRanks, 1, logLine, &c.tunerCtx);
  }
  say("tuner %s: ncclTunerPlugin_v%d init %d", from, c.tunerAbi, rc);
  if (rc != 0) c.tuner = nullptr;
}

void initProfiler(Comm& c, const char* commName, int rank, int nRanks) {
  const char* from = nullptr;
  c.profilerLib = pluginLib("profiler", "NCCL_PROFILER_PLUGIN", &from);
  if (c.profilerLib == nullptr) return;
  c.profiler =
      newest(c.profilerLib, "ncclProfiler_v", kIs228 ? kProfiler228 : kProfiler227, &c.profilerAbi);
  if (c.profiler == nullptr) return say("profiler: no ncclProfiler_v symbol in %s", from);
  int mask = 0, rc;
  if (c.profilerAbi >= 5) {
    rc = static_cast<ncclProfiler_v5_t*>(c.profiler)
             ->init(&c.profilerCtx, c.id, &mask, commName, 1, nRanks, rank, logLine);
  } else {
    rc = static_cast<ncclProfiler_v4_t*>(c.profiler)
             ->init(&c.profilerCtx, &mask, commName, c.id, 1, nRanks, rank, logLine);
  }
  say("profiler %s: ncclProfiler_v%d init %d, mask 0x%x", from, c.profilerAbi, rc, mask);
  if (rc != 0) c.profiler = nullptr;
}

void close(void* lib) {
  if (lib != nullptr) dlclose(lib);
}

}  // namespace

FAKE_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = kVersion;
  return ncclSuccess;
}

/// ncclCommInitRank's plugin work for `rank` of `nRanks` (one node), communicator `commName`
/// with id `commId`. Returns the communicator for fakeNcclCommDestroy.
FAKE_EXPORT void* fakeNcclCommInit(const char* commName, uint64_t commId, int rank, int nRanks) {
  initEnv();
  auto* c = new Comm();
  c->id = commId;
  initNet(*c);
  initTuner(*c, nRanks);
  initProfiler(*c, commName, rank, nRanks);
  return c;
}

/// ncclCommDestroy's: finalize the profiler, the tuner, then the net plugin, each dlclosed.
FAKE_EXPORT void fakeNcclCommDestroy(void* comm) {
  auto* c = static_cast<Comm*>(comm);
  if (c == nullptr) return;
  if (c->profiler != nullptr && c->profilerAbi >= 5) {
    static_cast<ncclProfiler_v5_t*>(c->profiler)->finalize(c->profilerCtx);
  } else if (c->profiler != nullptr) {
    static_cast<ncclProfiler_v4_t*>(c->profiler)->finalize(c->profilerCtx);
  }
  close(c->profilerLib);
  if (c->tuner != nullptr && c->tunerAbi >= 5) {
    static_cast<ncclTuner_v5_t*>(c->tuner)->finalize(c->tunerCtx);
  } else if (c->tuner != nullptr) {
    static_cast<ncclTuner_v4_t*>(c->tuner)->destroy(c->tunerCtx);
  }
  close(c->tunerLib);
  if (c->net != nullptr && c->netAbi >= 11 && c->netCtx != nullptr) {
    static_cast<nethost::NetPerComm*>(c->net)->finalize(c->netCtx);
  }
  close(c->netLib);
  delete c;
}
