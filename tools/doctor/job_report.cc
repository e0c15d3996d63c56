// `nccl-pilot doctor --job` output: the findings in doctor's line format, the files that could
// not be used, the summary; or one JSON object with every rank's record as read.
#include <set>

#include "doctor/report.h"
#include "pilot/provenance/nccl_settings.h"

namespace pilot::cli {
namespace {

using json = nlohmann::ordered_json;

json rankJson(const doctor::JobRank& r) {
  const provenance::ProcessRecord& p = r.process->record;
  json libraries = json::array(), plugins = json::array(), settings = json::array();
  for (const provenance::Library& lib : p.libraries)
    libraries.push_back({{"path", lib.path}, {"version", lib.version}});
  for (const provenance::LoadedPlugin& plugin : p.plugins)
    plugins.push_back({{"kind", plugin.kind}, {"abi", plugin.abi}, {"path", plugin.path}});
  for (const provenance::Setting& s : p.settings) {
    settings.push_back({{"name", s.name},
                        {"value", s.value},
                        {"class", provenance::className(s.cls)},
                        {"source", s.source}});
  }
  return {{"rank", r.rank >= 0 ? json(r.rank) : json(nullptr)},
          {"rank_from", r.rankFrom},
          {"node", r.node},
          {"pid", r.pid},
          {"label", r.label},
          {"nccl_version", p.nccl.version},
          {"nccl_path", p.nccl.path},
          {"libraries", std::move(libraries)},
          {"plugins", std::move(plugins)},
          {"pilot_version", p.pilotVersion},
          {"table", p.table},
          {"table_sha256", p.tableSha256},
          {"env_plugin", p.envPlugin},
          {"settings", std::move(settings)},
          {"settings_dropped", p.settingsDropped},
          {"file", r.process->file}};
}

size_t nodesOf(const doctor::JobAudit& audit) {
  std::set<std::string> nodes;
  for (const doctor::JobRank& r : audit.ranks) nodes.insert(r.node);
  return nodes.size();
}

}  // namespace

void printJobText(std::ostream& out, const doctor::JobAudit& audit) {
  out << "nccl-pilot doctor --job " << audit.job << ": " << audit.scope << "\n";
  for (const doctor::Finding& f : audit.findings) printFinding(out, f);
  for (const std::string& note : audit.notes) out << "note: " << note << "\n";
  const doctor::Summary s = doctor::summarize(audit.findings);
  out << "summary: " << s.pass << " PASS, " << s.warn << " WARN, " << s.fail << " FAIL, " << s.skip
      << " SKIP (exit " << doctor::exitStatus(s) << ")\n";
}

json jobJson(const doctor::JobAudit& audit) {
  json out;
  out["job"] = audit.job;
  json ranks = json::array(), checks = json::array();
  for (const doctor::JobRank& r : audit.ranks) ranks.push_back(rankJson(r));
  for (const doctor::Finding& f : audit.findings) checks.push_back(findingJson(f));
  out["ranks"] = std::move(ranks);
  out["checks"] = std::move(checks);
  out["notes"] = audit.notes;
  const doctor::Summary s = doctor::summarize(audit.findings);
  out["summary"] = {{"ranks", audit.ranks.size()},
                    {"nodes", nodesOf(audit)},
                    {"scope", audit.scope},
                    {"pass", s.pass},
                    {"warn", s.warn},
                    {"fail", s.fail},
                    {"skip", s.skip},
                    {"exit", doctor::exitStatus(s)}};
  return out;
}

}  // namespace pilot::cli
