// The job checks on what each process loaded: the NCCL that called our plugin (version and
// library, within each group), every libnccl a process mapped, the tuning table's digest and our
// plugins' ABIs and version. A version or library that differs between ranks of one
// communicator, a second libnccl in a process and table digests that differ are FAILs: ranks
// that disagree on NCCL's wire protocol or on an algorithm hang or corrupt data.
#include <algorithm>
#include <set>

#include "job_check.h"

namespace pilot::doctor::detail {
namespace {

const provenance::ProcessRecord& recordOf(const JobRank& r) {
  return r.process->record;
}

std::optional<std::string> unlessEmpty(const std::string& value) {
  if (value.empty()) return std::nullopt;
  return value;
}

/// "; its library: PATH" when the side's ranks all have the same NCCL path.
std::string libraryOf(const Side& side) {
  std::set<std::string> paths;
  for (const JobRank* r : side.ranks) paths.insert(recordOf(*r).nccl.path);
  if (paths.size() != 1 || paths.begin()->empty()) return "";
  return std::string(side.ranks.size() == 1 ? "; its" : "; their") +
         " library: " + shown(*paths.begin());
}

/// The values over every rank, for a PASS line: "V everywhere", or per group when groups differ.
std::string everywhere(const JobBuilder& b, const std::vector<Side>& sides,
                       const std::function<std::string(const std::string&)>& thing) {
  if (sides.size() == 1) return thing(sides.front().value) + " everywhere";
  std::string out = "alike within each communicator: ";
  for (size_t k = 0; k < sides.size() && k < 3; ++k) {
    out += (k ? "; " : "") + thing(sides[k].value) + " on " + rankList(sides[k].ranks);
  }
  return out + (sides.size() > 3 ? "; ..." : "") + " (" + b.scope() + ")";
}

}  // namespace

void checkNccl(JobBuilder& b) {
  const std::string fix =
      "run one NCCL on every rank: the same image or wheel everywhere (pip show "
      "nvidia-nccl-cu12; python -c 'import torch; print(torch.cuda.nccl.version())') and "
      "LD_LIBRARY_PATH alike on every node";
  Wording version;
  version.thing = [](const std::string& v) { return "NCCL " + shown(v, 32); };
  version.others = [](const std::string& v) { return "run " + shown(v, 32); };
  version.brief = [](const std::string& v) { return shown(v, 32); };
  version.differ = "NCCL versions differ";
  version.detail = libraryOf;
  Wording path;
  path.thing = [](const std::string& v) { return "NCCL from " + shown(v); };
  path.others = [](const std::string& v) { return "load " + shown(v); };
  path.brief = [](const std::string& v) { return shown(v); };
  path.differ = "NCCL library paths differ";
  const auto versionOf = [](const JobRank& r) { return unlessEmpty(recordOf(r).nccl.version); };
  const auto pathOf = [](const JobRank& r) { return unlessEmpty(recordOf(r).nccl.path); };
  for (const JobGroup& g : b.groups()) {
    reportSides(b, g, sidesOf(g.members, versionOf), version, "job-nccl", Verdict::Fail, fix);
    reportSides(b, g, sidesOf(g.members, pathOf), path, "job-nccl", Verdict::Fail, fix);
  }
  Members unknown;
  for (const JobRank* r : b.all()) {
    if (recordOf(*r).nccl.version.empty()) unknown.push_back(r);
  }
  if (!unknown.empty()) {
    b.add("job-nccl", Verdict::Warn, "NCCL version unknown on " + rankList(unknown),
          "the NCCL that called our plugin did not answer ncclGetVersion (found as: " +
              shown(recordOf(*unknown.front()).ncclHow, 64) + "): not compared",
          "");
  }
  const std::vector<Side> versions = sidesOf(b.all(), versionOf);
  const std::vector<Side> paths = sidesOf(b.all(), pathOf);
  if (versions.empty()) return;
  const std::string where = paths.size() == 1 ? " from " + shown(paths.front().value) : "";
  b.passUnlessFound("job-nccl", everywhere(b, versions, [&](const std::string& v) {
                      return "NCCL " + v + (versions.size() == 1 ? where : "");
                    }));
}

void checkLibnccl(JobBuilder& b) {
  // Processes grouped by the copies they map: one line per distinct set, however many ranks.
  std::map<std::string, Members> bySet;
  std::map<std::string, std::vector<const provenance::Library*>> libsOf;
  for (const JobRank* r : b.all()) {
    std::map<std::string, const provenance::Library*> byPath;
    for (const provenance::Library& lib : recordOf(*r).libraries) byPath.emplace(lib.path, &lib);
    if (byPath.size() < 2) continue;
    std::string key;
    std::vector<const provenance::Library*> libs;
    for (const auto& [path, lib] : byPath) {
      key += path + "\n" + lib->version + "\n";
      libs.push_back(lib);
    }
    bySet[key].push_back(r);
    libsOf[key] = std::move(libs);
  }
  for (const auto& [key, ranks] : bySet) {
    const std::vector<const provenance::Library*>& libs = libsOf[key];
    std::string copies, versions;
    for (size_t i = 0; i < libs.size() && i < 6; ++i) {
      const std::string v = libs[i]->version.empty() ? "version unknown" : libs[i]->version;
      copies += (i ? ", " : "") + shown(libs[i]->path) + " (" + v + ")";
      versions += (i ? ", " : "") + v;
    }
    if (libs.size() > 6) copies += " and " + std::to_string(libs.size() - 6) + " more";
    const std::string subject =
        std::to_string(libs.size()) + " libnccl mapped in " + rankList(ranks);
    const std::string& caller = recordOf(*ranks.front()).nccl.path;
    b.add("job-libnccl", Verdict::Fail, subject,
          copies + (caller.empty() ? "" : "; NCCL called our plugin from " + shown(caller)) +
              "; each copy has its own state: a communicator made by one is unknown to the other",
          "one libnccl per process: find what loads the other copy (grep libnccl "
          "/proc/PID/maps: torch's wheel nvidia-nccl-cu12, cupy, VLLM_NCCL_SO_PATH, LD_PRELOAD "
          "or LD_LIBRARY_PATH) and point it at the same library",
          subject + ": " + versions);
  }
  b.passUnlessFound("job-libnccl", "one libnccl mapped in every process");
}

void checkTable(JobBuilder& b) {
  Wording w;
  w.thing = [](const std::string& v) {
    return v.empty() ? std::string("no tuning table") : "tuning table sha256 " + v.substr(0, 12);
  };
  w.others = [](const std::string& v) {
    return v.empty() ? std::string("use none") : "use sha256 " + v.substr(0, 12);
  };
  w.brief = [](const std::string& v) {
    return v.empty() ? std::string("none") : "sha256 " + v.substr(0, 12);
  };
  w.differ = "tuning table digests differ";
  w.detail = [](const Side& side) {
    std::set<std::string> tables;
    for (const JobRank* r : side.ranks) tables.insert(recordOf(*r).table);
    if (tables.size() != 1 || tables.begin()->empty()) return std::string();
    return std::string(side.ranks.size() == 1 ? "; its" : "; their") +
           " table: " + shown(*tables.begin());
  };
  const auto digestOf = [](const JobRank& r) {
    return std::optional<std::string>(recordOf(r).tableSha256);
  };
  const std::string fix =
      "give every rank the same NCCL_PILOT_TUNER_TABLE file: ranks that choose different "
      "algorithms or protocols for one collective hang or corrupt it";
  for (const JobGroup& g : b.groups()) {
    reportSides(b, g, sidesOf(g.members, digestOf), w, "job-table", Verdict::Fail, fix);
  }
  const std::vector<Side> all = sidesOf(b.all(), digestOf);
  std::string table;
  if (all.size() == 1 && !all.front().value.empty()) {
    table = recordOf(*all.front().ranks.front()).table;
  }
  if (all.size() == 1 && all.front().value.empty()) {
    return b.passUnlessFound("job-table", "no tuning table on any rank");
  }
  b.passUnlessFound("job-table", everywhere(b, all, [&](const std::string& v) {
                      return w.thing(v) + (table.empty() ? "" : " (" + shown(table) + ")");
                    }));
}

void checkPlugins(JobBuilder& b) {
  std::set<std::string> kinds;
  for (const JobRank* r : b.all()) {
    for (const provenance::LoadedPlugin& p : recordOf(*r).plugins) kinds.insert(p.kind);
  }
  const std::string fix =
      "install one nccl-pilot build on every node and name the same file in NCCL_NET_PLUGIN, "
      "NCCL_TUNER_PLUGIN and NCCL_PROFILER_PLUGIN everywhere";
  for (const std::string& kind : kinds) {
    Wording w;
    const std::string name = shown(kind, 16) + " plugin";
    w.thing = [name](const std::string& v) {
      return v.empty() ? name + " not loaded" : name + " at ABI " + v;
    };
    w.others = [](const std::string& v) {
      return v.empty() ? std::string("do not load it") : "load it at " + v;
    };
    w.brief = [](const std::string& v) { return v.empty() ? std::string("not loaded") : v; };
    w.differ = name + " ABIs differ";
    const auto abiOf = [&kind](const JobRank& r) {
      std::set<int> abis;
      for (const provenance::LoadedPlugin& p : recordOf(r).plugins) {
        if (p.kind == kind) abis.insert(p.abi);
      }
      std::string v;
      for (int abi : abis) v += (v.empty() ? "v" : "+v") + std::to_string(abi);
      return std::optional<std::string>(v);
    };
    for (const JobGroup& g : b.groups()) {
      reportSides(b, g, sidesOf(g.members, abiOf), w, "job-plugins", Verdict::Warn, fix);
    }
  }
  Wording version;
  version.thing = [](const std::string& v) { return "nccl-pilot " + shown(v, 48); };
  version.others = [](const std::string& v) { return "run " + shown(v, 48); };
  version.brief = [](const std::string& v) { return shown(v, 48); };
  version.differ = "nccl-pilot versions differ";
  const auto versionOf = [](const JobRank& r) { return unlessEmpty(recordOf(r).pilotVersion); };
  for (const JobGroup& g : b.groups()) {
    reportSides(b, g, sidesOf(g.members, versionOf), version, "job-plugins", Verdict::Warn, fix);
  }
  const auto loaded = [](const JobRank& r) {
    // In a set: copies of the library add their plugins in the order NCCL happened to load them.
    std::set<std::string> plugins;
    for (const provenance::LoadedPlugin& p : recordOf(r).plugins) {
      plugins.insert(shown(p.kind, 16) + " v" + std::to_string(p.abi));
    }
    std::string out;
    for (const std::string& p : plugins) out += (out.empty() ? "" : ", ") + p;
    return std::optional<std::string>((out.empty() ? "no plugin recorded" : out) +
                                      " of nccl-pilot " + shown(recordOf(r).pilotVersion, 48));
  };
  b.passUnlessFound("job-plugins", everywhere(b, sidesOf(b.all(), loaded),
                                              [](const std::string& v) { return v; }));
}

}  // namespace pilot::doctor::detail
