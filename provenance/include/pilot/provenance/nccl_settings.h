// What each NCCL_* name is: a setting NCCL reads, one of ours, one other software reads, a
// debug-only switch, a dangerous one, a deprecated spelling, or a name nobody reads (a typo NCCL
// silently ignores, with the known name it likely misspells). Shared by the plugin's process
// record and `nccl-pilot doctor`'s env check, so both say the same of a name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pilot::provenance {

enum class SettingClass {
  Nccl,        ///< a system setting NCCL reads
  Pilot,       ///< NCCL_PILOT_*: ours
  Other,       ///< read by other software (NCCL's plugins, PyTorch, nccl-tests)
  Debug,       ///< a debugging switch: costs bandwidth or bypasses NCCL's own choices
  Dangerous,   ///< can corrupt data or hang a job where NCCL would not have allowed it
  Deprecated,  ///< an old spelling: ignored, or read under another name now
  Unknown,     ///< read by nobody we know of
};
/// "nccl", "pilot", "other", "debug", "dangerous", "deprecated", "unknown".
const char* className(SettingClass cls);
/// The reverse; false for anything else.
bool parseClassName(std::string_view text, SettingClass* cls);

struct Classification {
  SettingClass cls = SettingClass::Nccl;
  std::string why;      ///< debug, dangerous, deprecated: what it does to a job
  std::string closest;  ///< unknown: the known name within a typo's reach, or ""
};

/// `name` must start with NCCL_; `value` matters for some (NCCL_PROTO naming LL128 is
/// dangerous, NCCL_P2P_DISABLE=0 leaves NCCL's choice). `rdmaUp`: this host has an RDMA port
/// NCCL's IB transport would use, so NCCL_IB_DISABLE=1 is a debugging switch (on an Ethernet
/// host it is a plain setting).
Classification classifySetting(std::string_view name, std::string_view value, bool rdmaUp = false);

/// Every NCCL_* name NCCL 2.18 .. 2.30 reads, sorted (gathered from NCCL's sources).
const std::vector<std::string_view>& ncclVariableNames();
/// Known to NCCL, to us or to other software reading NCCL_* names.
bool knownName(std::string_view name);
/// The known name closest to `name` within a typo's reach (edits and adjacent transpositions,
/// 2 for short names, about one in five letters for long ones), or "".
std::string closestKnownName(std::string_view name);

/// Settings whose value is expected to differ between ranks (a host id, the topology file our
/// net plugin writes per process): `doctor --job` does not compare them.
bool differsByDesign(std::string_view name, std::string_view value);

}  // namespace pilot::provenance
