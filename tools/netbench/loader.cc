#include "netbench/loader.h"

#include <dlfcn.h>

#include <cstdlib>

#include "cli/plugin_loader.h"
#include "pilot/core/text.h"

namespace pilot::cli {

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
    for (const std::string& file : ncclPluginFileNames(name, "libnccl-net")) {
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
      lib.path = loadedLibraryPath(handle, file);
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
