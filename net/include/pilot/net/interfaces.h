// Which IP interfaces the socket transport uses, chosen the way NCCL's own socket transport does
// (src/misc/socket.cc ncclFindInterfaces, src/os/linux.cc ncclOsFindInterfaces):
// - NCCL_SOCKET_IFNAME: comma-separated prefixes; a leading `^` excludes the listed ones, a
//   leading `=` (after any `^`) asks for exact names;
// - NCCL_SOCKET_FAMILY: AF_INET or AF_INET6 keeps that family only;
// - unset: `ib*` first, else anything but docker*, lo and virbr*, else docker*, else lo, else
//   virbr*. Interfaces must be up and running; IPv6 loopback addresses never count; the first
//   usable address of an interface wins (getifaddrs lists IPv4 first).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <optional>
#include <string>
#include <vector>

#include "pilot/core/config.h"
#include "pilot/core/result.h"

namespace pilot::net {

/// An IPv4 or IPv6 socket address (port in network order, as in the sockaddr).
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  int family() const { return storage.ss_family; }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
  /// "10.0.0.1:5000", "[fe80::1%2]:5000"; the port is left out when it is 0.
  std::string toString() const;
};

struct NetInterface {
  std::string name;
  SocketAddress address;  ///< port 0
};

/// One address of one interface, as getifaddrs reports it (tests build these by hand).
struct InterfaceAddress {
  std::string name;
  unsigned int flags = 0;  ///< IFF_*
  SocketAddress address;
};

/// AF_INET, AF_INET6 or AF_UNSPEC (both) from NCCL_SOCKET_FAMILY; anything else is an error.
Expected<int> socketFamilyFromEnv(const EnvLookup& env);

/// The selection rules above applied to a list of addresses; at most `maxInterfaces`.
std::vector<NetInterface> selectInterfaces(const std::vector<InterfaceAddress>& all,
                                           const std::optional<std::string>& ifnameSpec, int family,
                                           size_t maxInterfaces = 32);

/// getifaddrs + selectInterfaces with NCCL_SOCKET_IFNAME / NCCL_SOCKET_FAMILY from `env`.
Expected<std::vector<NetInterface>> findInterfaces(const EnvLookup& env);

}  // namespace pilot::net
