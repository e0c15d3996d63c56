// NVML enrichment through an in-process NVML (the same enrich code as with the real library),
// and the libibverbs cross-check.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "nvml_api.h"
#include "pilot/topology/sources.h"
#include "test_support.h"

namespace pilot::topology {
namespace {

using detail::NvmlDevice;
using detail::NvmlPciInfo;
using detail::NvmlReturn;

// A two-GPU NVML: GPU A has 2 links to B and 1 link whose peer NVML cannot name; B's links
// answer "not supported". A third GPU is unknown to NVML.
struct FakeGpu {
  int major, minor;
  const char* name;
  std::vector<const char*> linkPeers;  // nullptr = unnamed peer
};
std::map<std::string, FakeGpu>& fakeGpus() {
  static std::map<std::string, FakeGpu> gpus = {
      {"0000:18:00.0",
       {9, 0, "NVIDIA H100 80GB HBM3", {"00000000:9A:00.0", "00000000:9A:00.0", nullptr}}},
      {"0000:9a:00.0", {8, 6, "NVIDIA A40", {}}},
  };
  return gpus;
}
int shutdownCalls = 0;

FakeGpu* gpuOf(NvmlDevice* device) {
  return reinterpret_cast<FakeGpu*>(device);
}

NvmlReturn fakeInit() {
  return 0;
}
NvmlReturn fakeShutdown() {
  ++shutdownCalls;
  return 0;
}
NvmlReturn fakeByBusId(const char* busId, NvmlDevice** device) {
  auto it = fakeGpus().find(busId);
  if (it == fakeGpus().end()) return 6;  // NVML_ERROR_NOT_FOUND
  *device = reinterpret_cast<NvmlDevice*>(&it->second);
  return 0;
}
NvmlReturn fakeCapability(NvmlDevice* device, int* major, int* minor) {
  *major = gpuOf(device)->major;
  *minor = gpuOf(device)->minor;
  return 0;
}
NvmlReturn fakeName(NvmlDevice* device, char* name, unsigned length) {
  std::strncpy(name, gpuOf(device)->name, length - 1);
  return 0;
}
NvmlReturn fakeLinkState(NvmlDevice* device, unsigned link, int* state) {
  if (link >= gpuOf(device)->linkPeers.size()) return 3;  // NVML_ERROR_NOT_SUPPORTED
  *state = 1;
  return 0;
}
NvmlReturn fakeRemote(NvmlDevice* device, unsigned link, NvmlPciInfo* info) {
  const char* peer = gpuOf(device)->linkPeers.at(link);
  if (peer == nullptr) return 0;  // success with an empty bus id: unnamed
  std::strncpy(info->busId, peer, sizeof info->busId - 1);
  return 0;
}

detail::NvmlApi fakeApi() {
  detail::NvmlApi api;
  api.init = fakeInit;
  api.shutdown = fakeShutdown;
  api.deviceByBusId = fakeByBusId;
  api.computeCapability = fakeCapability;
  api.name = fakeName;
  api.nvlinkState = fakeLinkState;
  api.nvlinkRemotePci = fakeRemote;
  return api;
}

Machine baremetal() {
  Expected<Machine> m = detectFromSysfs(SysfsRoot(testing::dataRoot("baremetal-2gpu-2nic-switch")));
  EXPECT_TRUE(m.ok()) << m.error();
  return m.ok() ? m.value() : Machine{};
}

TEST(NvmlLayout, MatchesNvmlPciInfoT) {
  // busIdLegacy[16], five unsigned ints, busId[32]: 68 bytes, busId at offset 36.
  EXPECT_EQ(sizeof(NvmlPciInfo), 68u);
  EXPECT_EQ(offsetof(NvmlPciInfo, busId), 36u);
}

TEST(Nvml, EnrichSetsSmNameAndNvlinks) {
  Machine m = baremetal();
  ASSERT_EQ(m.gpus.size(), 2u);
  shutdownCalls = 0;
  {
    auto source = detail::makeNvmlSource(fakeApi());
    source->enrich(m);
  }
  EXPECT_EQ(shutdownCalls, 1);
  EXPECT_EQ(m.gpus[0].sm, 90);
  EXPECT_EQ(m.gpus[0].name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(m.gpus[0].nvlinks.size(), 1u);
  EXPECT_EQ(m.gpus[0].nvlinks[0].first.str(), "0000:9a:00.0");
  EXPECT_EQ(m.gpus[0].nvlinks[0].second, 2);
  EXPECT_TRUE(testing::hasNote(m, {"0000:18:00.0", "1 active NVLinks", "cannot name"}))
      << testing::allNotes(m);
  EXPECT_EQ(m.gpus[1].sm, 86);
  EXPECT_TRUE(m.gpus[1].nvlinks.empty());
}

TEST(Nvml, GpuUnknownToNvmlGetsANote) {
  Machine m = baremetal();
  fakeGpus().erase("0000:9a:00.0");
  detail::makeNvmlSource(fakeApi())->enrich(m);
  EXPECT_EQ(m.gpus[1].sm, 0);
  EXPECT_TRUE(testing::hasNote(m, {"NVML does not know GPU 0000:9a:00.0"})) << testing::allNotes(m);
  fakeGpus().emplace("0000:9a:00.0", FakeGpu{8, 6, "NVIDIA A40", {}});
}

TEST(Nvml, WithoutNvlinkEntryPointsSkipsNvlinks) {
  Machine m = baremetal();
  detail::NvmlApi api = fakeApi();
  api.nvlinkState = nullptr;
  detail::makeNvmlSource(api)->enrich(m);
  EXPECT_EQ(m.gpus[0].sm, 90);
  EXPECT_TRUE(m.gpus[0].nvlinks.empty());
}

TEST(Nvml, LoadNvmlSaysWhyWhenAbsent) {
  std::string why;
  auto source = loadNvml(&why);
  if (source) GTEST_SKIP() << "this machine has a working NVML";
  EXPECT_NE(why.find("nvidia-ml"), std::string::npos) << why;
}

TEST(Verbs, DeviceMissingFromVerbsGetsANote) {
  Machine m = baremetal();
  checkVerbsVisibility(m, std::vector<std::string>{"mlx5_0"});
  EXPECT_FALSE(testing::hasNote(m, {"mlx5_0", "libibverbs does not list it"}));
  EXPECT_TRUE(testing::hasNote(m, {"mlx5_1", "libibverbs does not list it"}))
      << testing::allNotes(m);
}

TEST(Verbs, RealLibibverbsOrItsAbsenceIsReported) {
  Machine m = baremetal();
  std::string why;
  checkVerbsVisibility(m, &why);
  // Either libibverbs is missing (a note names the kernel's devices), or it is there and does
  // not list the recorded tree's devices (a note per device).
  EXPECT_TRUE(testing::hasNote(m, {"mlx5_0"}) && testing::hasNote(m, {"mlx5_1"}))
      << why << "\n"
      << testing::allNotes(m);
}

TEST(Verbs, NoRdmaDevicesNoNotes) {
  Expected<Machine> m = detectFromSysfs(SysfsRoot(testing::dataRoot("broken")));
  ASSERT_TRUE(m.ok());
  Machine machine = *m;
  machine.nics.clear();
  size_t before = machine.notes.size();
  std::string why;
  checkVerbsVisibility(machine, &why);
  EXPECT_EQ(machine.notes.size(), before);
}

}  // namespace
}  // namespace pilot::topology
