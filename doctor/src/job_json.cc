// A record line's fields, read as provenance/record.h writes them. Every access asks the type
// first (nlohmann's get<> throws on another type, and a file from another tool or version is
// input, not a bug); lists stop at their bound, so a 4 MiB line of settings costs 256 of them.
#include "job_json.h"

#include <limits>
#include <optional>
#include <set>

#include "pilot/core/text.h"
#include "pilot/provenance/nccl_settings.h"

namespace pilot::doctor::detail {
namespace {

using json = nlohmann::json;
using provenance::SettingClass;

constexpr int64_t kMaxUnixMs = 1'000'000'000'000'000;
constexpr int64_t kMaxAbi = 1000;

std::optional<int64_t> asInteger(const json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

/// The fields of one object. The first problem is kept; a lenient reading (a newer format)
/// ignores a field of another type, or out of range, instead.
class Fields {
 public:
  Fields(const json& object, std::string where, bool lenient, std::string* problem)
      : object_(object), where_(std::move(where)), lenient_(lenient), problem_(problem) {}

  bool ok() const { return problem_->empty(); }

  /// The field, or nullptr when absent (or not an object to look in).
  const json* find(const char* key) const {
    if (!object_.is_object()) return nullptr;
    const auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  void text(const char* key, std::string* out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_string()) return wrong(key, "a string");
    *out = boundedText(v->get_ref<const std::string&>());
  }

  void integer(const char* key, int64_t* out, int64_t lo, int64_t hi) {
    const json* v = find(key);
    if (!v) return;
    const std::optional<int64_t> n = asInteger(*v);
    if (!n) return wrong(key, "an integer");
    if (*n < lo || *n > hi) {
      return fail(quoted(key) + " " + std::to_string(*n) + " is outside [" + std::to_string(lo) +
                  ", " + std::to_string(hi) + "]");
    }
    *out = *n;
  }

  /// The array or object under `key`; nullptr when absent or of another type (a problem then).
  const json* container(const char* key, bool array) {
    const json* v = find(key);
    if (!v) return nullptr;
    if (array ? v->is_array() : v->is_object()) return v;
    wrong(key, array ? "an array" : "an object");
    return nullptr;
  }

  void fail(std::string why) {
    if (!lenient_ && problem_->empty()) *problem_ = std::move(why);
  }

 private:
  std::string quoted(const char* key) const { return "\"" + where_ + key + "\""; }
  void wrong(const char* key, const char* what) { fail(quoted(key) + " is not " + what); }

  const json& object_;
  std::string where_;
  bool lenient_;
  std::string* problem_;
};

void readLibrary(Fields& f, provenance::Library* out) {
  f.text("version", &out->version);
  f.text("path", &out->path);
}

void readSetting(Fields& f, provenance::Setting* s) {
  f.text("name", &s->name);
  f.text("value", &s->value);
  std::string cls;
  f.text("class", &cls);
  f.text("source", &s->source);
  f.text("why", &s->why);
  f.text("closest", &s->closest);
  if (s->name.rfind("NCCL_", 0) != 0) {
    f.fail("a setting named \"" + s->name + "\": records hold NCCL_* names only");
    return;
  }
  if (!provenance::parseClassName(cls, &s->cls)) {
    // A class this reader does not know (a newer writer's): this reader's own judgement.
    const provenance::Classification c = provenance::classifySetting(s->name, s->value);
    s->cls = c.cls;
    if (s->why.empty()) s->why = c.why;
    if (s->closest.empty()) s->closest = c.closest;
  }
}

void readSettings(Fields& f, const json& list, bool lenient, provenance::ProcessRecord* r,
                  std::string* problem) {
  std::set<std::string> names;
  size_t index = 0;
  for (const json& item : list) {
    if (r->settings.size() >= provenance::kMaxSettings) {
      r->settingsDropped += list.size() - index;
      return;
    }
    ++index;
    if (!item.is_object()) {
      f.fail("\"settings\" holds something that is not an object");
      continue;
    }
    provenance::Setting s;
    Fields one(item, "settings[" + std::to_string(index - 1) + "].", lenient, problem);
    readSetting(one, &s);
    if (s.name.rfind("NCCL_", 0) != 0 || !names.insert(s.name).second) continue;
    r->settings.push_back(std::move(s));
  }
}

void readLists(Fields& f, bool lenient, provenance::ProcessRecord* r, std::string* problem) {
  if (const json* libs = f.container("libraries", true)) {
    for (const json& item : *libs) {
      if (r->libraries.size() >= provenance::kMaxLibraries) break;
      if (!item.is_object()) {
        f.fail("\"libraries\" holds something that is not an object");
        continue;
      }
      Fields one(item, "libraries[].", lenient, problem);
      provenance::Library lib;
      readLibrary(one, &lib);
      r->libraries.push_back(std::move(lib));
    }
  }
  if (const json* plugins = f.container("plugins", true)) {
    for (const json& item : *plugins) {
      if (r->plugins.size() >= kJobMaxListEntries) break;
      Fields one(item, "plugins[].", lenient, problem);
      if (!item.is_object()) {
        f.fail("\"plugins\" holds something that is not an object");
        continue;
      }
      provenance::LoadedPlugin p;
      int64_t abi = 0;
      one.text("kind", &p.kind);
      one.integer("abi", &abi, 0, kMaxAbi);
      one.text("path", &p.path);
      p.abi = static_cast<int>(abi);
      r->plugins.push_back(std::move(p));
    }
  }
  if (const json* settings = f.container("plugin_settings", false)) {
    for (const auto& [name, value] : settings->items()) {
      if (r->pluginSettings.size() >= kJobMaxListEntries) break;
      if (!value.is_string()) {
        f.fail("\"plugin_settings\"." + boundedText(name) + " is not a string");
        continue;
      }
      r->pluginSettings.emplace_back(boundedText(name), boundedText(value.get<std::string>()));
    }
  }
  if (const json* conf = f.container("conf_files", true)) {
    for (const json& item : *conf) {
      if (r->confFiles.size() >= kJobMaxListEntries) break;
      if (!item.is_string()) {
        f.fail("\"conf_files\" holds something that is not a string");
        continue;
      }
      r->confFiles.push_back(boundedText(item.get<std::string>()));
    }
  }
  if (const json* settings = f.container("settings", true))
    readSettings(f, *settings, lenient, r, problem);
}

bool decimalRank(const std::string& rank) {
  const std::optional<uint64_t> n = text::parseUnsigned(rank);
  return n && *n < static_cast<uint64_t>(kJobMaxRanks);
}

}  // namespace

std::string boundedText(std::string_view text) {
  size_t size = std::min(text.size(), kJobMaxTextBytes);
  if (size < text.size()) {
    // Back off to the first byte of a character: a cut inside one is not UTF-8 any more.
    while (size > 0 && (static_cast<unsigned char>(text[size]) & 0xc0) == 0x80) --size;
  }
  std::string out(text.substr(0, size));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

std::string recordFromJson(const json& line, JobProcess* out) {
  std::string problem;
  Fields strict(line, "", /*lenient=*/false, &problem);
  const json* format = strict.find("format");
  if (!format) return "no \"format\": not a provenance record of ours";
  const std::optional<int64_t> version = asInteger(*format);
  if (!version) return "\"format\" is not an integer";
  if (*version < 1) return "format " + std::to_string(*version) + " is no record format";
  out->format = *version;
  provenance::ProcessRecord& r = out->record;
  strict.text("node", &r.node);
  strict.integer("pid", &r.pid, 1, kJobMaxPid);
  if (!strict.ok()) return problem;
  if (r.node.empty() || r.pid == 0) return "no \"node\" or no \"pid\": whose record is it?";

  const bool lenient = *version > provenance::kRecordFormat;
  Fields f(line, "", lenient, &problem);
  int64_t written = 0;
  f.integer("written_ms", &written, 0, kMaxUnixMs);
  r.writtenMs = static_cast<uint64_t>(written);
  f.text("rank", &r.rank);
  if (!r.rank.empty() && !decimalRank(r.rank)) {
    f.fail("\"rank\" \"" + r.rank + "\" is not a decimal rank");
    r.rank.clear();
  }
  f.text("rank_from", &r.rankFrom);
  f.text("local_rank", &r.localRank);
  f.text("pilot_version", &r.pilotVersion);
  f.text("table", &r.table);
  f.text("table_sha256", &r.tableSha256);
  if (const json* nccl = f.container("nccl", false)) {
    Fields n(*nccl, "nccl.", lenient, &problem);
    readLibrary(n, &r.nccl);
    n.text("how", &r.ncclHow);
  }
  f.text("env_plugin", &r.envPlugin);
  readLists(f, lenient, &r, &problem);
  int64_t dropped = 0;
  f.integer("settings_dropped", &dropped, 0, int64_t{1} << 40);
  r.settingsDropped += static_cast<uint64_t>(dropped);
  return problem;
}

std::string memberFromJson(const json& line, std::string* comm, CommMember* out) {
  std::string problem;
  Fields f(line, "", /*lenient=*/false, &problem);
  f.text("comm", comm);
  f.text("node", &out->node);
  f.integer("pid", &out->pid, 1, kJobMaxPid);
  f.integer("nranks", &out->nranks, 1, kJobMaxRanks);
  f.integer("rank", &out->rank, 0, kJobMaxRanks - 1);
  if (!problem.empty()) return problem;
  if (comm->empty() || out->node.empty() || out->pid == 0 || out->nranks == 0)
    return "a communicator line without \"comm\", \"node\", \"pid\" or \"nranks\"";
  if (out->rank >= out->nranks) {
    return "rank " + std::to_string(out->rank) + " of a communicator of " +
           std::to_string(out->nranks);
  }
  return "";
}

}  // namespace pilot::doctor::detail
