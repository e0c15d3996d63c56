// Helpers the nccl-tests parsers share: undoing launcher decorations, reading numbers as
// nccl-tests prints them, and naming collectives and NCCL versions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pilot::calibration::detail {

/// One input line with launcher decorations removed.
struct CleanLine {
  std::string text;
  std::string tag;  ///< "[1,0]" from mpirun --tag-output, "0" from srun --label; "" = none
};

/// Drops a trailing CR, every Open MPI "[job,rank]<stdout>:" / "<stderr>:" tag (they can sit
/// mid-row when a row is written in pieces) and a leading srun --label "N: " prefix.
CleanLine cleanLine(std::string_view raw);

/// A number as nccl-tests prints it: "12.5", "2e+06", "-1". nullopt for "N/A", "inf", "nan"
/// and anything not consumed whole.
std::optional<double> parseNumber(std::string_view s);

/// "all_reduce_perf" (or a path to it) -> "allreduce"; other tests keep their base name
/// ("alltoall", "sendrecv"). nullopt when it is not an nccl-tests program name.
std::optional<std::string> collectiveFromProgram(std::string_view program);

/// The one collective a file or directory name mentions ("p5-2n-allreduce-a.txt",
/// "all_gather_output.dat.3"); nullopt when none or several.
std::optional<std::string> collectiveFromName(std::string_view name);

/// True for the five collectives NCCL's tuner decides.
bool isTunedCollective(std::string_view canonicalName);

/// NCCL_VERSION_CODE (22902) -> "2.29.2"; "" for codes before 2.9's scheme.
std::string ncclVersionFromCode(long code);

/// "2.29.2+cuda13.1" -> "2.29.2".
std::string stripVersionSuffix(std::string_view version);

/// NCCL's INFO lines about its network, collected while a run is read.
struct NetworkLog {
  std::string network;  ///< "Using network NAME": Socket, IB, or a net plugin's name
  bool ibLink = false, roceLink = false;  ///< "NET/IB : Using [0]mlx5_0:1/IB ..." or "/RoCE"
};

/// Reads "Using network NAME" and "NET/IB : Using [0]dev:port/IB|RoCE ..." (the text after
/// "NCCL INFO"); false for any other line.
bool readNetworkLine(std::string_view info, NetworkLog& log);

/// The fabric= bits (tuner::bit(pilot::Fabric)) a logged network implies, as topology/fabric.h
/// defines the fabric: Socket (NCCL's TCP transport) and Pilot (ours, offered only where
/// NCCL's IB transport does not carry the data) are ethernet; IB is ib when a device NCCL
/// listed has an InfiniBand link layer, roce when all are RoCE, either when it listed none.
/// Another net plugin (Libfabric, ...) says nothing certain: 0.
uint8_t fabricsOfNetwork(const NetworkLog& log);

/// The fabric= bits an environment implies: NCCL_IB_DISABLE non-zero or NCCL_NET naming a
/// network other than IB keep NCCL's IB transport out, which topology/fabric.h calls ethernet;
/// 0 otherwise (the ports decide, and the environment does not show them).
uint8_t fabricsOfEnvironment(std::string_view ibDisable, std::string_view net);

/// The bits as the table's fabric= key writes them ("ib|roce"); "" for 0.
std::string fabricsText(uint8_t fabrics);

/// The file name without its directories.
std::string_view baseName(std::string_view path);

}  // namespace pilot::calibration::detail
