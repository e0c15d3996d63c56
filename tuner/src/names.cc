#include "pilot/tuner/names.h"

#include "pilot/core/text.h"

namespace pilot::tuner {
namespace {

struct Alias {
  const char* name;
  int index;
};

// Accepted spellings. The first entry of each index is the canonical table name.
constexpr Alias kCollectives[] = {
    {"broadcast", 0},     {"reduce", 1},         {"allgather", 2}, {"all_gather", 2},
    {"reducescatter", 3}, {"reduce_scatter", 3}, {"allreduce", 4}, {"all_reduce", 4},
};
constexpr Alias kAlgorithms[] = {
    {"tree", 0},          {"ring", 1},         {"collnet_direct", 2}, {"collnetdirect", 2},
    {"collnet_chain", 3}, {"collnetchain", 3}, {"nvls", 4},           {"nvls_tree", 5},
    {"nvlstree", 5},      {"pat", 6},
};
constexpr Alias kProtocols[] = {{"ll", 0}, {"ll128", 1}, {"simple", 2}};

template <size_t N>
std::optional<int> lookup(const Alias (&aliases)[N], std::string_view name) {
  for (const Alias& a : aliases) {
    if (text::equalsIgnoreCase(a.name, name)) return a.index;
  }
  return std::nullopt;
}

template <size_t N>
const char* canonical(const Alias (&aliases)[N], int index) {
  for (const Alias& a : aliases) {
    if (a.index == index) return a.name;
  }
  return "?";
}

}  // namespace

std::optional<Collective> parseCollective(std::string_view name) {
  auto i = lookup(kCollectives, name);
  return i ? std::optional<Collective>(static_cast<Collective>(*i)) : std::nullopt;
}
std::optional<Algorithm> parseAlgorithm(std::string_view name) {
  auto i = lookup(kAlgorithms, name);
  return i ? std::optional<Algorithm>(static_cast<Algorithm>(*i)) : std::nullopt;
}
std::optional<Protocol> parseProtocol(std::string_view name) {
  auto i = lookup(kProtocols, name);
  return i ? std::optional<Protocol>(static_cast<Protocol>(*i)) : std::nullopt;
}

const char* collectiveName(Collective c) {
  return canonical(kCollectives, static_cast<int>(c));
}
const char* algorithmName(Algorithm a) {
  return canonical(kAlgorithms, static_cast<int>(a));
}
const char* protocolName(Protocol p) {
  return canonical(kProtocols, static_cast<int>(p));
}

const char* algorithmDisplayName(Algorithm a) {
  static const char* const kNames[] = {"Tree",     "Ring", "CollNetDirect", "CollNetChain", "NVLS",
                                       "NVLSTree", "PAT"};
  return kNames[static_cast<int>(a)];
}
const char* protocolDisplayName(Protocol p) {
  static const char* const kNames[] = {"LL", "LL128", "Simple"};
  return kNames[static_cast<int>(p)];
}

const char* collectiveNameList() {
  return "allreduce, allgather, reducescatter, broadcast, reduce";
}
const char* algorithmNameList() {
  return "tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat";
}
const char* protocolNameList() {
  return "ll, ll128, simple";
}

bool isWildcard(std::string_view field) {
  return field == "-1" || field == "*" || text::equalsIgnoreCase(field, "any") ||
         text::equalsIgnoreCase(field, "default");
}

}  // namespace pilot::tuner
