#include "netbench/loader.h"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdlib>

#include "cli/plugin_loader.h"
#include "pilot/core/text.h"

namespace pilot::cli {
namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// NCCL's plugin_open.cc: the prefixed name is only tried for a bare name that is not already
// a "lib*.so" file name.
std::vector<std::string> candidateFiles(const std::string& name) {
  std::vector<std::string> files{name};
  const bool isFileName = name.rfind("lib", 0) == 0 && endsWith(name, ".so");
  if (name.find('/') == std::string::npos && !isFileName) {
    files.push_back("libnccl-net-" + name + ".so");
  }
  return files;
}

std::string loadedPath(void* handle, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr ||
      map->l_name[0] == '\0') {
    return fallback;
  }
  char resolved[PATH_MAX];
  return ::realpath(map->l_name, resolved) != nullptr ? resolved : map->l_name;
}

}  // namespace

void* NetPluginLibrary::symbol(int abi) const {
  if (handle == nullptr) return nullptr;
  return dlsym(handle, ("ncclNetPlugin_v" + std::to_string(abi)).c_str());
}

Expected<NetPluginLibrary> loadNetPlugin(const std::string& spec) {
  std::string list = spec;
  if (list.empty()) {
    const char* env = std::getenv("NCCL_NET_PLUGIN");
    list = env != nullptr && *env != '\0' ? env : "libnccl-net.so";
  }
  std::string tried;
  for (std::string_view token : text::split(list, ',')) {
    const std::string name(text::trim(token));
    if (name.empty() || text::equalsIgnoreCase(name, "none")) continue;
    for (const std::string& file : candidateFiles(name)) {
      dlerror();
      void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        const char* why = dlerror();
        tried += (tried.empty() ? "" : "; ") + std::string(why ? why : file + ": cannot be loaded");
        continue;
      }
      NetPluginLibrary lib;
      lib.requested = name;
      lib.handle = handle;
      lib.path = loadedPath(handle, file);
      for (int v = kNetAbiMin; v <= kNetAbiMax; ++v) {
        if (lib.symbol(v) != nullptr) lib.abis.push_back(v);
      }
      if (!lib.abis.empty()) return lib;
      // NCCL moves on to the next name when a library has no net symbol it knows.
      tried += (tried.empty() ? "" : "; ") + lib.path + " exports no ncclNetPlugin_v" +
               std::to_string(kNetAbiMin) + "..v" + std::to_string(kNetAbiMax);
    }
  }
  if (tried.empty()) return Error{"no net plugin to load ('" + list + "' names none)"};
  return Error{"cannot load a net plugin from '" + list + "' (" + tried + ")"};
}

}  // namespace pilot::cli
