#include "tuner/process_facts.h"

#include <dlfcn.h>

#include <mutex>
#include <optional>

#include "pilot/core/config.h"
#include "pilot/topology/fabric.h"

namespace pilot::plugin {
namespace {

constexpr const char* kFabricChoices = "auto|ib|roce|ethernet";

struct FabricFact {
  std::optional<Fabric> fabric;
  std::string why;
  std::string warning;
};

// Rank-local input: the ports of this node and this process's environment. Every node of a
// homogeneous job reads the same answer; a node whose ports are down, or a rank launched with
// another NCCL_IB_DISABLE / NCCL_IB_HCA, would match other fabric= rules than its peers. The
// INFO line at init names the port or the reason, so such a node stands out in the logs.
FabricFact readFabric() {
  const EnvLookup env = processEnv();
  FabricFact out;
  auto choice = readChoice(env, setting::kTunerFabric, kFabricChoices, "auto");
  if (choice.ok() && *choice != "auto") {
    out.fabric = parseFabric(*choice);
    out.why = std::string(setting::kTunerFabric) + "=" + *choice;
    return out;
  }
  if (!choice.ok()) out.warning = choice.error() + "; the detected fabric holds";
  const topology::FabricChoice detected = topology::detectFabric(env);
  out.fabric = detected.fabric;
  out.why = detected.why;
  return out;
}

/// ncclResult_t ncclGetVersion(int* version), NCCL's API since 2.3.
using GetVersion = int (*)(int*);

}  // namespace

namespace {

bool ask(void* symbol, const std::string& where, FoundVersion& out) {
  if (symbol == nullptr) return false;
  int code = 0;
  if (reinterpret_cast<GetVersion>(symbol)(&code) != 0 || code <= 0) {
    out.tried += (out.tried.empty() ? "" : ", ") + where + " failed";
    return false;
  }
  out.code = code;
  out.where = where;
  Dl_info info{};
  if (dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) out.path = info.dli_fname;
  return true;
}

/// dlsym in an object that is already loaded (a NOLOAD open takes a reference, given back here).
bool askLoaded(const char* name, FoundVersion& out) {
  void* handle = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  const bool found =
      ask(dlsym(handle, "ncclGetVersion"), std::string("ncclGetVersion in ") + name, out);
  dlclose(handle);
  return found;
}

}  // namespace

// Rank-local input too: the NCCL library this process runs. Alike on every rank of a job built
// from one image; a container with another NCCL would match other nccl= rules (and NCCL itself
// would likely refuse to connect ranks of different versions).
FoundVersion findRunningNccl(const void* caller) {
  FoundVersion out;
  Dl_info info{};
  if (caller != nullptr && dladdr(caller, &info) != 0 && info.dli_fname != nullptr &&
      info.dli_fname[0] != '\0' && askLoaded(info.dli_fname, out)) {
    out.where += " (the caller of init)";
    return out;
  }
  if (ask(dlsym(RTLD_DEFAULT, "ncclGetVersion"), "ncclGetVersion in the global scope", out)) {
    return out;
  }
  for (const char* name : {"libnccl.so.2", "libnccl.so"}) {
    if (askLoaded(name, out)) return out;
  }
  if (out.tried.empty())
    out.tried = "no ncclGetVersion in the caller, the global scope or libnccl.so.2";
  return out;
}

namespace {

/// The fabric is read once per process, so every communicator matches the same one. (The
/// version is asked at each init: cheap, and it is the NCCL calling this init that counts.)
/// Built on first use: no static constructor runs at dlopen.
struct State {
  std::mutex mutex;
  std::optional<FabricFact> fabric;
  bool warned = false;
};
State& state() {
  static State s;
  return s;
}

}  // namespace

tuner::ProcessFacts readProcessFacts(int abiVersion, const void* caller) {
  return readProcessFacts(tuner::ncclVersionsOfTunerAbi(abiVersion),
                          "tuner ABI v" + std::to_string(abiVersion), caller);
}

tuner::ProcessFacts readProcessFacts(const tuner::Range& implied, const std::string& abi,
                                     const void* caller) {
  FabricFact fabric;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.fabric) s.fabric = readFabric();
    fabric = *s.fabric;
  }
  const FoundVersion version = findRunningNccl(caller);
  tuner::ProcessFacts facts;
  facts.fabric = fabric.fabric;
  facts.fabricWhy = fabric.why;
  if (version.code != 0 && implied.contains(static_cast<uint64_t>(version.code))) {
    facts.nccl = tuner::Range::exactly(static_cast<uint64_t>(version.code));
    facts.ncclWhy = version.where;
  } else if (version.code != 0) {
    // Another NCCL than the one driving this ABI (two in one process?): trust the ABI.
    facts.nccl = implied;
    facts.ncclWhy = version.where + " says " +
                    tuner::formatNcclVersion(static_cast<uint64_t>(version.code)) +
                    ", which does not load " + abi + "; taking the releases " + abi + " implies";
  } else {
    facts.nccl = implied;
    facts.ncclWhy = version.tried + "; " + abi + " implies it";
  }
  return facts;
}

std::string takeFabricWarning() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.warned || !s.fabric || s.fabric->warning.empty()) return {};
  s.warned = true;
  return s.fabric->warning;
}

}  // namespace pilot::plugin
