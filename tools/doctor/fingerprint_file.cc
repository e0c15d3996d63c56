#include "doctor/fingerprint_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "pilot/core/file.h"
#include "pilot/version.h"

namespace pilot::cli {
namespace {

constexpr const char* kFormat = "nccl-pilot-doctor-fingerprint";
constexpr int kFormatVersion = 1;
constexpr size_t kMaxFileBytes = 4u << 20;  // a fingerprint is a few KiB
constexpr size_t kMaxFiles = 100000;        // a very large cluster
constexpr size_t kMaxFieldBytes = 16u << 10;

std::optional<doctor::Verdict> parseVerdict(const std::string& s) {
  for (doctor::Verdict v : {doctor::Verdict::Pass, doctor::Verdict::Warn, doctor::Verdict::Fail,
                            doctor::Verdict::Skip}) {
    if (s == doctor::verdictName(v)) return v;
  }
  return std::nullopt;
}

std::string bounded(const nlohmann::json& j) {
  std::string s = j.get<std::string>();
  if (s.size() > kMaxFieldBytes) s.resize(kMaxFieldBytes);
  return s;
}

Expected<doctor::Fingerprint> parseFingerprint(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{"not a JSON object"};
  if (!j.contains("format") || j["format"] != kFormat)
    return Error{std::string("not a doctor fingerprint (\"format\" is not \"") + kFormat + "\")"};
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != kFormatVersion)
    return Error{"fingerprint format version is not " + std::to_string(kFormatVersion)};
  if (!j.contains("node") || !j["node"].is_string() || j["node"].get<std::string>().empty())
    return Error{"no \"node\""};
  if (!j.contains("facts") || !j["facts"].is_object()) return Error{"no \"facts\" object"};
  doctor::Fingerprint f;
  f.node = bounded(j["node"]);
  for (const auto& [key, value] : j["facts"].items()) {
    if (!value.is_string()) return Error{"fact " + key.substr(0, 64) + " is not a string"};
    f.facts[key.substr(0, kMaxFieldBytes)] = bounded(value);
  }
  if (j.contains("checks") && j["checks"].is_array()) {
    for (const nlohmann::json& c : j["checks"]) {
      if (!c.is_object()) continue;
      auto field = [&](const char* k) {
        return c.contains(k) && c[k].is_string() ? bounded(c[k]) : std::string();
      };
      std::optional<doctor::Verdict> v = parseVerdict(field("status"));
      if (!v) continue;
      f.findings.push_back(
          doctor::Finding{field("id"), *v, field("subject"), field("evidence"), field("fix")});
    }
  }
  return f;
}

}  // namespace

std::string safeNodeName(const std::string& node) {
  std::string out;
  for (char c : node.substr(0, 200)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty() || out[0] == '.') out.insert(0, "node");
  return out;
}

Status writeFingerprint(const std::string& dir, const std::string& node,
                        const doctor::DoctorReport& report) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    return Error{"cannot create " + dir + ": " + std::strerror(errno)};
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["version"] = kFormatVersion;
  j["node"] = node;
  j["tool"] = std::string("nccl-pilot ") + pilot::kVersion;
  j["machine"] = report.machine;
  j["facts"] = report.facts;
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  for (const doctor::Finding& f : report.findings) checks.push_back(findingJson(f));
  j["checks"] = std::move(checks);
  const std::string name = safeNodeName(node);
  const std::string final = dir + "/" + name + ".json";
  const std::string temporary = dir + "/." + name + ".json." + std::to_string(::getpid());
  if (Status s = writeFile(temporary, j.dump(2) + "\n"); !s.ok()) return s;
  if (std::rename(temporary.c_str(), final.c_str()) != 0) {
    std::remove(temporary.c_str());
    return Error{"cannot write " + final + ": " + std::strerror(errno)};
  }
  return Status::success();
}

Expected<std::vector<doctor::Fingerprint>> readFingerprints(
    const std::string& dir, std::vector<UnreadableFingerprint>* unreadable) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return Error{"cannot list " + dir + ": " + std::strerror(errno)};
  std::vector<std::string> files;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > 5 && name[0] != '.' && name.compare(name.size() - 5, 5, ".json") == 0)
      files.push_back(name);
    if (files.size() >= kMaxFiles) break;
  }
  ::closedir(d);
  std::sort(files.begin(), files.end());
  std::vector<doctor::Fingerprint> out;
  for (const std::string& name : files) {
    const std::string path = dir + "/" + name;
    std::string content;
    const ReadOutcome read = readFileUpTo(path, kMaxFileBytes, &content);
    if (read != ReadOutcome::Ok) {
      unreadable->push_back({path, read == ReadOutcome::TooLarge
                                       ? "larger than " + std::to_string(kMaxFileBytes) + " bytes"
                                       : "cannot be read"});
      continue;
    }
    Expected<doctor::Fingerprint> f = parseFingerprint(content);
    if (!f.ok()) {
      unreadable->push_back({path, f.error()});
      continue;
    }
    auto same = std::find_if(out.begin(), out.end(),
                             [&](const doctor::Fingerprint& o) { return o.node == f->node; });
    if (same != out.end()) {
      unreadable->push_back({path, "a second fingerprint of node " + f->node});
      continue;
    }
    out.push_back(std::move(f.value()));
  }
  std::sort(out.begin(), out.end(), [](const doctor::Fingerprint& a, const doctor::Fingerprint& b) {
    return a.node < b.node;
  });
  return out;
}

}  // namespace pilot::cli
