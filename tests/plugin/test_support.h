// Shorthands for the fake-NCCL scenarios.
#pragma once

#include <gtest/gtest.h>

#include "fake_nccl.h"

namespace fake {

/// The built modules, from CMake ($<TARGET_FILE:...>).
constexpr const char* kTunerModule = PILOT_TUNER_MODULE;
constexpr const char* kNetModule = PILOT_NET_MODULE;

constexpr size_t K = 1024;
constexpr size_t M = 1024 * K;

/// NCCL's algorithm and protocol indices (the cost table's rows and columns), short.
constexpr int kTree = NCCL_ALGO_TREE, kRing = NCCL_ALGO_RING, kNvls = NCCL_ALGO_NVLS,
              kPat = NCCL_ALGO_PAT;
constexpr int kLL = NCCL_PROTO_LL, kLL128 = NCCL_PROTO_LL128, kSimple = NCCL_PROTO_SIMPLE;

inline Call collCall(int coll, size_t nBytes, int numPipeOps = 1, int regBuff = 0) {
  Call c;
  c.coll = coll;
  c.nBytes = nBytes;
  c.numPipeOps = numPipeOps;
  c.regBuff = regBuff;
  return c;
}
inline Call allReduce(size_t nBytes) {
  return collCall(ncclFuncAllReduce, nBytes);
}

inline Choice pick(int algo, int proto) {
  return Choice{algo, proto};
}

}  // namespace fake

/// Loads `path` into `var` or fails the current (child) test.
#define FAKE_LOAD(var, path) \
  ::fake::Module var(path);  \
  ASSERT_TRUE(var.ok()) << var.error()

/// gtest printing of a Choice.
namespace fake {
inline void PrintTo(const Choice& c, std::ostream* os) {
  *os << toString(c);
}
}  // namespace fake
