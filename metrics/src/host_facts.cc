#include "host_facts.h"

#include <dlfcn.h>
#include <unistd.h>

namespace pilot::metrics::detail {

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "unknown";
  return printableName(name);
}

std::string currentGpu() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (driver == nullptr) return "unknown";
  // CUresult cuCtxGetDevice(CUdevice* device): CUdevice is an int, CUDA_SUCCESS is 0.
  using CtxGetDevice = int (*)(int*);
  auto getDevice = reinterpret_cast<CtxGetDevice>(dlsym(driver, "cuCtxGetDevice"));
  int device = -1;
  const bool ok = getDevice != nullptr && getDevice(&device) == 0 && device >= 0;
  dlclose(driver);
  return ok ? "GPU" + std::to_string(device) : "unknown";
}

std::string printableName(const char* name) {
  std::string out;
  if (name == nullptr) return out;
  for (const char* c = name; *c != '\0' && out.size() < 128; ++c) {
    const unsigned char u = static_cast<unsigned char>(*c);
    out += (u >= 0x20 && u < 0x7f) ? *c : '?';
  }
  return out;
}

}  // namespace pilot::metrics::detail
