/* A C host loads the module the way NCCL does (RTLD_NOW | RTLD_LOCAL) and uses the v7 tuner:
   proves the module needs nothing a C program lacks and that the struct reads right from C.
   Usage: pilot_dlopen_c_test MODULE */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_host_abi.h"

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODULE\n", argv[0]);
    return 2;
  }
  /* No table: the tuner must leave NCCL's cost table as it is. */
  unsetenv("NCCL_PILOT_TUNER_TABLE");
  unsetenv("NCCL_TUNER_CONFIG_FILE");

  void* handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  const char* names[] = {"ncclTunerPlugin_v2", "ncclTunerPlugin_v3", "ncclTunerPlugin_v4",
                         "ncclTunerPlugin_v5", "ncclTunerPlugin_v6", "ncclTunerPlugin_v7"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) CHECK(dlsym(handle, names[i]));

  const ncclTuner_v7_t* v7 = (const ncclTuner_v7_t*)dlsym(handle, "ncclTunerPlugin_v7");
  CHECK(v7 != NULL);
  if (v7 != NULL) {
    CHECK(v7->name != NULL && strcmp(v7->name, "Pilot") == 0);
    CHECK(v7->init != NULL);
    CHECK(v7->getCollInfo != NULL);
    CHECK(v7->finalize != NULL);
    CHECK(v7->getChunkSize != NULL);
  }
  if (failures == 0) {
    ncclNvlDomainInfo_v5_t nvl = {2, 8, 8};
    ncclTunerConstants_v7_t constants;
    memset(&constants, 0, sizeof(constants));
    void* ctx = NULL;
    CHECK(v7->init(&ctx, 42, 16, 2, NULL, &nvl, &constants) == ncclSuccess);
    float table[7][NCCL_NUM_PROTOCOLS];
    for (int a = 0; a < 7; ++a) {
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) table[a][p] = (float)(10 * a + p + 1);
    }
    int nChannels = 0;
    CHECK(v7->getCollInfo(ctx, ncclFuncAllReduce, 1 << 20, 1, (float**)table, 7, NCCL_NUM_PROTOCOLS,
                          0, &nChannels) == ncclSuccess);
    CHECK(nChannels == 0);
    CHECK(table[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] == (float)(10 + 3));
    size_t chunk = 4096;
    CHECK(v7->getChunkSize(ctx, ncclFuncAllReduce, 1 << 20, 1, 2, 8, &chunk) == ncclSuccess);
    CHECK(chunk == 4096);
    CHECK(v7->finalize(ctx) == ncclSuccess);
  }
  /* No dlclose: unload/reload is the fake NCCL's business (tests/plugin). */
  if (failures == 0) printf("ok: %s loads from C, v7 name \"Pilot\"\n", argv[1]);
  return failures == 0 ? 0 : 1;
}
