// rdma-port: every RDMA port's state, physical state, rate, link layer (and for RoCE the MTU
// its interface allows), against the other ports of the machine. roce: a RoCE v2 GID NCCL can
// select (NCCL_IB_ROCE_VERSION_NUM, NCCL_IB_ADDR_FAMILY, NCCL_IB_GID_INDEX) and the traffic class.
#include <algorithm>
#include <map>

#include "context.h"
#include "pilot/core/nccl_list.h"
#include "pilot/core/text.h"

namespace pilot::doctor::detail {
namespace {

constexpr const char* kPort = "rdma-port";
constexpr const char* kRoce = "roce";
const std::string kInfiniband = "/sys/class/infiniband";

std::string portDir(const topology::RdmaPort& p) {
  return kInfiniband + "/" + p.device + "/ports/" + std::to_string(p.port);
}
std::string portName(const topology::RdmaPort& p) {
  return p.device + " port " + std::to_string(p.port);
}

/// "400 Gb/sec (4X NDR)" -> 400; 0 unreadable.
double rateGbps(const std::string& rate) {
  std::vector<std::string_view> words = text::splitWhitespace(rate);
  if (words.size() < 2 || words[1] != "Gb/sec") return 0;
  return text::parseDecimal(words[0]).value_or(0);
}

/// The interface of a port: gid_attrs/ndevs/0 (kernel >= 4.14), else the device's only netdev.
std::string netdevOf(const Context& ctx, const topology::RdmaPort& p) {
  if (auto n = ctx.sysfs.readLine(portDir(p) + "/gid_attrs/ndevs/0"); n && !n->empty()) return *n;
  std::vector<std::string> nets = ctx.sysfs.list(kInfiniband + "/" + p.device + "/device/net");
  return nets.size() == 1 ? nets.front() : "";
}

/// The RoCE active MTU the kernel derives from an interface MTU (IB MTUs 256..4096 that fit
/// after the RoCE v2 headers: GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4).
int roceMtu(int netdevMtu) {
  const int payload = netdevMtu - 96;
  for (int mtu : {4096, 2048, 1024, 512, 256}) {
    if (payload >= mtu) return mtu;
  }
  return 0;
}

struct PortView {
  const topology::RdmaPort* port;
  bool selected;
  double gbps;
  std::string netdev;
  int mtu = 0;  ///< RoCE active MTU from the interface; 0 unknown (IB: not in sysfs)
  std::string mtuText;
};

std::string fixFor(const PortView& v) {
  const topology::RdmaPort& p = *v.port;
  std::string fix;
  if (p.physState == "Polling" || p.physState == "Disabled" || p.physState == "Sleep") {
    fix = "no physical link (" + p.physState + "): check the cable and the switch port " +
          "(ibstat " + p.device + " " + std::to_string(p.port) + "; mlxlink -d " + p.device + ")";
  } else if (p.physState == "LinkUp" && p.linkLayer != "Ethernet") {
    fix =
        "the link is up but no subnet manager activated the port: check the fabric's SM "
        "(sminfo; opensm on a managed switch or host)";
  } else if (p.linkLayer == "Ethernet" && !v.netdev.empty()) {
    fix = "ip link set " + v.netdev + " up, then check the cable and the switch port";
  } else {
    fix = "check the cable, the switch port and the subnet manager (ibstat " + p.device + ")";
  }
  return fix + "; or leave the port out with NCCL_IB_HCA";
}

}  // namespace

void checkRdmaPorts(Context& ctx) {
  if (ctx.ports.empty()) {
    ctx.add(kPort, Verdict::Skip, "RDMA ports", "no RDMA device in " + kInfiniband);
    return;
  }
  const std::optional<std::string> hcaSpec = ctx.env("NCCL_IB_HCA");
  const NcclNameList hca = NcclNameList::parse(hcaSpec.value_or(""));
  std::vector<PortView> views;
  for (const topology::RdmaPort& p : ctx.ports) {
    PortView v{&p, hca.matches(p.device, p.port), rateGbps(p.rate), "", 0, ""};
    if (p.linkLayer == "Ethernet") {
      v.netdev = netdevOf(ctx, p);
      std::optional<std::string> mtu =
          v.netdev.empty() ? std::nullopt
                           : ctx.sysfs.readLine("/sys/class/net/" + v.netdev + "/mtu");
      std::optional<uint64_t> bytes = mtu ? text::parseUnsigned(*mtu) : std::nullopt;
      if (bytes && *bytes < 1u << 20) {
        v.mtu = roceMtu(static_cast<int>(*bytes));
        v.mtuText =
            ", " + v.netdev + " mtu " + *mtu + " -> RoCE active MTU " + std::to_string(v.mtu);
      }
    }
    views.push_back(std::move(v));
  }
  // The fastest ACTIVE port per link layer, and the largest RoCE MTU: NCCL spreads traffic
  // over its NICs, so the slowest one paces a collective, and a connection takes the smaller
  // of the two ends' MTUs.
  std::map<std::string, const PortView*> fastest;
  int bestMtu = 0;
  for (const PortView& v : views) {
    if (!v.selected || v.port->state != "ACTIVE") continue;
    const PortView*& f = fastest[v.port->linkLayer];
    if (f == nullptr || v.gbps > f->gbps) f = &v;
    bestMtu = std::max(bestMtu, v.mtu);
  }
  for (const PortView& v : views) {
    const topology::RdmaPort& p = *v.port;
    ctx.fact("rdma." + p.device + ":" + std::to_string(p.port),
             p.state + " " + p.rate + " " + p.linkLayer);
    const std::string evidence =
        "state " + (p.state.empty() ? std::string("unreadable") : p.state) + ", phys_state " +
        (p.physState.empty() ? std::string("unreadable") : p.physState) + ", rate " +
        (p.rate.empty() ? std::string("unreadable") : p.rate) + ", " +
        (p.linkLayer.empty() ? std::string("link layer unreadable") : p.linkLayer) + v.mtuText +
        " (" + portDir(v.port[0]) + ")";
    if (!v.selected) {
      ctx.add(kPort, Verdict::Pass, portName(p),
              evidence + "; not used: NCCL_IB_HCA=" + *hcaSpec + " leaves it out");
      continue;
    }
    if (p.state != "ACTIVE") {
      ctx.add(kPort, Verdict::Fail, portName(p),
              evidence + "; NCCL skips it and the GPUs near it cross the machine to another NIC",
              fixFor(v));
      continue;
    }
    const PortView* f = fastest[p.linkLayer];
    if (f != nullptr && v.gbps > 0 && v.gbps < f->gbps) {
      ctx.add(kPort, Verdict::Warn, portName(p),
              evidence + "; slower than " + portName(*f->port) + " at " + f->port->rate,
              "a link that trained below its peers (NVIDIA/nccl#307): check the cable and the "
              "switch port speed (ibstat " +
                  p.device + "; mlxlink -d " + p.device +
                  " -m); the slowest port paces every collective");
      continue;
    }
    if (v.mtu > 0 && v.mtu < bestMtu) {
      ctx.add(kPort, Verdict::Warn, portName(p),
              evidence + "; other RoCE ports reach MTU " + std::to_string(bestMtu),
              "NCCL uses the smaller MTU of both ends: give " + v.netdev +
                  " the same MTU as the others (ip link set " + v.netdev +
                  " mtu 9000, and the "
                  "switch ports too)");
      continue;
    }
    ctx.add(kPort, Verdict::Pass, portName(p), evidence);
  }
}

namespace {

struct Gid {
  int index = -1;
  std::string value;  ///< "0000:0000:0000:0000:0000:ffff:0a00:0001"
  std::string type;   ///< "RoCE v2", "IB/RoCE v1"
};

bool isZero(const std::string& gid) {
  return std::all_of(gid.begin(), gid.end(), [](char c) { return c == '0' || c == ':'; });
}
bool isIpv4Mapped(const std::string& gid) {
  return gid.rfind("0000:0000:0000:0000:0000:ffff:", 0) == 0;
}
bool isLinkLocal(const std::string& gid) {
  return gid.rfind("fe80:", 0) == 0;
}
std::string ipv4Of(const std::string& gid) {
  // The last two groups of an IPv4-mapped GID: "0a00:0001" -> "10.0.0.1".
  if (gid.size() < 9) return gid;
  const std::string tail = gid.substr(gid.size() - 9);
  auto byte = [&](size_t at) {
    return std::to_string(std::stoul(tail.substr(at, 2), nullptr, 16));
  };
  try {
    return byte(0) + "." + byte(2) + "." + byte(5) + "." + byte(7);
  } catch (...) {
    return gid;
  }
}

std::vector<Gid> readGids(const Context& ctx, const topology::RdmaPort& p) {
  std::vector<Gid> out;
  const std::string dir = portDir(p);
  for (const std::string& entry : ctx.sysfs.list(dir + "/gids")) {
    std::optional<uint64_t> index = text::parseUnsigned(entry);
    if (!index || *index > 4096) continue;
    std::string value = text::toLower(ctx.sysfs.readLine(dir + "/gids/" + entry).value_or(""));
    if (value.empty() || isZero(value)) continue;
    // An unused entry's type reads as an error: it has no type.
    out.push_back(Gid{static_cast<int>(*index), value,
                      ctx.sysfs.readLine(dir + "/gid_attrs/types/" + entry).value_or("")});
  }
  std::sort(out.begin(), out.end(), [](const Gid& a, const Gid& b) { return a.index < b.index; });
  return out;
}

std::string describeGids(const std::vector<Gid>& gids) {
  std::string out;
  for (const Gid& g : gids) {
    out += (out.empty() ? "" : ", ") + std::to_string(g.index) + ": " +
           (g.type.empty() ? "type unknown" : g.type) + " " +
           (isIpv4Mapped(g.value)  ? ipv4Of(g.value)
            : isLinkLocal(g.value) ? "fe80:: link-local"
                                   : g.value);
  }
  return out.empty() ? "no GID configured" : out;
}

}  // namespace

void checkRoce(Context& ctx) {
  const NcclNameList hca = NcclNameList::parse(ctx.env("NCCL_IB_HCA").value_or(""));
  std::vector<const topology::RdmaPort*> roce;
  for (const topology::RdmaPort& p : ctx.ports) {
    if (p.linkLayer == "Ethernet" && hca.matches(p.device, p.port)) roce.push_back(&p);
  }
  if (roce.empty()) {
    ctx.add(kRoce, Verdict::Skip, "RoCE",
            ctx.ports.empty() ? "no RDMA device" : "no RDMA port with link layer Ethernet in use");
    return;
  }
  const std::string version(text::trim(ctx.env("NCCL_IB_ROCE_VERSION_NUM").value_or("2")));
  const std::string wantedType = version == "1" ? "IB/RoCE v1" : "RoCE v2";
  const bool wantIpv6 = ctx.env("NCCL_IB_ADDR_FAMILY").value_or("AF_INET") == "AF_INET6";
  const std::optional<std::string> gidIndexEnv = ctx.env("NCCL_IB_GID_INDEX");
  const std::optional<int64_t> gidIndex =
      gidIndexEnv ? text::parseSigned(text::trim(*gidIndexEnv)) : std::nullopt;
  const std::optional<std::string> tcEnv = ctx.env("NCCL_IB_TC");
  for (const topology::RdmaPort* p : roce) {
    const std::vector<Gid> gids = readGids(ctx, *p);
    const std::string subject = portName(*p) + " GID";
    const std::string evidence =
        "GIDs " + describeGids(gids) + " (" + portDir(*p) + "/gids, " + "gid_attrs/types)";
    const std::string netdev = netdevOf(ctx, *p);
    if (gidIndex && *gidIndex >= 0) {
      auto it = std::find_if(gids.begin(), gids.end(),
                             [&](const Gid& g) { return g.index == *gidIndex; });
      if (it == gids.end() || it->type != wantedType) {
        ctx.add(kRoce, Verdict::Fail, subject,
                "NCCL_IB_GID_INDEX=" + *gidIndexEnv + " is " +
                    (it == gids.end() ? "not a configured GID" : "a " + it->type + " GID") + "; " +
                    evidence,
                "unset NCCL_IB_GID_INDEX (NCCL picks a " + wantedType +
                    " GID itself since "
                    "2.21) or name the index show_gids lists for " +
                    wantedType);
      } else {
        ctx.add(kRoce, Verdict::Pass, subject,
                "NCCL_IB_GID_INDEX=" + *gidIndexEnv + " is " + it->type + "; " + evidence);
      }
    } else {
      // NCCL's own choice: a GID of the wanted RoCE version and address family, not link-local.
      auto usable = std::find_if(gids.begin(), gids.end(), [&](const Gid& g) {
        return g.type == wantedType && !isLinkLocal(g.value) && isIpv4Mapped(g.value) != wantIpv6;
      });
      const bool anyWanted =
          std::any_of(gids.begin(), gids.end(), [&](const Gid& g) { return g.type == wantedType; });
      if (usable != gids.end()) {
        ctx.add(kRoce, Verdict::Pass, subject,
                "NCCL can select " + wantedType + " GID index " + std::to_string(usable->index) +
                    "; " + evidence);
      } else if (anyWanted) {
        ctx.add(kRoce, Verdict::Fail, subject,
                "no " + wantedType + " GID with an " + (wantIpv6 ? "IPv6" : "IPv4") + " address; " +
                    evidence,
                "RoCE GIDs follow the interface's addresses: give " +
                    (netdev.empty() ? std::string("the port's interface") : netdev) + " an " +
                    (wantIpv6 ? "IPv6" : "IPv4") + " address (ip addr add ADDR/PREFIX dev " +
                    (netdev.empty() ? std::string("IF") : netdev) + "), then check show_gids");
      } else {
        ctx.add(kRoce, Verdict::Fail, subject,
                "no " + wantedType + " GID (NCCL_IB_ROCE_VERSION_NUM=" + version + "); " + evidence,
                "RoCE v1 is not routable and NCCL looks for v2: enable RoCE v2 on the NIC (its "
                "firmware and driver; Linux >= 4.5 lists a v2 GID per address) and check "
                "show_gids; NCCL_IB_ROCE_VERSION_NUM=1 only if the whole fabric is one L2 domain");
      }
    }
    // Traffic class: NCCL_IB_TC, or a driver's global override (mlx5: tc/1/traffic_class).
    const std::string tcFile = kInfiniband + "/" + p->device + "/tc/1/traffic_class";
    const std::optional<std::string> global = ctx.sysfs.readLine(tcFile);
    const std::string tcSubject = portName(*p) + " traffic class";
    if (global && !global->empty()) {
      ctx.add(kRoce, Verdict::Pass, tcSubject,
              "driver override '" + *global + "' in " + tcFile + " (it wins over NCCL_IB_TC" +
                  (tcEnv ? "=" + *tcEnv : std::string(", unset")) + ")");
    } else if (tcEnv) {
      std::optional<uint64_t> tc = text::parseUnsigned(text::trim(*tcEnv));
      ctx.add(kRoce, Verdict::Pass, tcSubject,
              "NCCL_IB_TC=" + *tcEnv +
                  (tc && *tc < 256 ? " (DSCP " + std::to_string(*tc >> 2) + ")" : "") +
                  "; no driver override in " + tcFile);
    } else {
      ctx.add(kRoce, Verdict::Warn, tcSubject,
              "NCCL_IB_TC unset and no driver override in " + tcFile +
                  ": RoCE traffic goes out with traffic class 0 (DSCP 0), lossy unless the "
                  "fabric keeps priority 0 lossless (NVIDIA/nccl#2383)",
              "set NCCL_IB_TC to the class the fabric keeps lossless (DSCP << 2, e.g. 106 for "
              "DSCP 26) and check the NIC's trust and PFC settings (mlnx_qos -i " +
                  (netdev.empty() ? std::string("IF") : netdev) + ")");
    }
  }
}

}  // namespace pilot::doctor::detail
