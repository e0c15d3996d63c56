// Does userspace libibverbs see the RDMA devices the kernel shows? In containers the kernel
// device is often there while the provider library (libmlx5) or /dev/infiniband is not, and
// NCCL then silently falls back to sockets. libibverbs is dlopen'ed (the plugin must load
// without it) and never dlclose'd, like NCCL does: its providers do not expect to be unloaded.
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "pilot/topology/sources.h"

namespace pilot::topology {
namespace {

struct VerbsDevice;  // struct ibv_device, used only through pointers
using GetDeviceList = VerbsDevice** (*)(int*);
using GetDeviceName = const char* (*)(VerbsDevice*);
using FreeDeviceList = void (*)(VerbsDevice**);

std::vector<std::string> rdmaNames(const Machine& machine) {
  std::vector<std::string> names;
  for (const Nic& nic : machine.nics) {
    if (nic.rdma) names.push_back(nic.name);
  }
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

void checkVerbsVisibility(Machine& machine, const std::vector<std::string>& verbsDevices) {
  try {
    for (const std::string& name : rdmaNames(machine)) {
      if (std::find(verbsDevices.begin(), verbsDevices.end(), name) != verbsDevices.end()) continue;
      machine.notes.push_back("RDMA device " + name +
                              " is in sysfs but libibverbs does not list it (no userspace "
                              "provider or /dev/infiniband in this image?); NCCL cannot use it "
                              "for IB/RoCE");
    }
  } catch (...) {
    // Out of memory while adding a note: the check is advisory, drop it.
  }
}

void checkVerbsVisibility(Machine& machine, std::string* whyNot) {
  try {
    auto why = [whyNot](std::string text) {
      if (whyNot != nullptr) *whyNot = std::move(text);
    };
    std::vector<std::string> kernelDevices = rdmaNames(machine);
    void* handle = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      why(std::string("cannot load libibverbs.so.1: ") + (err ? err : "not found"));
      if (!kernelDevices.empty()) {
        machine.notes.push_back(
            "libibverbs.so.1 is missing, so NCCL cannot use the RDMA devices "
            "the kernel shows (" +
            joined(kernelDevices) + ")");
      }
      return;
    }
    auto getList = reinterpret_cast<GetDeviceList>(dlsym(handle, "ibv_get_device_list"));
    auto getName = reinterpret_cast<GetDeviceName>(dlsym(handle, "ibv_get_device_name"));
    auto freeList = reinterpret_cast<FreeDeviceList>(dlsym(handle, "ibv_free_device_list"));
    if (!getList || !getName || !freeList) {
      why("libibverbs.so.1 lacks ibv_get_device_list/ibv_get_device_name/ibv_free_device_list");
      return;
    }
    int count = 0;
    errno = 0;
    VerbsDevice** list = getList(&count);
    std::vector<std::string> verbsDevices;
    if (list == nullptr) {
      why(std::string("ibv_get_device_list failed: ") + std::strerror(errno));
    } else {
      for (int i = 0; i < count && list[i] != nullptr; ++i) {
        const char* name = getName(list[i]);
        if (name != nullptr) verbsDevices.emplace_back(name);
      }
      freeList(list);
    }
    checkVerbsVisibility(machine, verbsDevices);
  } catch (...) {
    if (whyNot != nullptr) *whyNot = "verbs check failed: out of memory";
  }
}

}  // namespace pilot::topology
