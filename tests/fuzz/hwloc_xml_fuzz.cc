// libFuzzer target: arbitrary bytes as an hwloc XML export (`lstopo --of xml`, read with
// NCCL_PILOT_HWLOC_XML or `topo --hwloc-xml`) through detectMachine: our checks and hwloc 3.x
// conversion before hwloc, hwloc's own load through the dlopen'ed libhwloc.so.15, and our walk
// of the objects it returns. libhwloc is not instrumented: coverage guides through our code
// only, and a crash inside hwloc shows as a crash here. For every input:
//  1. no crash, no undefined behaviour in our code (ASan/UBSan);
//  2. a refusal is one error naming the file (and what is wrong: no <topology>, a format
//     hwloc 2.x cannot read, what hwloc rejected);
//  3. an accepted file gives a model that keeps model.h's promises (PCI chains within the
//     walk's 256 levels, every root's NUMA node with a CPU entry), says it was converted when
//     the file is hwloc 3.x, and survives the NCCL XML round trip (topology_oracle.h).
// Any violation aborts with the details on stderr.
#include <string>

#include "fuzz_support.h"
#include "pilot/topology/sources.h"
#include "topology_oracle.h"

using namespace pilot::topology;

namespace {

/// The first <topology ...> tag's version attribute, as far as a plain search finds it.
std::string versionOf(const std::string& text) {
  const size_t tag = text.find("<topology");
  const size_t end = tag == std::string::npos ? tag : text.find('>', tag);
  const size_t at = text.find(" version=\"", tag == std::string::npos ? 0 : tag);
  if (tag == std::string::npos || at == std::string::npos || at > end) return "";
  return text.substr(at + 10, text.find('"', at + 10) - (at + 10));
}

void checkAccepted(const Machine& m, const std::string& path, const std::string& text) {
  if (m.source != "hwloc XML " + path) fuzz::die("source '" + m.source + "'");
  fuzz::checkMachine(m, 256, 0);
  for (const PciNode& p : m.pci) {
    if (p.parent < 0 && m.cpuByNuma(p.numaNode) == nullptr)
      fuzz::die("a PCI root on NUMA node " + std::to_string(p.numaNode) + " without a CPU entry");
  }
  bool converted = false;
  for (const std::string& note : m.notes)
    converted |= note.find("(hwloc 3.x)") != std::string::npos;
  if (versionOf(text).rfind("3", 0) == 0 && !converted) fuzz::die("a 3.x file read unconverted");
  fuzz::checkNcclXmlRoundTrip(m);
}

}  // namespace

// hwloc 2.9.0 leaks an object (hwloc_alloc_setup_object) when it refuses a truncated export,
// also when called directly (init, set_xml, load, destroy): its leaks are not ours to find.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libhwloc.so\n";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Never released: a static would dlclose libhwloc at exit, before LeakSanitizer's check at
  // exit (libFuzzer's merge), whose stacks then name no module for the suppression to match.
  static const std::shared_ptr<const HwlocLibrary>& hwloc =
      *new std::shared_ptr<const HwlocLibrary>([] {
        std::string whyNot;
        auto lib = loadHwlocDynamic(&whyNot);
        if (!lib) fuzz::die("hwloc is needed: " + whyNot);
        return lib;
      }());
  const std::string text(reinterpret_cast<const char*>(data), size);
  DetectOptions options;
  options.hwlocXml = fuzz::writeScratch("topology.xml", text);
  options.sysfsRoot = fuzz::scratchDir() + "/no-sysfs";  // an export reads nothing live
  pilot::Expected<Machine> m = detectMachine(options, hwloc);
  if (!m.ok()) {
    fuzz::checkError(m.error(), options.hwlocXml);
    if (text.find("<topology") == std::string::npos &&
        m.error().find("no <topology> element") == std::string::npos)
      fuzz::die("a file without <topology> refused for another reason: " + m.error());
    return 0;
  }
  checkAccepted(*m, options.hwlocXml, text);
  return 0;
}
