#include "pilot/metrics/operation.h"

#include <cstring>

#include "pilot/core/text.h"

namespace pilot::metrics {
namespace {

constexpr const char* kOperationNames[kNumOperations] = {
    "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
    "AlltoAll",  "Gather", "Scatter",   "Send",          "Recv",
};

struct Datatype {
  const char* name;
  unsigned bytes;
};
// ncclDatatypeToString's names (NCCL 2.23 .. 2.30).
constexpr Datatype kDatatypes[] = {
    {"ncclInt8", 1},    {"ncclUint8", 1},    {"ncclInt32", 4},      {"ncclUint32", 4},
    {"ncclInt64", 8},   {"ncclUint64", 8},   {"ncclFloat16", 2},    {"ncclFloat32", 4},
    {"ncclFloat64", 8}, {"ncclBfloat16", 2}, {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
};

constexpr const char* kAlgorithmLabels[] = {
    "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
constexpr const char* kProtocolLabels[] = {"LL", "LL128", "SIMPLE"};

}  // namespace

bool parseOperation(const char* name, Operation* out) {
  if (name == nullptr) return false;
  for (int i = 0; i < kNumOperations; ++i) {
    if (std::strcmp(name, kOperationNames[i]) == 0) {
      *out = static_cast<Operation>(i);
      return true;
    }
  }
  return false;
}

const char* operationName(Operation op) {
  const unsigned i = static_cast<unsigned>(op);
  return i < static_cast<unsigned>(kNumOperations) ? kOperationNames[i] : "other";
}

bool tunedCollective(Operation op, tuner::Collective* out) {
  const int i = static_cast<int>(op);
  if (i >= tuner::kNumCollectives) return false;
  *out = static_cast<tuner::Collective>(i);
  return true;
}

unsigned datatypeBytes(const char* name) {
  if (name == nullptr) return 0;
  for (const Datatype& d : kDatatypes) {
    if (std::strcmp(name, d.name) == 0) return d.bytes;
  }
  return 0;
}

// NCCL spells algorithms and protocols exactly as our labels (ncclAlgoToString,
// ncclProtoToString): an exact comparison first, the tuner's case-insensitive names (which
// lower every character) only for another spelling. This runs for every collective.
uint8_t parseAlgorithmIndex(const char* name) {
  if (name == nullptr) return kUnknownAlgorithm;
  for (uint8_t i = 0; i < tuner::kNumAlgorithms; ++i) {
    if (std::strcmp(name, kAlgorithmLabels[i]) == 0) return i;
  }
  auto a = tuner::parseAlgorithm(name);
  return a ? static_cast<uint8_t>(*a) : kUnknownAlgorithm;
}

uint8_t parseProtocolIndex(const char* name) {
  if (name == nullptr) return kUnknownProtocol;
  for (uint8_t i = 0; i < tuner::kNumProtocols; ++i) {
    if (std::strcmp(name, kProtocolLabels[i]) == 0) return i;
  }
  auto p = tuner::parseProtocol(name);
  return p ? static_cast<uint8_t>(*p) : kUnknownProtocol;
}

const char* algorithmLabel(uint8_t index) {
  if (index == kGroupedP2pAlgorithm) return "P2P";
  return index < tuner::kNumAlgorithms ? kAlgorithmLabels[index] : "unknown";
}

const char* protocolLabel(uint8_t index) {
  return index < tuner::kNumProtocols ? kProtocolLabels[index] : "unknown";
}

std::string algoProtoLabel(uint8_t algorithm, uint8_t protocol) {
  // A grouped exchange's operations each pick LL or SIMPLE, which NCCL does not report.
  if (algorithm == kGroupedP2pAlgorithm) return algorithmLabel(algorithm);
  return std::string(algorithmLabel(algorithm)) + "_" + protocolLabel(protocol);
}

unsigned sizeBucket(uint64_t bytes) {
  return bytes <= 1 ? 0 : 63 - static_cast<unsigned>(__builtin_clzll(bytes));
}

namespace {

/// 2^exponent bytes with the largest binary unit that keeps it whole: "512KB", "1MB".
std::string powerOfTwoBytes(unsigned exponent, bool withUnit) {
  static const char* const kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  const unsigned unit = exponent / 10;
  const uint64_t value = uint64_t{1} << (exponent % 10);
  return std::to_string(value) + (withUnit ? kUnits[unit] : "");
}

}  // namespace

std::string sizeBucketLabel(unsigned bucket) {
  if (bucket > 63) return "other";
  const unsigned next = bucket + 1;
  const bool sameUnit = next / 10 == bucket / 10;
  if (next == 64) return powerOfTwoBytes(bucket, true) + "-16EB";
  return powerOfTwoBytes(bucket, !sameUnit) + "-" + powerOfTwoBytes(next, true);
}

double busBytes(Operation op, uint64_t messageBytes, int nRanks) {
  const double b = static_cast<double>(messageBytes);
  const double n = nRanks > 0 ? static_cast<double>(nRanks) : 1.0;
  switch (op) {
    case Operation::AllReduce:
      return b * 2.0 * (n - 1.0) / n;
    case Operation::AllGather:
    case Operation::ReduceScatter:
    case Operation::AlltoAll:
    case Operation::Gather:
    case Operation::Scatter:
      return b * (n - 1.0);  // B·n traffic x (n-1)/n
    case Operation::Broadcast:
    case Operation::Reduce:
    case Operation::Send:
    case Operation::Recv:
      return b;
  }
  return 0.0;
}

uint64_t tunerBytes(Operation op, uint64_t messageBytes, int nRanks) {
  if ((op == Operation::AllGather || op == Operation::ReduceScatter) && nRanks > 1) {
    uint64_t total;
    if (__builtin_mul_overflow(messageBytes, static_cast<uint64_t>(nRanks), &total)) {
      return UINT64_MAX;
    }
    return total;
  }
  return messageBytes;
}

}  // namespace pilot::metrics
