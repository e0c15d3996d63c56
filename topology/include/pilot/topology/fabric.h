// Which fabric NCCL's inter-node data will cross on this machine, from the RDMA ports the
// kernel shows and NCCL's own switches. One definition for every layer that needs it: the net
// plugin's transport choice (NCCL_PILOT_TRANSPORT=auto), the tuner's `fabric=` rule key and
// `nccl-pilot doctor`. Read from sysfs only (cheap: a few small files), so the tuner library,
// which NCCL may load as a separate copy, decides exactly as the net plugin does.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pilot/core/config.h"
#include "pilot/core/fabric.h"
#include "pilot/topology/sources.h"

namespace pilot::topology {

/// One port of an RDMA device:
/// /sys/class/infiniband/DEV/ports/N/{state,phys_state,link_layer,rate}.
struct RdmaPort {
  std::string device;     ///< mlx5_0
  int port = 0;           ///< 1-based, as the kernel numbers them
  std::string state;      ///< "ACTIVE", "DOWN", "INIT", ... ("4: ACTIVE" without the number)
  std::string physState;  ///< "LinkUp", "Disabled", "Polling", ...
  std::string linkLayer;  ///< "InfiniBand" or "Ethernet" ("" when unreadable)
  std::string rate;       ///< the kernel's text, e.g. "200 Gb/sec (4X HDR)"
};

/// Every port of every RDMA device under the root, sorted by device then port. Unreadable
/// entries give empty fields, never an error: a machine without RDMA gives an empty list.
std::vector<RdmaPort> listRdmaPorts(const SysfsRoot& sysfs);

struct FabricChoice {
  Fabric fabric = Fabric::Ethernet;
  /// NCCL's own IB transport will carry the data (fabric ib or roce): the net plugin then
  /// offers NCCL no device of its own under NCCL_PILOT_TRANSPORT=auto.
  bool rdma = false;
  /// One line for the logs: the port that decided ("mlx5_0 port 1 ACTIVE, InfiniBand"), or
  /// why there is no RDMA ("NCCL_IB_DISABLE=1", "no RDMA port ACTIVE (mlx5_0 port 1 DOWN)").
  std::string why;
};

/// The fabric NCCL will use. RDMA when some port NCCL_IB_HCA selects is ACTIVE with an
/// InfiniBand or Ethernet (RoCE) link layer and NCCL has not been told to leave IB alone
/// (NCCL_IB_DISABLE=1, or NCCL_NET naming another network); then InfiniBand when such a port is
/// InfiniBand (IB first), else RoCE. Everything else is Ethernet, including devices with another
/// link layer (AWS EFA reports "Unknown": NCCL's IB cannot drive it). Same ports and
/// environment -> same answer on every rank.
FabricChoice chooseFabric(const std::vector<RdmaPort>& ports, const EnvLookup& env);

/// chooseFabric on the ports under `sysfsRoot` (NCCL_PILOT_SYSFS_ROOT, "/" by default).
FabricChoice detectFabric(const EnvLookup& env);

}  // namespace pilot::topology
