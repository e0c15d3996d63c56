#include "pilot/net/interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <cerrno>
#include <cstring>

#include "pilot/core/nccl_list.h"
#include "pilot/core/text.h"

namespace pilot::net {
namespace {

constexpr const char* kIfnameVar = "NCCL_SOCKET_IFNAME";
constexpr const char* kFamilyVar = "NCCL_SOCKET_FAMILY";

bool usable(const InterfaceAddress& a, int family) {
  const int f = a.address.family();
  if (f != AF_INET && f != AF_INET6) return false;
  // Up and with a carrier, like NCCL (IFF_RUNNING implies the link is usable).
  if ((a.flags & IFF_UP) == 0 || (a.flags & IFF_RUNNING) == 0) return false;
  if (family != AF_UNSPEC && f != family) return false;
  if (f == AF_INET6) {
    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(&a.address.storage);
    if (IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr)) return false;
  }
  return true;
}

std::vector<NetInterface> pick(const std::vector<InterfaceAddress>& all, const NcclNameList& filter,
                               int family, size_t maxInterfaces) {
  std::vector<NetInterface> out;
  for (const InterfaceAddress& a : all) {
    if (out.size() >= maxInterfaces) break;
    if (!usable(a, family) || !filter.matches(a.name)) continue;
    bool seen = false;
    for (const NetInterface& i : out) seen = seen || i.name == a.name;
    if (seen) continue;  // first address wins
    NetInterface i{a.name, a.address};
    if (i.address.family() == AF_INET) {
      reinterpret_cast<sockaddr_in*>(&i.address.storage)->sin_port = 0;
    } else {
      reinterpret_cast<sockaddr_in6*>(&i.address.storage)->sin6_port = 0;
    }
    out.push_back(std::move(i));
  }
  return out;
}

}  // namespace

std::string SocketAddress::toString() const {
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  std::string out;
  if (family() == AF_INET) {
    const auto* sin = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
    port = ntohs(sin->sin_port);
    out = host;
  } else if (family() == AF_INET6) {
    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
    port = ntohs(sin6->sin6_port);
    out = std::string("[") + host;
    if (sin6->sin6_scope_id != 0) out += "%" + std::to_string(sin6->sin6_scope_id);
    out += "]";
  } else {
    return "<no address>";
  }
  if (port != 0) out += ":" + std::to_string(port);
  return out;
}

Expected<int> socketFamilyFromEnv(const EnvLookup& env) {
  auto value = readText(env, kFamilyVar);
  if (!value) return AF_UNSPEC;
  if (*value == "AF_INET") return AF_INET;
  if (*value == "AF_INET6") return AF_INET6;
  return Error{std::string(kFamilyVar) + "=" + *value + " is neither AF_INET nor AF_INET6"};
}

std::vector<NetInterface> selectInterfaces(const std::vector<InterfaceAddress>& all,
                                           const std::optional<std::string>& ifnameSpec, int family,
                                           size_t maxInterfaces) {
  if (ifnameSpec && ifnameSpec->size() > 1) {  // NCCL ignores a one-character value
    return pick(all, NcclNameList::parse(*ifnameSpec), family, maxInterfaces);
  }
  for (const char* spec : {"ib", "^docker,lo,virbr", "docker", "lo", "virbr"}) {
    auto found = pick(all, NcclNameList::parse(spec), family, maxInterfaces);
    if (!found.empty()) return found;
  }
  return {};
}

Expected<std::vector<NetInterface>> findInterfaces(const EnvLookup& env) {
  auto family = socketFamilyFromEnv(env);
  if (!family) return Error{family.error()};
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Error{std::string("getifaddrs: ") + std::strerror(errno)};
  std::vector<InterfaceAddress> all;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_name == nullptr) continue;
    const int f = it->ifa_addr->sa_family;
    if (f != AF_INET && f != AF_INET6) continue;
    InterfaceAddress a;
    a.name = it->ifa_name;
    a.flags = it->ifa_flags;
    a.address.length = f == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&a.address.storage, it->ifa_addr, a.address.length);
    all.push_back(std::move(a));
  }
  freeifaddrs(list);
  return selectInterfaces(all, readText(env, kIfnameVar), *family);
}

}  // namespace pilot::net
