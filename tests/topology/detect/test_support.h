// Shared helpers for the detection tests.
#pragma once

#include <string>
#include <vector>

#include "pilot/topology/model.h"
#include "published_fixture.h"

namespace pilot::topology::testing {

inline std::string dataRoot(const std::string& tree) {
  return std::string(PILOT_TOPOLOGY_DATA) + "/" + tree;
}

/// A published hwloc export (../shared/fixtures/topo/hwloc); tests reading one start with
/// PILOT_REQUIRE_FIXTURE(hwlocFixture(name)).
inline std::string hwlocFixture(const std::string& name) {
  return testsupport::sharedFixture("topo/hwloc/" + name);
}

/// Our own hwloc exports (tests/topology/data/hwloc): present in every checkout.
inline std::string ownHwlocXml(const std::string& name) {
  return dataRoot("hwloc/" + name);
}

/// True when some note contains every one of the given fragments.
inline bool hasNote(const Machine& m, const std::vector<std::string>& fragments) {
  for (const std::string& note : m.notes) {
    bool all = true;
    for (const std::string& f : fragments) all = all && note.find(f) != std::string::npos;
    if (all) return true;
  }
  return false;
}

inline std::string allNotes(const Machine& m) {
  std::string out;
  for (const std::string& n : m.notes) out += "  " + n + "\n";
  return out;
}

inline int pciIndex(const Machine& m, const std::string& busId) {
  for (size_t i = 0; i < m.pci.size(); ++i) {
    if (m.pci[i].busId && m.pci[i].busId->str() == busId) return static_cast<int>(i);
  }
  return -1;
}

inline const Nic* nicNamed(const Machine& m, const std::string& name) {
  for (const Nic& n : m.nics) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

inline std::string busOf(const Machine& m, int pci) {
  if (pci < 0 || static_cast<size_t>(pci) >= m.pci.size() || !m.pci[pci].busId) return "";
  return m.pci[pci].busId->str();
}

/// Every parent index points at an earlier node (the model's ordering promise).
inline bool parentsPrecedeChildren(const Machine& m) {
  for (size_t i = 0; i < m.pci.size(); ++i) {
    if (m.pci[i].parent >= static_cast<int>(i)) return false;
  }
  return true;
}

}  // namespace pilot::topology::testing
