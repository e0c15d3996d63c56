// NCCL topology XML reader. It accepts what NCCL's own parser accepts (src/graph/xml.cc, see
// research/topology.md §1.1) and fails where NCCL fails, with NCCL's wording and a line number:
// only space, \n and \r between elements, no text, no prolog, a tag on one line, quoted values.
#include <algorithm>
#include <map>

#include "nccl_xml_lexer.h"
#include "pilot/core/text.h"
#include "pilot/topology/nccl_xml.h"

namespace pilot::topology {
namespace {

constexpr size_t kMaxInput = 16u << 20;
constexpr int kMaxElementDepth = 16;

using xml::Lexer;
using xml::Tag;

/// What an element may hold, as NCCL's handlers say; anything else is skipped with its subtree.
bool allowed(const std::string& parent, const std::string& child) {
  static const std::map<std::string, std::vector<std::string>> kChildren = {
      {"", {"system"}},           {"system", {"cpu"}},
      {"cpu", {"pci", "nic"}},    {"pci", {"pci", "gpu", "nic", "pcilink"}},
      {"gpu", {"nvlink", "c2c"}}, {"nic", {"net"}}};
  auto it = kChildren.find(parent);
  return it != kChildren.end() &&
         std::find(it->second.begin(), it->second.end(), child) != it->second.end();
}

std::optional<uint32_t> parseHex(const std::string* s) {
  if (!s || s->size() < 3 || s->size() > 10 || s->compare(0, 2, "0x") != 0) return std::nullopt;
  uint32_t v = 0;
  for (size_t i = 2; i < s->size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>((*s)[i])));
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v * 16 + static_cast<uint32_t>(d);
  }
  return v;
}

int parseInt(const std::string* s, int fallback) {
  if (!s) return fallback;
  std::optional<int64_t> v = text::parseSigned(*s);
  return v && *v >= -(1ll << 31) && *v < (1ll << 31) ? static_cast<int>(*v) : fallback;
}

/// Builds the Machine while the parser walks the tree.
class Builder {
 public:
  explicit Builder(Lexer& lex) : lex_(lex) {}
  Machine machine;

  Status element(const Tag& tag, const std::string& parent, int depth, int pci, int numa) {
    if (depth > kMaxElementDepth) return lex_.fail("elements nested deeper than 16");
    if (!allowed(parent, tag.name)) return children(tag, "#skip", depth, pci, numa);
    if (tag.name == "system") {
      const std::string* v = tag.get("version");
      if (!v) return lex_.fail("Attribute version of node system not found");
      if (*v != "1") return lex_.fail("XML Topology has wrong version " + *v + ", 1 needed");
      if (sawSystem_) return lex_.fail("a second <system> element");
      sawSystem_ = true;
    } else if (tag.name == "cpu") {
      numa = cpu(tag);
    } else if (tag.name == "pci") {
      Expected<int> idx = pciNode(tag, pci, numa);
      if (!idx) return Error{idx.error()};
      pci = *idx;
    } else if (tag.name == "gpu") {
      // A fused dump may hold a GPU twice: one entry.
      if (gpuFor_.emplace(pci, static_cast<int>(machine.gpus.size())).second) {
        machine.gpus.push_back(Gpu{pci, parseInt(tag.get("sm"), 0), "", {}});
      }
    } else if (tag.name == "nvlink") {
      nvlink(tag, pci);
    } else if (tag.name == "nic") {
      nicHadNet_ = false;
    } else if (tag.name == "net") {
      net(tag, pci);
    }
    Status s = children(tag, tag.name, depth, pci, numa);
    if (s && tag.name == "nic" && !nicHadNet_ && pci >= 0) net(Tag{}, pci);
    return s;
  }

  Status document() {
    while (true) {
      Expected<Tag> tag = lex_.next();
      if (!tag) return Error{tag.error()};
      if (tag->kind == Tag::End) break;
      if (tag->kind == Tag::Close) return lex_.fail("unexpected closing tag </" + tag->name + ">");
      if (Status s = element(*tag, "", 1, -1, -1); !s) return s;
    }
    if (!sawSystem_) return lex_.fail("no <system version=\"1\"> element");
    finish();
    return Status::success();
  }

 private:
  Status children(const Tag& tag, const std::string& self, int depth, int pci, int numa) {
    if (tag.kind == Tag::SelfClosing) return Status::success();
    while (true) {
      Expected<Tag> child = lex_.next();
      if (!child) return Error{child.error()};
      if (child->kind == Tag::End) return lex_.fail("XML Parse : unterminated " + tag.name);
      if (child->kind == Tag::Close) {
        if (child->name != tag.name) {
          return lex_.fail("XML Mismatch : " + tag.name + " / " + child->name);
        }
        return Status::success();
      }
      if (Status s = element(*child, self, depth + 1, pci, numa); !s) return s;
    }
  }

  int cpu(const Tag& tag) {
    const int numa = parseInt(tag.get("numaid"), -1);
    CpuNode* c = nullptr;
    for (CpuNode& existing : machine.cpus) {
      if (existing.numaId == numa) c = &existing;
    }
    if (!c) {
      machine.cpus.push_back(CpuNode{});
      c = &machine.cpus.back();
      c->numaId = numa;
    }
    auto fill = [&](std::string& field, const char* key) {
      if (field.empty() && tag.get(key)) field = *tag.get(key);
    };
    fill(c->arch, "arch");
    fill(c->vendor, "vendor");
    fill(c->affinity, "affinity");
    if (c->familyId < 0) c->familyId = parseInt(tag.get("familyid"), -1);
    if (c->modelId < 0) c->modelId = parseInt(tag.get("modelid"), -1);
    return numa;
  }

  Expected<int> pciNode(const Tag& tag, int parent, int numa) {
    const std::string* busText = tag.get("busid");
    if (!busText) return lex_.fail("Attribute busid of node pci not found");
    std::optional<BusId> bus = BusId::parse(*busText);
    if (!bus || bus->domain > 0xffff) {
      return lex_.fail("pci busid \"" + *busText + "\" is not a PCI address NCCL can use");
    }
    if (auto it = byBus_.find(*bus); it != byBus_.end()) {
      // NCCL's fusion can leave a device twice; one node, children merged.
      machine.notes.push_back("line " + std::to_string(tag.line) + ": pci " + bus->str() +
                              " appears again; merged");
      return it->second;
    }
    PciNode n;
    n.busId = bus;
    n.parent = parent;
    n.numaNode = numa;
    n.synthetic = bus->domain == 0xffff;  // no host has PCI domain ffff: a made-up switch
    if (std::optional<uint32_t> cls = parseHex(tag.get("class"))) {
      // NCCL matches classes by prefix, so "0x03" or "0x0302" still say GPU: 0x030000, 0x030200.
      const size_t digits = tag.get("class")->size() - 2;
      if (digits <= 6) n.classCode = *cls << (4 * (6 - digits));
    }
    n.kind = (n.classCode >> 8) == 0x0604 ? PciKind::Switch : PciKind::Endpoint;
    auto id = [&](const char* key) {
      return static_cast<uint16_t>(parseHex(tag.get(key)).value_or(0));
    };
    n.vendor = id("vendor");
    n.device = id("device");
    n.subsystemVendor = id("subsystem_vendor");
    n.subsystemDevice = id("subsystem_device");
    if (const std::string* s = tag.get("link_speed"))
      n.linkSpeed = ncclLinkSpeed(parseLinkSpeedGeneration(*s));
    n.linkWidth = std::max(0, parseInt(tag.get("link_width"), 0));
    // A bridge with no class (aws p5 file): the tree shape says what it is.
    if (parent >= 0 && machine.pci[parent].classCode == 0)
      machine.pci[parent].kind = PciKind::Switch;
    const int idx = static_cast<int>(machine.pci.size());
    machine.pci.push_back(n);
    byBus_[*bus] = idx;
    return idx;
  }

  void nvlink(const Tag& tag, int pci) {
    auto it = gpuFor_.find(pci);
    const std::string* target = tag.get("target");
    if (it == gpuFor_.end() || !target) return;
    std::optional<BusId> bus = BusId::parse(*target);
    if (!bus) {
      // NCCL writes fffffff:ffff:ff for a peer it cannot see (an NVSwitch in a VM).
      machine.notes.push_back("nvlink target " + *target + " is not a PCI address; skipped");
      return;
    }
    machine.gpus[it->second].nvlinks.emplace_back(*bus, parseInt(tag.get("count"), 0));
  }

  void net(const Tag& tag, int pci) {
    nicHadNet_ = true;
    Nic n;
    n.pci = pci;  // -1 for a <nic> directly under <cpu>: a virtual NIC
    if (const std::string* v = tag.get("name")) n.name = *v;
    for (const Nic& seen : machine.nics) {
      if (seen.pci == n.pci && seen.name == n.name) return;  // fused dumps repeat nets
    }
    n.speedMbps = std::max(0, parseInt(tag.get("speed"), 0));
    n.port = parseInt(tag.get("port"), 1);
    if (const std::string* v = tag.get("guid")) n.guid = *v;
    classify(n);
    machine.nics.push_back(n);
  }

  /// The file does not say whether a NIC does RDMA; an InfiniBand controller always does.
  void classify(Nic& n) const {
    if (n.pci < 0) return;
    const uint32_t cls = machine.pci[n.pci].classCode >> 8;
    n.linkLayer = cls == 0x0207   ? LinkLayer::InfiniBand
                  : cls == 0x0200 ? LinkLayer::Ethernet
                                  : LinkLayer::Unknown;
    n.rdma = cls == 0x0207;
  }

  /// Vendor files list GPUs and NICs as bare <pci class=...> (NCCL detects the rest): those
  /// become Gpu and Nic entries too. Then the model's sort orders.
  void finish() {
    Machine& m = machine;
    for (int i = 0; i < static_cast<int>(m.pci.size()); ++i) {
      const PciNode& p = m.pci[i];
      if (p.kind != PciKind::Endpoint) continue;
      const uint32_t top = p.classCode >> 16;
      auto refers = [i](const auto& v) { return v.pci == i; };
      if (top == 0x03 && std::none_of(m.gpus.begin(), m.gpus.end(), refers)) {
        m.gpus.push_back(Gpu{i, 0, "", {}});
      } else if (top == 0x02 && std::none_of(m.nics.begin(), m.nics.end(), refers)) {
        Nic n;
        n.pci = i;
        classify(n);
        m.nics.push_back(n);
      }
    }
    auto bus = [&](int pci) { return pci >= 0 ? m.pci[pci].busId : std::nullopt; };
    std::stable_sort(m.gpus.begin(), m.gpus.end(),
                     [&](const Gpu& a, const Gpu& b) { return *bus(a.pci) < *bus(b.pci); });
    std::stable_sort(m.nics.begin(), m.nics.end(), [&](const Nic& a, const Nic& b) {
      if ((a.pci < 0) != (b.pci < 0)) return b.pci < 0;
      if (a.pci >= 0 && *bus(a.pci) != *bus(b.pci)) return *bus(a.pci) < *bus(b.pci);
      return a.name < b.name;
    });
  }

  Lexer& lex_;
  bool sawSystem_ = false;
  std::map<BusId, int> byBus_;
  std::map<int, int> gpuFor_;  // pci index -> Machine::gpus index
  bool nicHadNet_ = false;
};

Expected<Machine> readImpl(const std::string& text, const std::string& source) {
  if (text.size() > kMaxInput) {
    return Error{source + ": " + std::to_string(text.size()) + " bytes, more than 16 MiB"};
  }
  Lexer lex(text, source);
  Builder b(lex);
  if (Status s = b.document(); !s) return Error{s.error()};
  b.machine.source = "NCCL XML " + source;
  return std::move(b.machine);
}

}  // namespace

Expected<Machine> readNcclXml(const std::string& text, const std::string& source) {
  // Only allocation can throw here; the plugin must never see an exception.
  try {
    return readImpl(text, source);
  } catch (...) {
    return Error{source + ": out of memory while reading the NCCL XML"};
  }
}

}  // namespace pilot::topology
