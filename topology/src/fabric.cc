#include "pilot/topology/fabric.h"

#include <algorithm>

#include "pilot/core/nccl_list.h"
#include "pilot/core/text.h"

namespace pilot::topology {
namespace {

constexpr const char* kRdmaDevices = "/sys/class/infiniband";
constexpr const char* kIbDisable = "NCCL_IB_DISABLE";
constexpr const char* kIbHca = "NCCL_IB_HCA";
constexpr const char* kNcclNet = "NCCL_NET";

/// "4: ACTIVE" -> "ACTIVE", "5: LinkUp" -> "LinkUp".
std::string afterColon(const std::string& value) {
  const size_t colon = value.find(':');
  return std::string(text::trim(colon == std::string::npos ? value : value.substr(colon + 1)));
}

std::string describe(const RdmaPort& p) {
  std::string out = p.device + " port " + std::to_string(p.port) + " " +
                    (p.state.empty() ? "state unreadable" : p.state);
  if (!p.linkLayer.empty()) out += ", " + p.linkLayer;
  return out;
}

}  // namespace

std::vector<RdmaPort> listRdmaPorts(const SysfsRoot& sysfs) {
  std::vector<RdmaPort> out;
  for (const std::string& device : sysfs.list(kRdmaDevices)) {
    const std::string base = std::string(kRdmaDevices) + "/" + device + "/ports";
    for (const std::string& entry : sysfs.list(base)) {
      std::optional<uint64_t> n = text::parseUnsigned(entry);
      if (!n || *n == 0 || *n > 255) continue;
      const std::string dir = base + "/" + entry;
      RdmaPort port;
      port.device = device;
      port.port = static_cast<int>(*n);
      port.state = afterColon(sysfs.readLine(dir + "/state").value_or(""));
      port.physState = afterColon(sysfs.readLine(dir + "/phys_state").value_or(""));
      port.linkLayer = sysfs.readLine(dir + "/link_layer").value_or("");
      port.rate = sysfs.readLine(dir + "/rate").value_or("");
      out.push_back(std::move(port));
    }
  }
  std::sort(out.begin(), out.end(), [](const RdmaPort& a, const RdmaPort& b) {
    return a.device != b.device ? a.device < b.device : a.port < b.port;
  });
  return out;
}

FabricChoice chooseFabric(const std::vector<RdmaPort>& ports, const EnvLookup& env) {
  FabricChoice choice;
  // NCCL reads NCCL_IB_DISABLE as an integer: any non-zero value turns its IB transport off.
  if (auto disable = readText(env, kIbDisable)) {
    std::optional<uint64_t> value = text::parseUnsigned(text::trim(*disable));
    if (value && *value != 0) {
      choice.why = std::string(kIbDisable) + "=" + *disable + ": NCCL's IB transport is off";
      return choice;
    }
  }
  // NCCL_NET names the one network NCCL may use; anything but IB keeps IB out.
  if (auto net = readText(env, kNcclNet)) {
    if (!net->empty() && !text::equalsIgnoreCase(*net, "ib")) {
      choice.why = std::string(kNcclNet) + "=" + *net + ": NCCL does not use its IB transport";
      return choice;
    }
  }
  const NcclNameList hca = NcclNameList::parse(readText(env, kIbHca).value_or(""));
  const RdmaPort* ib = nullptr;
  const RdmaPort* roce = nullptr;
  bool unusable = false;
  std::string seen;
  for (const RdmaPort& p : ports) {
    if (!hca.matches(p.device, p.port)) continue;
    if (!seen.empty()) seen += "; ";
    seen += describe(p);
    if (p.state != "ACTIVE") continue;
    // NCCL's IB transport serves InfiniBand and RoCE ports only. Another link layer ("Unknown"
    // on AWS EFA, whose traffic needs the aws-ofi-nccl plugin) does not count as RDMA here.
    if (p.linkLayer == "Ethernet") {
      if (!roce) roce = &p;
    } else if (p.linkLayer == "InfiniBand") {
      if (!ib) ib = &p;
    } else {
      unusable = true;
    }
  }
  if (ib || roce) {
    choice.rdma = true;
    choice.fabric = ib ? Fabric::InfiniBand : Fabric::RoCE;
    choice.why = describe(ib ? *ib : *roce);
    return choice;
  }
  if (ports.empty()) {
    choice.why = "no RDMA device";
  } else if (seen.empty()) {
    choice.why = std::string(kIbHca) + " selects none of the RDMA ports";
  } else if (unusable) {
    choice.why = "no RDMA port NCCL's IB transport serves (" + seen +
                 "; an EFA device needs the aws-ofi-nccl net plugin)";
  } else {
    choice.why = "no RDMA port ACTIVE (" + seen + ")";
  }
  return choice;
}

FabricChoice detectFabric(const EnvLookup& env) {
  const SysfsRoot sysfs(readText(env, setting::kSysfsRoot).value_or("/"));
  return chooseFabric(listRdmaPorts(sysfs), env);
}

}  // namespace pilot::topology
