// The job reader: the record files and summaries under a metrics directory (a shared filesystem,
// or each node's files gathered into a subfolder), read line by line within job_audit.h's
// bounds. A summary is mostly other kinds of lines: only those that can be "provenance" or
// "communicator" lines are parsed. A file that cannot be used is one note naming it (and the
// line) and why; every record of the other files is kept.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "job_json.h"
#include "pilot/core/file.h"
#include "pilot/core/parallel.h"
#include "pilot/core/text.h"
#include "pilot/doctor/job_audit.h"

namespace pilot::doctor {
namespace {

using text::endsWith;

namespace fs = std::filesystem;
using json = nlohmann::json;

bool isSummaryName(std::string_view name) {
  return name.rfind("nccl_pilot_", 0) == 0 && endsWith(name, ".jsonl");
}
bool isRecordName(std::string_view name) {
  return name.rfind("nccl_pilot_", 0) == 0 && endsWith(name, ".provenance.json");
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

/// Splits bytes fed in chunks into lines of at most kJobMaxLineBytes; a longer line is handed
/// on as "too long" with its first bytes only, so memory stays bounded whatever the file.
class LineSplitter {
 public:
  /// fn(number, line, tooLong) -> false to stop. Returns false once fn stopped.
  template <typename Fn>
  bool feed(std::string_view chunk, Fn& fn) {
    while (!chunk.empty()) {
      const size_t end = chunk.find('\n');
      const std::string_view part = chunk.substr(0, end);
      keep(part);
      if (end == std::string_view::npos) return true;
      chunk.remove_prefix(end + 1);
      if (!emit(fn)) return false;
    }
    return true;
  }
  template <typename Fn>
  bool finish(Fn& fn) {
    return line_.empty() && !tooLong_ ? true : emit(fn);
  }

 private:
  void keep(std::string_view part) {
    const size_t room = kJobMaxLineBytes - std::min(kJobMaxLineBytes, line_.size());
    if (part.size() > room) tooLong_ = true;
    line_.append(part.substr(0, std::min(room, part.size())));
  }
  template <typename Fn>
  bool emit(Fn& fn) {
    const bool go = fn(++number_, std::string_view(line_), tooLong_);
    line_.clear();
    tooLong_ = false;
    return go;
  }

  std::string line_;
  bool tooLong_ = false;
  size_t number_ = 0;
};

/// What one file has told so far: its first problem becomes its one note.
struct FileState {
  FileState(std::string p, bool s) : path(std::move(p)), summary(s) {}
  std::string path;
  bool summary = false;
  bool sawLine = false;
  std::string problem;  ///< "LINE: why" or ": why"
  size_t moreProblems = 0;
  int64_t newerFormat = 0;
  void add(size_t line, const std::string& why) {
    if (!problem.empty()) {
      ++moreProblems;
      return;
    }
    problem = (line ? ":" + std::to_string(line) : std::string()) + ": " + why;
  }
};

/// One file as read, before it meets the others: what it says (records, memberships, each with
/// its line) and its problems. Files are read on every core, then applied in order.
struct FileRecords {
  explicit FileRecords(FileState s) : state(std::move(s)) {}
  FileState state;
  std::vector<std::pair<size_t, JobProcess>> processes;
  std::vector<std::tuple<size_t, std::string, CommMember>> members;
};

class Reader {
 public:
  explicit Reader(JobRecords* out) : out_(out) {
    for (size_t i = 0; i < out->processes.size(); ++i) {
      const provenance::ProcessRecord& r = out->processes[i].record;
      index_[{r.node, r.pid}] = i;
    }
    for (const auto& [comm, members] : out->comms) {
      for (const CommMember& m : members) memberships_.insert({comm, m.node, m.pid});
    }
  }

  void path(const std::string& input, std::vector<std::pair<std::string, bool>>* files) {
    std::error_code ec;
    if (!fs::is_directory(input, ec)) {
      if (!fs::exists(input, ec)) return note(input + ": no such file or directory");
      files->push_back({input, endsWith(input, ".jsonl")});
      return;
    }
    fs::recursive_directory_iterator it(input, fs::directory_options::skip_permission_denied, ec);
    if (ec) return note(input + ": cannot list (" + ec.message() + ")");
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) return note(input + ": listing stopped (" + ec.message() + ")");
      if (++entries_ > kJobMaxEntries) {
        return note(input + ": more than " + std::to_string(kJobMaxEntries) +
                    " entries: the rest not looked at");
      }
      if (it.depth() >= kJobMaxDepth) it.disable_recursion_pending();
      const std::string name = it->path().filename().string();
      const bool summary = isSummaryName(name);
      if (!summary && !isRecordName(name)) continue;
      if (it->is_regular_file(ec)) files->push_back({it->path().string(), summary});
    }
  }

  /// Reads one file; touches nothing shared (files are read on several threads).
  static FileRecords file(const std::string& path, bool summary) {
    FileRecords rec(FileState(path, summary));
    if (summary) {
      streamSummary(&rec);
    } else {
      std::string text;
      switch (readFileUpTo(path, kJobMaxRecordFileBytes, &text)) {
        case ReadOutcome::Ok:
          lines(&rec, text);
          break;
        case ReadOutcome::TooLarge:
          rec.state.add(0, "larger than " + std::to_string(kJobMaxRecordFileBytes >> 20) +
                               " MiB: not a record of ours");
          break;
        default:
          rec.state.add(0, "cannot read");
      }
    }
    return rec;
  }

  static FileRecords text(const std::string& path, std::string_view bytes) {
    FileRecords rec(FileState(path, endsWith(path, ".jsonl")));
    lines(&rec, bytes);
    return rec;
  }

  /// What one file says, added to the job's records (in file order, on one thread).
  void apply(FileRecords* rec) {
    ++out_->filesRead;
    for (auto& [number, p] : rec->processes) provenance(&rec->state, number, std::move(p));
    for (auto& [number, comm, m] : rec->members) member(&rec->state, number, comm, std::move(m));
    close(rec->state);
  }

  void note(std::string line) {
    if (out_->notes.size() < kJobMaxNotes) {
      out_->notes.push_back(std::move(line));
    } else if (out_->notes.size() == kJobMaxNotes) {
      out_->notes.push_back("more notes not shown");
    }
  }

 private:
  static void lines(FileRecords* rec, std::string_view bytes) {
    LineSplitter split;
    auto fn = [&](size_t n, std::string_view l, bool tooLong) { return line(rec, n, l, tooLong); };
    if (split.feed(bytes, fn)) split.finish(fn);
  }

  static void streamSummary(FileRecords* rec) {
    FileState* state = &rec->state;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(state->path.c_str(), "rb"),
                                                      &std::fclose);
    if (!f) return state->add(0, "cannot read");
    LineSplitter split;
    auto fn = [&](size_t n, std::string_view l, bool tooLong) { return line(rec, n, l, tooLong); };
    std::string chunk(1u << 16, '\0');
    size_t total = 0;
    while (true) {
      const size_t got = std::fread(chunk.data(), 1, chunk.size(), f.get());
      if (got == 0) break;
      total += got;
      if (!split.feed(std::string_view(chunk.data(), got), fn)) return;
      if (total >= kJobMaxSummaryBytes) {
        return state->add(0, "larger than " + std::to_string(kJobMaxSummaryBytes >> 20) +
                                 " MiB: the rest not read");
      }
    }
    if (std::ferror(f.get())) state->add(0, "cannot read to its end");
    split.finish(fn);
  }

  /// One line; false stops the file (a summary that is not ours).
  static bool line(FileRecords* rec, size_t number, std::string_view raw, bool tooLong) {
    FileState* state = &rec->state;
    const std::string_view text = trimmed(raw);
    if (text.empty()) return true;
    const bool first = !state->sawLine;
    state->sawLine = true;
    const bool ours = text.find("provenance") != std::string_view::npos ||
                      text.find("communicator") != std::string_view::npos;
    // A summary's other kinds are monitor's business; only its first line (the process line)
    // is parsed, to tell our summary from another tool's JSON lines.
    if (state->summary && !first && !ours) return true;
    if (tooLong) {
      state->add(number, "a line longer than " + std::to_string(kJobMaxLineBytes >> 20) + " MiB");
      return true;
    }
    json j;
    try {
      j = json::parse(text);
    } catch (const json::parse_error& e) {
      state->add(number, e.byte >= text.size()
                             ? "cut short at byte " + std::to_string(text.size()) +
                                   " (truncated or half-written)"
                             : "not JSON (at byte " + std::to_string(e.byte) + ")");
      return !(state->summary && first);
    } catch (const std::exception&) {
      state->add(number, "not JSON (a number out of range)");
      return !(state->summary && first);
    }
    const auto kind = j.is_object() ? j.find("kind") : j.end();
    if (!j.is_object() || kind == j.end() || !kind->is_string()) {
      state->add(number, state->summary && first
                             ? "not an nccl-pilot summary (its first line has no \"kind\")"
                             : "not a provenance record (no \"kind\")");
      return !(state->summary && first);
    }
    const std::string& k = kind->get_ref<const std::string&>();
    if (k == "provenance") {
      JobProcess p;
      if (const std::string why = detail::recordFromJson(j, &p); !why.empty()) {
        state->add(number, why);
      } else {
        rec->processes.emplace_back(number, std::move(p));
      }
    } else if (k == "communicator" && state->summary) {
      std::string comm;
      CommMember m;
      if (const std::string why = detail::memberFromJson(j, &comm, &m); !why.empty()) {
        state->add(number, why);
      } else {
        rec->members.emplace_back(number, std::move(comm), std::move(m));
      }
    } else if (!state->summary) {
      state->add(number, "kind \"" + detail::boundedText(k) + "\", not a provenance record");
    }
    return true;
  }

  void provenance(FileState* state, size_t number, JobProcess p) {
    if (p.format > provenance::kRecordFormat) state->newerFormat = p.format;
    p.file = state->path + ":" + std::to_string(number);
    const auto key = std::make_pair(p.record.node, p.record.pid);
    const auto it = index_.find(key);
    if (it == index_.end()) {
      if (out_->processes.size() >= kJobMaxProcesses) {
        return state->add(number, "more than " + std::to_string(kJobMaxProcesses) +
                                      " processes: this one not kept");
      }
      index_[key] = out_->processes.size();
      out_->processes.push_back(std::move(p));
      return;
    }
    // The same process again: its record is both in the .provenance.json and the summary, and
    // each copy of our library in it (NCCL dlopens each plugin name on its own) adds a line
    // naming its own plugins. The newest is kept, with every plugin and library of the others.
    JobProcess& kept = out_->processes[it->second];
    if (p.record.writtenMs > kept.record.writtenMs) std::swap(kept, p);
    merge(p.record, &kept.record);
  }

  static void merge(const provenance::ProcessRecord& from, provenance::ProcessRecord* into) {
    for (const provenance::LoadedPlugin& plugin : from.plugins) {
      const bool known = std::any_of(
          into->plugins.begin(), into->plugins.end(), [&](const provenance::LoadedPlugin& q) {
            return q.kind == plugin.kind && q.abi == plugin.abi && q.path == plugin.path;
          });
      if (!known && into->plugins.size() < kJobMaxListEntries) into->plugins.push_back(plugin);
    }
    for (const provenance::Library& lib : from.libraries) {
      const bool known =
          std::any_of(into->libraries.begin(), into->libraries.end(),
                      [&](const provenance::Library& q) { return q.path == lib.path; });
      if (!known && into->libraries.size() < provenance::kMaxLibraries) {
        into->libraries.push_back(lib);
      }
    }
  }

  void member(FileState* state, size_t number, const std::string& comm, CommMember m) {
    if (!memberships_.insert({comm, m.node, m.pid}).second) return;
    if (memberships_.size() > kJobMaxMemberships ||
        (!out_->comms.count(comm) && out_->comms.size() >= kJobMaxComms)) {
      return state->add(number, "more communicators than this reader keeps");
    }
    out_->comms[comm].push_back(std::move(m));
  }

  void close(const FileState& state) {
    if (!state.problem.empty()) {
      note(state.path + state.problem +
           (state.moreProblems
                ? " (and " + std::to_string(state.moreProblems) + " more in this file)"
                : ""));
    } else if (state.newerFormat > 0) {
      note(state.path + ": format " + std::to_string(state.newerFormat) +
           ", newer than this reader's " + std::to_string(provenance::kRecordFormat) +
           ": the fields it knows are read");
    } else if (!state.sawLine && !state.summary) {
      note(state.path + ": empty");
    }
  }

  JobRecords* out_;
  std::map<std::pair<std::string, int64_t>, size_t> index_;
  std::set<std::tuple<std::string, std::string, int64_t>> memberships_;
  size_t entries_ = 0;
};

}  // namespace

JobRecords readJobRecords(const std::vector<std::string>& paths) {
  JobRecords out;
  Reader reader(&out);
  std::vector<std::pair<std::string, bool>> files;
  for (const std::string& p : paths) reader.path(p, &files);
  // Sorted: the notes and which copy of a record wins a tie do not depend on listing order.
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (files.size() > kJobMaxFiles) {
    reader.note(std::to_string(files.size()) + " files: only the first " +
                std::to_string(kJobMaxFiles) + " are read");
    files.resize(kJobMaxFiles);
  }
  // Read on every core, applied in order: the same records and notes as one thread's.
  std::vector<std::optional<FileRecords>> read(files.size());
  forEachIndex(files.size(),
               [&](size_t i) { read[i].emplace(Reader::file(files[i].first, files[i].second)); });
  for (std::optional<FileRecords>& rec : read) reader.apply(&*rec);
  std::sort(out.processes.begin(), out.processes.end(),
            [](const JobProcess& a, const JobProcess& b) {
              return std::tie(a.record.node, a.record.pid) < std::tie(b.record.node, b.record.pid);
            });
  return out;
}

void addJobFileText(const std::string& path, std::string_view text, JobRecords* records) {
  FileRecords rec = Reader::text(path, text);
  Reader(records).apply(&rec);
}

}  // namespace pilot::doctor
