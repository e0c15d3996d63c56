#include "cli/plugin_loader.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "pilot/core/text.h"

namespace pilot::cli {
namespace {

using text::endsWith;

std::vector<int> presentSymbols(const PluginLibrary& lib, const char* prefix, int lo, int hi) {
  std::vector<int> out;
  for (int v = lo; v <= hi; ++v) {
    if (lib.symbol(prefix + std::to_string(v)) != nullptr) out.push_back(v);
  }
  return out;
}

}  // namespace

std::vector<std::string> ncclPluginFileNames(const std::string& name, const std::string& prefix) {
  if (name.empty()) return {prefix + ".so"};
  std::vector<std::string> files{name};
  const bool isFileName = name.rfind("lib", 0) == 0 && endsWith(name, ".so");
  if (name.find('/') == std::string::npos && !isFileName)
    files.push_back(prefix + "-" + name + ".so");
  return files;
}

std::string loadedLibraryPath(void* handle, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr ||
      map->l_name[0] == '\0') {
    return fallback;
  }
  char resolved[PATH_MAX];
  return ::realpath(map->l_name, resolved) != nullptr ? resolved : map->l_name;
}

Expected<PluginLibrary> PluginLibrary::open(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Error{"plugin library " + path +
                 " not found (build the nccl_tuner_pilot target, or pass --plugin PATH)"};
  }
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Error{"cannot load plugin library: " + std::string(why ? why : path)};
  }
  return PluginLibrary(handle, path);
}

void* PluginLibrary::symbol(const std::string& name) const {
  if (handle_ == nullptr) return nullptr;
  return dlsym(handle_, name.c_str());
}

std::vector<int> PluginLibrary::tunerAbis() const {
  return presentSymbols(*this, "ncclTunerPlugin_v", kTunerAbiMin, kTunerAbiMax);
}

std::vector<int> PluginLibrary::netAbis() const {
  return presentSymbols(*this, "ncclNetPlugin_v", kNetAbiMin, kNetAbiMax);
}

std::vector<int> PluginLibrary::profilerAbis() const {
  return presentSymbols(*this, "ncclProfiler_v", kProfilerAbiMin, kProfilerAbiMax);
}

std::string defaultPluginPath() {
  char buffer[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  std::string dir = ".";
  if (n > 0) {
    std::string exe(buffer, static_cast<size_t>(n));
    size_t slash = exe.rfind('/');
    if (slash != std::string::npos) dir = exe.substr(0, slash);
  }
  std::string path = dir + "/../lib/libnccl-tuner-pilot.so";
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) != nullptr) path = resolved;  // tidier in messages
  return path;
}

}  // namespace pilot::cli
