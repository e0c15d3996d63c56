// The one typed table of settings the library reads from the environment (and so from
// nccl.conf, which NCCL copies into the environment before it loads plugins).
// docs/configuration.md lists every entry; a test keeps the two in step.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/core/result.h"

namespace pilot {

enum class SettingType { Path, Bool, Enum, Text };

struct SettingInfo {
  const char* name;  ///< environment variable
  SettingType type;
  const char* defaultValue;  ///< as written in the environment; "" = unset
  const char* description;   ///< one line, for docs and `nccl-pilot version --settings`
  const char* choices;       ///< for Enum: '|'-separated; else nullptr
};

/// Every setting the library knows, in documentation order.
const std::vector<SettingInfo>& allSettings();

/// Where settings come from. The process environment in production, a map in tests.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
EnvLookup processEnv();

/// Typed accessors with range checks. A malformed value is an Error naming the variable.
Expected<bool> readBool(const EnvLookup& env, const char* name, bool fallback);
std::optional<std::string> readText(const EnvLookup& env, const char* name);
/// One of `choices` ('|'-separated), matched case-insensitively and returned as spelled there.
Expected<std::string> readChoice(const EnvLookup& env, const char* name, const char* choices,
                                 const char* fallback);
/// An integer in [low, high]: decimal, or with `bytes` a byte count with a binary suffix
/// (64K, 1M). Unset or blank gives `fallback`; anything else is an Error naming the variable.
Expected<uint64_t> readUnsigned(const EnvLookup& env, const char* name, uint64_t low, uint64_t high,
                                uint64_t fallback, bool bytes = false);

namespace setting {
constexpr const char* kTunerTable = "NCCL_PILOT_TUNER_TABLE";
constexpr const char* kTunerConfigFile = "NCCL_TUNER_CONFIG_FILE";
constexpr const char* kTunerStrict = "NCCL_PILOT_TUNER_STRICT";
constexpr const char* kTunerEnable = "NCCL_PILOT_TUNER";
constexpr const char* kTunerTableSha256 = "NCCL_PILOT_TUNER_TABLE_SHA256";
constexpr const char* kTunerFabric = "NCCL_PILOT_TUNER_FABRIC";
constexpr const char* kTunerExplore = "NCCL_PILOT_TUNER_EXPLORE";
constexpr const char* kTunerExploreDigest = "NCCL_PILOT_TUNER_EXPLORE_DIGEST";
constexpr const char* kNcclAlgo = "NCCL_ALGO";
constexpr const char* kNcclProto = "NCCL_PROTO";
constexpr const char* kNcclDebug = "NCCL_DEBUG";
// Net plugin and topology.
constexpr const char* kTopo = "NCCL_PILOT_TOPO";
constexpr const char* kTopoRepair = "NCCL_PILOT_TOPO_REPAIR";
constexpr const char* kTopoDump = "NCCL_PILOT_TOPO_DUMP";
constexpr const char* kHwlocXml = "NCCL_PILOT_HWLOC_XML";
constexpr const char* kSysfsRoot = "NCCL_PILOT_SYSFS_ROOT";
constexpr const char* kTransport = "NCCL_PILOT_TRANSPORT";
constexpr const char* kNcclTopoFile = "NCCL_TOPO_FILE";  ///< NCCL's own; we only set it
}  // namespace setting

}  // namespace pilot
