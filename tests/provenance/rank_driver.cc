// One rank process of the provenance job: a framework that loads its NCCL (a fake libnccl.so.2,
// tests/provenance/fake_libnccl.cc) RTLD_LOCAL, as a Python extension module does, and creates
// one communicator with it. --also-map maps a second libnccl first, as cupy or vLLM do in the
// same process. The plugin settings become NCCL_NET_PLUGIN / NCCL_TUNER_PLUGIN /
// NCCL_PROFILER_PLUGIN, which the fake reads as NCCL does.
//
// --check prints, for each mapped copy, the library dladdr names for its code and the version
// its own ncclGetVersion gives (what the plugin finds for its caller), and whether the global
// scope has an ncclGetVersion (it must not: the copies are RTLD_LOCAL); no communicator.
//
// Usage: pilot_provenance_rank --nccl LIB [--also-map LIB] [--net LIB] [--tuner LIB]
//                              [--profiler LIB] [--rank R] [--nranks N] [--comm NAME] [--check]
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using CommInit = void* (*)(const char*, uint64_t, int, int);
using CommDestroy = void (*)(void*);
using GetVersion = int (*)(int*);

int usage(const char* why) {
  std::fprintf(stderr,
               "pilot_provenance_rank: %s\nusage: pilot_provenance_rank --nccl LIB "
               "[--also-map LIB] [--net LIB] [--tuner LIB] [--profiler LIB] [--rank R] "
               "[--nranks N] [--comm NAME] [--check]\n",
               why);
  return 2;
}

/// What the plugin does with its caller's address: dladdr, then that library's ncclGetVersion.
void describe(void* lib) {
  Dl_info info{};
  void* code = dlsym(lib, "fakeNcclCommInit");
  if (code == nullptr || dladdr(code, &info) == 0 || info.dli_fname == nullptr) {
    std::printf("mapped ? (dladdr failed)\n");
    return;
  }
  int version = 0;
  void* again = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  auto get = again ? reinterpret_cast<GetVersion>(dlsym(again, "ncclGetVersion")) : nullptr;
  if (get != nullptr) get(&version);
  if (again != nullptr) dlclose(again);
  std::printf("mapped %s version %d\n", info.dli_fname, version);
}

}  // namespace

int main(int argc, char** argv) {
  std::string nccl, also, comm = "provenance-job";
  int rank = 0, nRanks = 1;
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool hasValue = i + 1 < argc;
    if (arg == "--check") {
      check = true;
    } else if (!hasValue) {
      return usage(("missing value or unknown argument " + arg).c_str());
    } else if (arg == "--nccl") {
      nccl = argv[++i];
    } else if (arg == "--also-map") {
      also = argv[++i];
    } else if (arg == "--net") {
      setenv("NCCL_NET_PLUGIN", argv[++i], 1);
    } else if (arg == "--tuner") {
      setenv("NCCL_TUNER_PLUGIN", argv[++i], 1);
    } else if (arg == "--profiler") {
      setenv("NCCL_PROFILER_PLUGIN", argv[++i], 1);
    } else if (arg == "--rank") {
      rank = std::atoi(argv[++i]);
    } else if (arg == "--nranks") {
      nRanks = std::atoi(argv[++i]);
    } else if (arg == "--comm") {
      comm = argv[++i];
    } else {
      return usage(("unknown argument " + arg).c_str());
    }
  }
  if (nccl.empty()) return usage("--nccl is required");
  std::vector<void*> mapped;
  for (const std::string& path : {also, nccl}) {  // the second copy first, as a framework would
    if (path.empty()) continue;
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      std::fprintf(stderr, "pilot_provenance_rank: %s\n", dlerror());
      return 1;
    }
    mapped.push_back(lib);
  }
  if (check) {
    for (void* lib : mapped) describe(lib);
    std::printf("global ncclGetVersion %s\n",
                dlsym(RTLD_DEFAULT, "ncclGetVersion") ? "found" : "none");
    return 0;
  }
  auto init = reinterpret_cast<CommInit>(dlsym(mapped.back(), "fakeNcclCommInit"));
  auto destroy = reinterpret_cast<CommDestroy>(dlsym(mapped.back(), "fakeNcclCommDestroy"));
  if (init == nullptr || destroy == nullptr) {
    std::fprintf(stderr, "pilot_provenance_rank: %s is not the fake libnccl\n", nccl.c_str());
    return 1;
  }
  // Every rank of the communicator passes the same id, as NCCL's commHash is.
  void* c = init(comm.c_str(), 0x31c0ffee31ull, rank, nRanks);
  destroy(c);
  std::printf("rank %d done (pid %d)\n", rank, static_cast<int>(getpid()));
  return 0;  // the libnccl copies stay mapped, as in a framework's process
}
