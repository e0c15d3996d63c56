// The fabric NCCL's inter-node data crosses, as a name every layer can use: the tuning table's
// `fabric=` key (tuner/), the transport choice and detection (topology/fabric.h), doctor.
#pragma once

#include <optional>
#include <string_view>

namespace pilot {

enum class Fabric {
  InfiniBand,  ///< NCCL's IB transport over an InfiniBand link layer
  RoCE,        ///< NCCL's IB transport over an Ethernet link layer (RoCE)
  Ethernet,    ///< no usable RDMA: TCP sockets (NCCL's Socket transport, or ours)
};
constexpr int kNumFabrics = 3;

/// "ib", "roce", "ethernet": the spelling of the table's `fabric=` key and of log lines.
const char* fabricName(Fabric fabric);
/// Inverse of fabricName (case-insensitive; also "infiniband", "eth").
std::optional<Fabric> parseFabric(std::string_view name);

}  // namespace pilot
