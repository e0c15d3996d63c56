/* The two CUDA runtime calls NCCL's Inspector makes at communicator init (cudaGetDevice,
   cudaGetErrorString), so the overhead benchmark can load it on a machine without a GPU. Linked
   into the Inspector build of tests/bench/build_inspector.sh only. */
int cudaGetDevice(int* device) {
  if (device == 0) return 1;
  *device = 0;
  return 0; /* cudaSuccess */
}

const char* cudaGetErrorString(int error) {
  return error == 0 ? "no error" : "error";
}
