// Majority comparison of node fingerprints. A value held by more than half the nodes is the
// majority; each node without it is named with its value. Without such a value (an even split,
// or many values) the fact is reported as a split, naming every group.
#include "pilot/doctor/fingerprint.h"

#include <algorithm>
#include <set>

namespace pilot::doctor {
namespace {

constexpr const char* kAbsent = "(absent)";

}  // namespace

std::string contentDigest(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64: offset basis and prime
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out = "fnv1a64:";
  for (int shift = 60; shift >= 0; shift -= 4) out += kHex[(h >> shift) & 0xf];
  return out;
}

std::vector<std::string> Comparison::oddNodes() const {
  std::set<std::string> odd;
  for (const Difference& d : differences) odd.insert(d.node);
  return std::vector<std::string>(odd.begin(), odd.end());
}

Comparison compareFingerprints(const std::vector<Fingerprint>& fingerprints) {
  Comparison out;
  out.nodes = static_cast<int>(fingerprints.size());
  std::set<std::string> keys;
  for (const Fingerprint& f : fingerprints) {
    for (const auto& entry : f.facts) keys.insert(entry.first);
  }
  for (const std::string& key : keys) {
    std::map<std::string, std::vector<std::string>> byValue;
    for (const Fingerprint& f : fingerprints) {
      auto it = f.facts.find(key);
      byValue[it == f.facts.end() ? kAbsent : it->second].push_back(f.node);
    }
    if (byValue.size() < 2) continue;
    auto top = std::max_element(byValue.begin(), byValue.end(), [](const auto& a, const auto& b) {
      return a.second.size() < b.second.size();
    });
    const int held = static_cast<int>(top->second.size());
    if (out.nodes >= 3 && 2 * held > out.nodes) {
      for (const auto& [value, nodes] : byValue) {
        if (value == top->first) continue;
        for (const std::string& node : nodes)
          out.differences.push_back(Difference{node, key, value, top->first, held});
      }
      continue;
    }
    Split split;
    split.key = key;
    for (auto& [value, nodes] : byValue) split.groups.emplace_back(value, nodes);
    out.splits.push_back(std::move(split));
  }
  std::sort(out.differences.begin(), out.differences.end(),
            [](const Difference& a, const Difference& b) {
              return a.node != b.node ? a.node < b.node : a.key < b.key;
            });
  return out;
}

}  // namespace pilot::doctor
