// What one process really runs: the NCCL that called our plugin, every libnccl it maps, the
// NCCL plugin settings, which of our plugins NCCL loaded at which ABI, our version and table
// digest, and the effective NCCL_* settings (nccl.conf merged in), each classified. The plugin
// fills it at its first init (plugin/record); `nccl-pilot doctor --job` compares the records of
// a job's ranks (doctor/job_audit).
//
// On disk: `nccl_pilot_<node>_<pid>.provenance.json` in the metrics directory holds one JSON
// object per line: the process's first record starts the file, and each later one (another
// plugin kind or ABI, another copy of the library: NCCL dlopens each plugin name on its own) is
// appended. A line names the plugins of the copy that wrote it, so readers merge a process's
// lines (the newest for the rest). The profiler's copy's latest record is also a line of the
// summary (`nccl_pilot_<node>_<pid>.jsonl`):
//   {"kind":"provenance", "format":1, "node", "pid", "written_ms" (unix ms),
//    "rank" (the launcher's global rank: "" unknown), "rank_from" (the variable it came from),
//    "local_rank" ("" unknown), "pilot_version", "table" (NCCL_PILOT_TUNER_TABLE, "" none),
//    "table_sha256" ("" none or unreadable),
//    "nccl":{"version" ("2.28.9", "" unknown), "path" ("" unknown), "how"},
//    "libraries":[{"path", "version" ("" when ncclGetVersion did not answer)}, ...],
//    "plugin_settings":{"NCCL_NET_PLUGIN": value, ...} (only those set),
//    "plugins":[{"kind":"net"|"tuner"|"profiler", "abi":N, "path"}, ...],
//    "env_plugin" ("" none: else NCCL_ENV_PLUGIN's value, and the settings may differ from
//    what NCCL reads), "conf_files":[path, ...] (the nccl.conf files NCCL merged, existing),
//    "settings":[{"name", "value", "class", "source" ("env" or a conf file's path),
//                 "why" ("" for a plain setting), "closest" ("" unless unknown)}, ...],
//    "settings_dropped":N (past kMaxSettings)}
// Readers take any "format" up to theirs and ignore fields they do not know.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pilot/provenance/nccl_settings.h"

namespace pilot::provenance {

inline constexpr int kRecordFormat = 1;
/// Bounds, so a process with a huge environment writes a bounded record.
inline constexpr size_t kMaxSettings = 256;
inline constexpr size_t kMaxValueBytes = 512;
inline constexpr size_t kMaxLibraries = 32;

struct Library {
  std::string path;
  std::string version;  ///< "2.28.9"; "" unknown
};

struct LoadedPlugin {
  std::string kind;  ///< "net", "tuner", "profiler"
  int abi = 0;
  std::string path;  ///< the copy of our library NCCL called
};

struct Setting {
  std::string name, value;
  SettingClass cls = SettingClass::Nccl;
  std::string source = "env";  ///< "env" or the nccl.conf file that holds this value
  std::string why;             ///< what makes it debug-only, dangerous or deprecated
  std::string closest;         ///< for an unknown name: the known name it likely misspells
};

struct ProcessRecord {
  std::string node;
  int64_t pid = 0;
  uint64_t writtenMs = 0;
  std::string rank, rankFrom, localRank;
  std::string pilotVersion;
  std::string table, tableSha256;
  Library nccl;         ///< the NCCL that called our init
  std::string ncclHow;  ///< how it was found ("the caller of init", ...)
  std::vector<Library> libraries;
  std::vector<std::pair<std::string, std::string>> pluginSettings;
  std::vector<LoadedPlugin> plugins;
  std::string envPlugin;
  std::vector<std::string> confFiles;
  std::vector<Setting> settings;
  uint64_t settingsDropped = 0;
};

/// The JSON line (no newline).
std::string renderRecordJson(const ProcessRecord& record);

/// The textfile's series: nccl_pilot_process_info{node, pid, rank, nccl_version, nccl_path,
/// pilot_version, table_sha256, libnccl_copies} 1, nccl_pilot_process_libnccl_mapped{path,
/// version} 1 per library, and nccl_pilot_process_settings{class} (how many settings of each
/// class), each with its HELP and TYPE.
std::string renderRecordPrometheus(const ProcessRecord& record);

/// The launcher's global and local rank from the environment (RANK, SLURM_PROCID,
/// OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK; LOCAL_RANK, SLURM_LOCALID,
/// OMPI_COMM_WORLD_LOCAL_RANK), each a decimal number or left "".
struct LauncherRank {
  std::string rank, from, local;
};
LauncherRank launcherRank(const std::function<const char*(const char*)>& getenv);

/// What a record says is wrong with its own process, for the one WARN line: several libnccl,
/// debug-only or dangerous settings, unknown names. "" when nothing.
std::string ownProblems(const ProcessRecord& record);

}  // namespace pilot::provenance
