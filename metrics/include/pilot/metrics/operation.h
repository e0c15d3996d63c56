// What a collective or point-to-point operation is, read from the strings NCCL's profiler
// descriptors carry (NCCL's ncclFuncToString, ncclDatatypeToString, ncclAlgoToString,
// ncclProtoToString), and what it moves: the power-of-two size bucket and nccl-tests'
// bus-bandwidth traffic (nccl-tests doc/PERFORMANCE.md; NCCL's Inspector uses the same factors,
// and 1 for a Send or Recv).
// Everything here is allocation-free: it runs on NCCL's threads for every collective.
#pragma once

#include <cstdint>
#include <string>

#include "pilot/tuner/names.h"

namespace pilot::metrics {

/// The operations measured. The first five have NCCL's (and the tuner's) indices; Send and Recv
/// come as P2p events, the others as Coll events.
enum class Operation : uint8_t {
  Broadcast = 0,
  Reduce,
  AllGather,
  ReduceScatter,
  AllReduce,
  AlltoAll,
  Gather,
  Scatter,
  Send,
  Recv,
};
constexpr int kNumOperations = 10;

/// NCCL's spelling ("AllReduce", "Send"): unknown names are not measured.
bool parseOperation(const char* name, Operation* out);
const char* operationName(Operation op);
/// Send or Recv: NCCL's point-to-point operations.
inline bool isPointToPoint(Operation op) {
  return op == Operation::Send || op == Operation::Recv;
}
/// The tuner's collective when the table can decide it (the first five).
bool tunedCollective(Operation op, tuner::Collective* out);

/// Bytes per element of NCCL's datatype names ("ncclFloat32" = 4); 0 for unknown names
/// (NCCL prints ncclUint8 as "Unknown", so a name it cannot spell is not measured).
unsigned datatypeBytes(const char* name);

/// NCCL's algorithm and protocol names (case-insensitive); kUnknown... when not one of them.
constexpr uint8_t kUnknownAlgorithm = 7;
constexpr uint8_t kUnknownProtocol = 3;
/// Not one of NCCL's algorithms: an all-to-all exchange NCCL ran as a group of Send/Recv
/// operations (event_path.h), which the profiler reports as one AlltoAll.
constexpr uint8_t kGroupedP2pAlgorithm = 8;
uint8_t parseAlgorithmIndex(const char* name);
uint8_t parseProtocolIndex(const char* name);
/// NCCL's own spellings ("RING", "NVLS_TREE", "SIMPLE"), "P2P" for kGroupedP2pAlgorithm;
/// "unknown" past them.
const char* algorithmLabel(uint8_t index);
const char* protocolLabel(uint8_t index);
/// Inspector's algo_proto label: "RING_SIMPLE", or "P2P" for a grouped exchange.
std::string algoProtoLabel(uint8_t algorithm, uint8_t protocol);

/// Sizes fall in power-of-two buckets: bucket b holds [2^b, 2^(b+1)) bytes; 0 bytes is bucket 0
/// with 1 byte (a zero-byte operation is never measured).
unsigned sizeBucket(uint64_t bytes);
/// "4-8MB", "512KB-1MB", "1-2B": the bucket's range with binary units (K = 1024), as the
/// message_size label of NCCL's Inspector (whose buckets are narrower: "4-5MB").
std::string sizeBucketLabel(unsigned bucket);

/// Bytes that count for bus bandwidth per operation, times nccl-tests' factor:
///   AllReduce B·2(n-1)/n; AllGather, ReduceScatter, AlltoAll, Gather, Scatter B·n·(n-1)/n;
///   Broadcast, Reduce, Send, Recv B; where B = count x element size (per rank for
///   AllGather/ReduceScatter, per peer for AlltoAll) and n = ranks. Bus bandwidth = this / time.
double busBytes(Operation op, uint64_t messageBytes, int nRanks);

/// The size the tuner is asked about (NCCL's nBytes): the total over ranks for AllGather and
/// ReduceScatter, the message otherwise.
uint64_t tunerBytes(Operation op, uint64_t messageBytes, int nRanks);

}  // namespace pilot::metrics
