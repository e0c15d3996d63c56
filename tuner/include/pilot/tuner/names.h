// NCCL's collective, algorithm and protocol indices and their names in tuning tables.
// Index values are NCCL's (ncclFunc_t, NCCL_ALGO_*, NCCL_PROTO_*), stable from 2.21 to 2.30.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pilot::tuner {

enum class Collective : uint8_t { Broadcast = 0, Reduce, AllGather, ReduceScatter, AllReduce };
constexpr int kNumCollectives = 5;

enum class Algorithm : uint8_t { Tree = 0, Ring, CollNetDirect, CollNetChain, Nvls, NvlsTree, Pat };
constexpr int kNumAlgorithms = 7;  // NCCL 2.23+; 2.21-2.22 have 6 (no PAT)

enum class Protocol : uint8_t { LL = 0, LL128, Simple };
constexpr int kNumProtocols = 3;

std::optional<Collective> parseCollective(std::string_view name);
std::optional<Algorithm> parseAlgorithm(std::string_view name);
std::optional<Protocol> parseProtocol(std::string_view name);

/// Lowercase table spellings: "allreduce", "nvls_tree", "ll128".
const char* collectiveName(Collective c);
const char* algorithmName(Algorithm a);
const char* protocolName(Protocol p);
/// NCCL's own spellings, as in NCCL_ALGO and its logs: "Ring", "NVLSTree", "LL128".
const char* algorithmDisplayName(Algorithm a);
const char* protocolDisplayName(Protocol p);

/// Comma-separated lists of valid names, for error messages.
const char* collectiveNameList();
const char* algorithmNameList();
const char* protocolNameList();

/// True if a table field means "not named / any": -1, *, any, default (case-insensitive).
bool isWildcard(std::string_view field);

}  // namespace pilot::tuner
