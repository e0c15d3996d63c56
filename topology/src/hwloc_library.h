// hwloc's entry points as function pointers from a dlopen'ed libhwloc.so.15. <hwloc.h> is
// included for its types only: the plugin must load in images without hwloc, so no hwloc
// symbol may be linked (a ctest checks the archive with nm). hwloc's inline helpers call hwloc
// functions directly, so they are not used either.
#pragma once

#include <hwloc.h>

#include "pilot/core/result.h"
#include "pilot/topology/sources.h"

namespace pilot::topology {

struct HwlocLibrary {
  void* handle = nullptr;
  unsigned apiVersion = 0;  ///< what hwloc_get_api_version() returned
  decltype(&hwloc_topology_init) topologyInit = nullptr;
  decltype(&hwloc_topology_destroy) topologyDestroy = nullptr;
  decltype(&hwloc_topology_set_io_types_filter) setIoTypesFilter = nullptr;
  decltype(&hwloc_topology_set_xmlbuffer) setXmlBuffer = nullptr;
  decltype(&hwloc_topology_set_flags) setFlags = nullptr;
  decltype(&hwloc_topology_load) topologyLoad = nullptr;
  decltype(&hwloc_get_obj_by_depth) getObjByDepth = nullptr;
  decltype(&hwloc_bitmap_first) bitmapFirst = nullptr;
  decltype(&hwloc_bitmap_next) bitmapNext = nullptr;
  decltype(&hwloc_bitmap_last) bitmapLast = nullptr;
  decltype(&hwloc_bitmap_weight) bitmapWeight = nullptr;

  HwlocLibrary() = default;
  HwlocLibrary(const HwlocLibrary&) = delete;
  HwlocLibrary& operator=(const HwlocLibrary&) = delete;
  ~HwlocLibrary();
};

/// The machine as hwloc sees it: live, or from options.hwlocXml (hwloc_detect.cc).
Expected<Machine> detectWithHwloc(const HwlocLibrary& hwloc, const DetectOptions& options);

}  // namespace pilot::topology
