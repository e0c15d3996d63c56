// Loads libhwloc.so.15 (the soname of every hwloc 2.x) with dlopen and checks that its API
// major version is the one our headers describe: object layouts differ between majors.
#include "hwloc_library.h"

#include <dlfcn.h>

#include <cstdio>

namespace pilot::topology {
namespace {

constexpr const char* kHwlocSoname = "libhwloc.so.15";

template <typename Fn>
bool bind(void* handle, const char* name, Fn& out, std::string& missing) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (out == nullptr) missing += missing.empty() ? name : std::string(", ") + name;
  return out != nullptr;
}

std::string versionText(unsigned v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
  return buffer;
}

}  // namespace

HwlocLibrary::~HwlocLibrary() {
  if (handle != nullptr) dlclose(handle);
}

std::shared_ptr<const HwlocLibrary> loadHwlocDynamic(std::string* whyNot) {
  auto fail = [whyNot](std::string why) -> std::shared_ptr<const HwlocLibrary> {
    if (whyNot != nullptr) *whyNot = std::move(why);
    return nullptr;
  };
  try {
    void* handle = dlopen(kHwlocSoname, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      return fail(std::string("cannot load ") + kHwlocSoname + ": " + (err ? err : "not found"));
    }
    auto lib = std::make_shared<HwlocLibrary>();
    lib->handle = handle;
    decltype(&hwloc_get_api_version) getApiVersion = nullptr;
    std::string missing;
    bind(handle, "hwloc_get_api_version", getApiVersion, missing);
    bind(handle, "hwloc_topology_init", lib->topologyInit, missing);
    bind(handle, "hwloc_topology_destroy", lib->topologyDestroy, missing);
    bind(handle, "hwloc_topology_set_io_types_filter", lib->setIoTypesFilter, missing);
    bind(handle, "hwloc_topology_set_xmlbuffer", lib->setXmlBuffer, missing);
    bind(handle, "hwloc_topology_set_flags", lib->setFlags, missing);
    bind(handle, "hwloc_topology_load", lib->topologyLoad, missing);
    bind(handle, "hwloc_get_obj_by_depth", lib->getObjByDepth, missing);
    bind(handle, "hwloc_bitmap_first", lib->bitmapFirst, missing);
    bind(handle, "hwloc_bitmap_next", lib->bitmapNext, missing);
    bind(handle, "hwloc_bitmap_last", lib->bitmapLast, missing);
    bind(handle, "hwloc_bitmap_weight", lib->bitmapWeight, missing);
    if (!missing.empty()) return fail(std::string(kHwlocSoname) + " lacks " + missing);
    lib->apiVersion = getApiVersion();
    if ((lib->apiVersion >> 16) != (HWLOC_API_VERSION >> 16)) {
      return fail(std::string(kHwlocSoname) + " has API " + versionText(lib->apiVersion) +
                  ", but this build needs " + versionText(HWLOC_API_VERSION & 0xff0000) +
                  " or newer 2.x");
    }
    return lib;
  } catch (...) {
    return fail("cannot load hwloc: out of memory");
  }
}

}  // namespace pilot::topology
