// Finds and dlopens a net plugin the way NCCL does (research/net.md §1.1, §1.5): a comma list
// of names (NCCL_NET_PLUGIN's syntax), each tried as given (a path, or a soname searched on
// LD_LIBRARY_PATH) and then as libnccl-net-<name>.so; RTLD_NOW | RTLD_LOCAL; the newest
// ncclNetPlugin_v12 .. _v6 symbol wins.
#pragma once

#include <string>
#include <vector>

#include "pilot/core/result.h"

namespace pilot::cli {

/// Never unloaded: a plugin may leave threads or state behind, and the tool exits soon.
struct NetPluginLibrary {
  std::string requested;  ///< the name that loaded
  std::string path;       ///< the file the dynamic loader opened
  std::vector<int> abis;  ///< exported ncclNetPlugin_vN, ascending
  void* handle = nullptr;

  int newestAbi() const { return abis.empty() ? 0 : abis.back(); }
  /// The ncclNetPlugin_v<abi> struct, or nullptr.
  void* symbol(int abi) const;
};

/// `spec` empty: NCCL_NET_PLUGIN, else libnccl-net.so (NCCL's default). Fails with what each
/// name tried gave, or when no candidate exports a net ABI netbench knows.
Expected<NetPluginLibrary> loadNetPlugin(const std::string& spec);

}  // namespace pilot::cli
