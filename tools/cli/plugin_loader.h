// dlopen wrapper for the built plugin library. The CLI loads the real .so the way NCCL does
// (RTLD_NOW | RTLD_LOCAL) instead of linking plugin/, so what it reports is what NCCL gets.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "pilot/core/result.h"

namespace pilot::cli {

/// Never unloaded: the plugin keeps one process-wide tuner runtime that it deliberately never
/// frees, and dlclose would strand it (LeakSanitizer reports it). The tool exits soon anyway.
class PluginLibrary {
 public:
  /// Fails with dlerror()'s text, or says so when the file does not exist.
  static Expected<PluginLibrary> open(const std::string& path);

  /// The exported symbol's address, or nullptr when the library does not export it.
  void* symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

  /// Which ncclTunerPlugin_v2.._v7 / ncclNetPlugin_v6.._v12 symbols exist, ascending.
  std::vector<int> tunerAbis() const;
  std::vector<int> netAbis() const;
  std::vector<int> profilerAbis() const;

 private:
  PluginLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_ = nullptr;
  std::string path_;
};

/// <directory of this executable>/../lib/libnccl-tuner-pilot.so: the build tree and an
/// installed prefix both lay the two out that way.
std::string defaultPluginPath();

/// The files NCCL's plugin_open.cc tries for one name of NCCL_NET_PLUGIN (prefix "libnccl-net"),
/// NCCL_TUNER_PLUGIN ("libnccl-tuner") or NCCL_PROFILER_PLUGIN ("libnccl-profiler"): the name
/// as given, then PREFIX-NAME.so unless the name has a '/' or already is a "lib*.so" file name;
/// an empty name means PREFIX.so.
std::vector<std::string> ncclPluginFileNames(const std::string& name, const std::string& prefix);

/// The file the dynamic loader opened for `handle` (symlinks resolved), else `fallback`.
std::string loadedLibraryPath(void* handle, const std::string& fallback);

constexpr int kTunerAbiMin = 2, kTunerAbiMax = 7;
constexpr int kNetAbiMin = 6, kNetAbiMax = 12;
constexpr int kProfilerAbiMin = 1, kProfilerAbiMax = 6;

}  // namespace pilot::cli
