// What every Machine a reader gives must hold, and the round trip through NCCL's XML that the
// NCCL XML and hwloc XML targets both check. Violations abort (fuzz::die).
#pragma once

#include "pilot/topology/model.h"

namespace fuzz {

/// The NCCL XML reader takes 16 levels of elements: <system>, <cpu> and 14 of <pci>, so a PCI
/// node has at most 13 ancestors.
constexpr int kMaxPciHops = 13;

/// model.h's promises: parents before children, GPU and NIC indices in range, GPUs and NICs
/// sorted by bus id, domains NCCL can write, ancestor chains of at most `maxDepth` hops, and
/// strings of at most `maxValue` characters (0: unbounded).
void checkMachine(const pilot::topology::Machine& m, int maxDepth, size_t maxValue);

/// writeNcclXml(m) fails only for a bus id written twice or too many nodes; otherwise its text
/// passes NCCL's rules (tests/topology/xml/nccl_rules), reads back, keeps every GPU and NIC the
/// file can say (at its bus id), and writes the same text again.
void checkNcclXmlRoundTrip(const pilot::topology::Machine& m);

}  // namespace fuzz
