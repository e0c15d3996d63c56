#include "doctor/probes.h"

#include <dlfcn.h>
#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "cli/nccl_versions.h"
#include "cli/plugin_loader.h"
#include "pilot/core/file.h"
#include "pilot/core/text.h"
#include "pilot/doctor/fingerprint.h"
#include "pilot/version.h"

namespace pilot::cli {
namespace {

std::string realPath(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? resolved : "";
}

std::string dirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::vector<std::string> globbed(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  return out;
}

/// A wheel's version from the dist-info folder beside nvidia/: .../site-packages/
/// nvidia_nccl_cu12-2.21.5.dist-info for .../site-packages/nvidia/nccl/lib/libnccl.so.2.
std::pair<std::string, std::string> wheelOf(const std::string& library) {
  const std::string marker = "/nvidia/nccl/lib/";
  size_t at = library.find(marker);
  if (at == std::string::npos) return {"", ""};
  for (const std::string& info : globbed(library.substr(0, at) + "/nvidia_nccl_cu*-*.dist-info")) {
    std::string name = info.substr(info.rfind('/') + 1);
    size_t dash = name.find('-');
    std::string wheel = name.substr(0, dash);
    std::replace(wheel.begin(), wheel.end(), '_', '-');
    std::string version =
        name.substr(dash + 1, name.size() - dash - 1 - std::string(".dist-info").size());
    return {wheel, version};
  }
  return {"nvidia-nccl", ""};
}

/// "libnccl.so.2.28.9" -> "2.28.9".
std::string versionFromFileName(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') + 1);
  const std::string prefix = "libnccl.so.";
  if (base.rfind(prefix, 0) != 0) return "";
  std::string rest = base.substr(prefix.size());
  return std::count(rest.begin(), rest.end(), '.') >= 2 ? rest : "";
}

/// Copies of libnccl.so.2 a job might load instead: LD_LIBRARY_PATH, the usual library folders,
/// and the NCCL wheels of Python environments (PyTorch loads its wheel's copy by RPATH).
std::vector<std::string> candidateCopies(const doctor::Environment& env) {
  std::vector<std::string> dirs;
  auto it = env.vars.find("LD_LIBRARY_PATH");
  if (it != env.vars.end()) {
    for (std::string_view d : text::split(it->second, ':')) {
      if (!d.empty()) dirs.emplace_back(d);
    }
  }
  for (const char* d : {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
                        "/usr/lib", "/usr/local/lib", "/usr/local/cuda/lib64", "/opt/nccl/lib"})
    dirs.emplace_back(d);
  std::vector<std::string> files;
  for (const std::string& d : dirs) files.push_back(d + "/libnccl.so.2");
  std::vector<std::string> pythons = {"/usr/lib/python3*/*-packages",
                                      "/usr/local/lib/python3*/*-packages"};
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX", "HOME"}) {
    auto v = env.vars.find(var);
    if (v == env.vars.end() || v->second.empty()) continue;
    const std::string base = std::string(var) == "HOME" ? v->second + "/.local" : v->second;
    pythons.push_back(base + "/lib/python3*/site-packages");
    if (std::string(var) == "CONDA_PREFIX") files.push_back(v->second + "/lib/libnccl.so.2");
  }
  for (const std::string& p : pythons) {
    for (const std::string& sp : globbed(p)) files.push_back(sp + "/nvidia/nccl/lib/libnccl.so.2");
  }
  return files;
}

using GetVersion = int (*)(int*);

doctor::PluginResolution resolvePlugin(const char* variable, const char* prefix,
                                       const doctor::Environment& env,
                                       const doctor::PluginResolution* net, int ncclMinor) {
  doctor::PluginResolution r;
  r.variable = variable;
  auto it = env.vars.find(variable);
  if (it != env.vars.end()) r.value = it->second;
  const std::string value(text::trim(r.value.value_or("")));
  if (r.value && text::equalsIgnoreCase(value, "none")) {
    r.disabled = true;
    return r;
  }
  std::vector<std::string> names;
  for (std::string_view token : text::split(value, ',')) names.emplace_back(text::trim(token));
  if (names.empty()) names.emplace_back("");
  std::string errors;
  void* handle = nullptr;
  for (const std::string& name : names) {
    for (const std::string& file : ncclPluginFileNames(name, prefix)) {
      r.tried.push_back(file);
      dlerror();
      handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed: see PluginLibrary
      if (handle != nullptr) {
        r.path = loadedLibraryPath(handle, file);
        break;
      }
      const char* why = dlerror();
      errors += (errors.empty() ? "" : "; ") + std::string(why ? why : file);
    }
    if (handle != nullptr) break;
  }
  // Tuner and profiler: NCCL falls back to the net plugin's library.
  if (handle == nullptr && net != nullptr && !net->path.empty()) {
    r.tried.push_back(net->path + " (the net plugin's library)");
    handle = dlopen(net->path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) r.path = net->path;
  }
  if (handle == nullptr) {
    r.error = errors;
    return r;
  }
  auto present = [&](const char* symbol, int lo, int hi) {
    std::vector<int> out;
    for (int v = lo; v <= hi; ++v) {
      if (dlsym(handle, (symbol + std::to_string(v)).c_str()) != nullptr) out.push_back(v);
    }
    return out;
  };
  r.netAbis = present("ncclNetPlugin_v", 1, 20);
  r.tunerAbis = present("ncclTunerPlugin_v", 1, 20);
  r.profilerAbis = present("ncclProfiler_v", 1, 20);
  if (!r.netAbis.empty()) {
    // Every ncclNetPlugin_vN struct starts with `const char* name`.
    auto* plugin = static_cast<const char* const*>(
        dlsym(handle, ("ncclNetPlugin_v" + std::to_string(r.netAbis.back())).c_str()));
    if (plugin != nullptr && *plugin != nullptr) r.name = std::string(*plugin).substr(0, 64);
  }
  // Which version NCCL takes, from the served-releases table (nccl-pilot version's).
  r.abiTaken = -1;
  if (ncclMinor > 0) {
    for (const NcclRelease& rel : servedReleases()) {
      if (ncclMinor < rel.firstMinor || ncclMinor > rel.lastMinor) continue;
      if (std::string(prefix) == "libnccl-net")
        r.abiTaken = newestWithin(r.netAbis, rel.netMin, rel.netMax);
      if (std::string(prefix) == "libnccl-tuner")
        r.abiTaken = newestWithin(r.tunerAbis, rel.tunerMin, rel.tunerMax);
    }
  }
  std::string content;
  if (readFileUpTo(r.path, 256u << 20, &content) == ReadOutcome::Ok)
    r.digest = doctor::contentDigest(content);
  return r;
}

}  // namespace

std::string ncclVersionText(int code) {
  if (code <= 0) return "";
  // NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

doctor::NcclFacts probeNccl(const doctor::Environment& env) {
  doctor::NcclFacts facts;
  facts.toolVersion = std::string("nccl-pilot ") + pilot::kVersion;
  dlerror();
  void* nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);  // never closed: the tool exits
  int minor = 0;
  if (nccl == nullptr) {
    const char* why = dlerror();
    facts.loadError = why ? why : "libnccl.so.2 cannot be loaded";
  } else {
    doctor::NcclCopy copy;
    copy.path = loadedLibraryPath(nccl, "libnccl.so.2");
    copy.how = "dlopen(libnccl.so.2) and ncclGetVersion";
    auto getVersion = reinterpret_cast<GetVersion>(dlsym(nccl, "ncclGetVersion"));
    int code = 0;
    if (getVersion != nullptr && getVersion(&code) == 0) copy.version = ncclVersionText(code);
    if (auto v = parseNcclVersion(copy.version); v.ok()) minor = v->minor;
    facts.loaded = copy;
  }
  std::vector<std::string> seen;
  if (facts.loaded) seen.push_back(facts.loaded->path);
  for (const std::string& candidate : candidateCopies(env)) {
    const std::string real = realPath(candidate);
    if (real.empty() || std::find(seen.begin(), seen.end(), real) != seen.end()) continue;
    seen.push_back(real);
    doctor::NcclCopy copy;
    copy.path = real;
    auto [wheel, version] = wheelOf(candidate);
    if (!wheel.empty()) {
      copy.how = "Python wheel " + wheel;
      copy.version = version;
    } else {
      copy.how = "in " + dirOf(candidate);
      copy.version = versionFromFileName(real);
    }
    facts.others.push_back(std::move(copy));
  }
  facts.plugins.push_back(resolvePlugin("NCCL_NET_PLUGIN", "libnccl-net", env, nullptr, minor));
  const doctor::PluginResolution net = facts.plugins.front();
  facts.plugins.push_back(resolvePlugin("NCCL_TUNER_PLUGIN", "libnccl-tuner", env, &net, minor));
  facts.plugins.push_back(
      resolvePlugin("NCCL_PROFILER_PLUGIN", "libnccl-profiler", env, &net, minor));
  return facts;
}

namespace {

/// CUDA driver entry points, dlopen'ed once (a machine without a GPU driver has none).
struct CudaDriver {
  using Init = int (*)(unsigned);
  using ByBusId = int (*)(int*, const char*);
  using Attribute = int (*)(int*, int, int);
  Init init = nullptr;
  ByBusId byBusId = nullptr;
  Attribute attribute = nullptr;
  bool ready = false;
};

std::shared_ptr<CudaDriver> loadCuda() {
  auto cuda = std::make_shared<CudaDriver>();
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return cuda;
  cuda->init = reinterpret_cast<CudaDriver::Init>(dlsym(lib, "cuInit"));
  cuda->byBusId = reinterpret_cast<CudaDriver::ByBusId>(dlsym(lib, "cuDeviceGetByPCIBusId"));
  cuda->attribute = reinterpret_cast<CudaDriver::Attribute>(dlsym(lib, "cuDeviceGetAttribute"));
  cuda->ready = cuda->init && cuda->byBusId && cuda->attribute && cuda->init(0) == 0;
  return cuda;
}

constexpr int kDmaBufSupported = 124;  // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED

}  // namespace

doctor::Probes liveProbes(bool recorded) {
  doctor::Probes probes;
  probes.fileReadable = [](const std::string& path) { return ::access(path.c_str(), R_OK) == 0; };
  if (recorded) return probes;
  probes.nccl = probeNccl;
  auto cuda = std::make_shared<std::shared_ptr<CudaDriver>>();
  auto once = std::make_shared<std::once_flag>();
  probes.dmaBufSupported = [cuda, once](const topology::BusId& bus) -> std::optional<bool> {
    std::call_once(*once, [&] { *cuda = loadCuda(); });
    if (!(*cuda)->ready) return std::nullopt;
    int device = 0, value = 0;
    if ((*cuda)->byBusId(&device, bus.str().c_str()) != 0) return std::nullopt;
    if ((*cuda)->attribute(&value, kDmaBufSupported, device) != 0) return std::nullopt;
    return value != 0;
  };
  return probes;
}

}  // namespace pilot::cli
