// GPU facts only NVML knows: compute capability, product name, NVLink peers. NVML is dlopen'ed
// (libnvidia-ml.so.1 comes with the driver, not with CUDA images) and never dlclose'd: NCCL keeps
// it loaded too, and unloading a library that may have started threads is not safe.
#include <dlfcn.h>

#include <cstring>
#include <map>

#include "nvml_api.h"

namespace pilot::topology {
namespace detail {
namespace {

constexpr unsigned kMaxNvlinks = 18;  // NVML_NVLINK_MAX_LINKS (Hopper and Blackwell have 18)
constexpr unsigned kNameLength = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr int kFeatureEnabled = 1;

std::string boundedString(const char* buffer, size_t size) {
  return std::string(buffer, strnlen(buffer, size));
}

class NvmlSource final : public GpuInfoSource {
 public:
  explicit NvmlSource(const NvmlApi& api) : api_(api) {}
  ~NvmlSource() override {
    if (api_.shutdown != nullptr) api_.shutdown();
  }

  void enrich(Machine& machine) const override {
    try {
      for (Gpu& gpu : machine.gpus) enrichGpu(machine, gpu);
    } catch (...) {
      machine.notes.push_back("NVML enrichment stopped: out of memory");
    }
  }

 private:
  void enrichGpu(Machine& machine, Gpu& gpu) const {
    if (gpu.pci < 0 || static_cast<size_t>(gpu.pci) >= machine.pci.size()) return;
    const std::optional<BusId>& busId = machine.pci[gpu.pci].busId;
    if (!busId) return;
    NvmlDevice* device = nullptr;
    NvmlReturn rc = api_.deviceByBusId(busId->str().c_str(), &device);
    if (rc != 0 || device == nullptr) {
      machine.notes.push_back("NVML does not know GPU " + busId->str() + " (NVML error " +
                              std::to_string(rc) + "); sm and NVLinks unknown");
      return;
    }
    int major = 0, minor = 0;
    if (api_.computeCapability(device, &major, &minor) == 0 && major > 0 && major < 100 &&
        minor >= 0 && minor < 10)
      gpu.sm = major * 10 + minor;
    char name[kNameLength] = {};
    if (api_.name(device, name, kNameLength) == 0) gpu.name = boundedString(name, kNameLength);
    if (api_.nvlinkState != nullptr && api_.nvlinkRemotePci != nullptr)
      readNvlinks(machine, *busId, device, gpu);
  }

  void readNvlinks(Machine& machine, const BusId& self, NvmlDevice* device, Gpu& gpu) const {
    std::map<BusId, int> peers;
    int unnamed = 0;
    for (unsigned link = 0; link < kMaxNvlinks; ++link) {
      int state = 0;
      // Links past this GPU's count, and GPUs without NVLink, answer with an error.
      if (api_.nvlinkState(device, link, &state) != 0 || state != kFeatureEnabled) continue;
      NvmlPciInfo remote;
      std::memset(&remote, 0, sizeof remote);
      std::optional<BusId> peer;
      if (api_.nvlinkRemotePci(device, link, &remote) == 0) {
        peer = BusId::parse(boundedString(remote.busId, sizeof remote.busId));
        if (!peer)
          peer = BusId::parse(boundedString(remote.busIdLegacy, sizeof remote.busIdLegacy));
      }
      if (peer) {
        ++peers[*peer];
      } else {
        ++unnamed;
      }
    }
    gpu.nvlinks.assign(peers.begin(), peers.end());
    if (unnamed > 0) {
      // NCCL assumes an NVSwitch for such links; a VM usually hides the switches.
      machine.notes.push_back("GPU " + self.str() + ": " + std::to_string(unnamed) +
                              " active NVLinks lead to a peer NVML cannot name (hidden NVSwitch?)");
    }
  }

  NvmlApi api_;
};

template <typename Fn>
void bind(void* handle, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
}

}  // namespace

std::unique_ptr<GpuInfoSource> makeNvmlSource(const NvmlApi& api) {
  return std::make_unique<NvmlSource>(api);
}

}  // namespace detail

std::unique_ptr<GpuInfoSource> loadNvml(std::string* whyNot) {
  auto fail = [whyNot](std::string why) -> std::unique_ptr<GpuInfoSource> {
    if (whyNot != nullptr) *whyNot = std::move(why);
    return nullptr;
  };
  try {
    void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      return fail(std::string("cannot load libnvidia-ml.so.1: ") + (err ? err : "not found"));
    }
    detail::NvmlApi api;
    detail::bind(handle, "nvmlInit_v2", api.init);
    detail::bind(handle, "nvmlShutdown", api.shutdown);
    detail::bind(handle, "nvmlDeviceGetHandleByPciBusId_v2", api.deviceByBusId);
    detail::bind(handle, "nvmlDeviceGetCudaComputeCapability", api.computeCapability);
    detail::bind(handle, "nvmlDeviceGetName", api.name);
    detail::bind(handle, "nvmlDeviceGetNvLinkState", api.nvlinkState);
    detail::bind(handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", api.nvlinkRemotePci);
    if (!api.init || !api.shutdown || !api.deviceByBusId || !api.computeCapability || !api.name)
      return fail("libnvidia-ml.so.1 lacks the entry points we need (driver too old?)");
    detail::NvmlReturn rc = api.init();
    if (rc != 0) return fail("nvmlInit_v2 failed with NVML error " + std::to_string(rc));
    return detail::makeNvmlSource(api);
  } catch (...) {
    return fail("cannot load NVML: out of memory");
  }
}

}  // namespace pilot::topology
