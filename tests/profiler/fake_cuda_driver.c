/* A stand-in for the CUDA driver (built with the soname libcuda.so.1): the device of the current
   context is 3, for the tests that check what the profiler asks of it; and the few entry points
   NCCL's Inspector needs at init, so it can run beside ours in the overhead benchmark on a
   machine without a GPU (tests/bench/run_profiler_bench.sh). */
#include <string.h>

int cuCtxGetDevice(int* device) {
  if (device == 0) return 1; /* CUDA_ERROR_INVALID_VALUE */
  *device = 3;
  return 0; /* CUDA_SUCCESS */
}

int cuDeviceGet(int* device, int ordinal) {
  if (device == 0) return 1;
  *device = ordinal;
  return 0;
}

int cuDeviceGetUuid(unsigned char* uuid, int device) {
  if (uuid == 0) return 1;
  memset(uuid, 0, 16);
  uuid[15] = (unsigned char)device;
  return 0;
}

int cuGetErrorString(int error, const char** text) {
  if (text != 0) *text = error == 0 ? "no error" : "error";
  return 0;
}
