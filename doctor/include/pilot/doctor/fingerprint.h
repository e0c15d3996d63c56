// The distributed check: every node writes its fingerprint (the facts runDoctor gathered:
// driver, NCCL and plugin, NCCL_* environment, topology digest, port rates, the worst verdict
// of each check) and its findings; comparing the fingerprints of all nodes names every node that
// differs from the majority, and in what.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/doctor/finding.h"

namespace pilot::doctor {

struct Fingerprint {
  std::string node;  ///< host name
  std::map<std::string, std::string> facts;
  std::vector<Finding> findings;
};

/// One fact in which a node differs from what most nodes have.
struct Difference {
  std::string node;
  std::string key;
  std::string value;     ///< this node's; "(absent)" when it lacks the fact
  std::string majority;  ///< the majority's; "(absent)" when most nodes lack it
  int majorityNodes = 0;
};

/// A fact with no majority (no value held by more than half the nodes): every group is named.
struct Split {
  std::string key;
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  ///< value -> nodes
};

struct Comparison {
  int nodes = 0;
  std::vector<Difference> differences;  ///< by node, then key
  std::vector<Split> splits;            ///< by key
  /// Nodes differing from the majority in anything, in name order (the odd nodes).
  std::vector<std::string> oddNodes() const;
};

/// A stable digest of some bytes ("fnv1a64:0123456789abcdef"): equal content gives equal
/// digests on every node. Not a security property.
std::string contentDigest(std::string_view bytes);

/// Compares every fact across the nodes. With fewer than three nodes no majority can be told
/// from two values, so every differing fact is a Split.
Comparison compareFingerprints(const std::vector<Fingerprint>& fingerprints);

}  // namespace pilot::doctor
