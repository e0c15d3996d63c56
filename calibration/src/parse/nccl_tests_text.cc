// The text parser: one pass over the lines, a run at a time. A run starts at a `# RUN`
// separator, at a preamble line its run has already printed, or at a column header after
// rows; it ends at the next start or the end of input, where its verdict is settled.
#include <algorithm>
#include <set>
#include <tuple>

#include "parse/column_layout.h"
#include "parse/support.h"
#include "pilot/calibration/labels.h"
#include "pilot/calibration/nccl_tests_parser.h"
#include "pilot/core/text.h"
#include "pilot/tuner/names.h"

namespace pilot::calibration {
namespace {

using text::startsWith;

using detail::ColumnLayout;

/// Text that reads like a failure: launcher, CUDA, NCCL or nccl-tests complaining.
bool looksLikeError(std::string_view line) {
  const std::string lower = text::toLower(line);
  for (const char* word :
       {"error", "fail", "abort", "fault", "killed", "terminat", "exception", "couldn't", "cannot",
        "unable", "denied", "not found", "timed out", "timeout", "core dumped"}) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

/// `# RUN file=a/b.txt config=ring setup=(2) NCCL_X=1 ...`: lowercase key=value fields; any
/// other word belongs to the previous field's value (setup descriptions contain spaces and
/// NCCL_FOO=bar words of their own).
std::vector<std::pair<std::string, std::string>> runFields(std::string_view body) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (std::string_view word : text::splitWhitespace(body)) {
    size_t eq = word.find('=');
    bool key = eq != std::string_view::npos && eq > 0;
    for (size_t i = 0; key && i < eq; ++i) {
      key = (word[i] >= 'a' && word[i] <= 'z') || word[i] == '_';
    }
    if (key) {
      fields.emplace_back(std::string(word.substr(0, eq)), std::string(word.substr(eq + 1)));
    } else if (!fields.empty()) {
      fields.back().second += " " + std::string(word);
    }
  }
  return fields;
}

std::string canonicalCollective(std::string_view name) {
  if (auto c = tuner::parseCollective(text::trim(name))) return tuner::collectiveName(*c);
  if (auto c = detail::collectiveFromProgram(name)) return *c;
  return "";
}

struct PendingChoice {
  std::string collective;  // canonical
  NcclChoice choice;
};

struct RunBuilder {
  ParsedRun parsed;
  int startLine = 0;
  bool sawVersion = false, sawStarting = false, sawThreads = false;
  bool sawHeader = false, sawFooter = false;
  std::optional<ColumnLayout> layout;
  std::set<long> ranks;
  std::set<std::string> hosts;
  std::string programCollective;
  std::string taggedCollective;  // `# RUN ... collective=`
  int rows = 0;
  bool haveFirst = false;
  uint64_t firstSize = 0, lastSize = 0;
  std::string lastType, lastRedop;
  std::set<std::pair<std::string, std::string>> sweeps;  // (type, redop) seen
  std::vector<std::string> errorLines, otherLines;
  std::string firstErrorAfterRows;
  bool interleaved = false, outOfOrder = false, oobFailed = false, avgFailed = false;
  long oobCount = 0;
  bool envLogged = false;
  Config envConfig;
  std::vector<PendingChoice> choices;
  std::set<std::tuple<uint64_t, std::string, std::string>> choiceSeen;
  int warnings = 0;
  std::string firstWarning;
  detail::NetworkLog network;

  bool hasTable() const { return rows > 0 || sawFooter; }
};

class TextParser {
 public:
  explicit TextParser(std::string name) : name_(std::move(name)) {}

  void line(std::string_view raw, int number, bool last);
  ParsedOutput finish();

 private:
  RunBuilder& current(int number);
  void startRun(int number);
  void finishRun();
  void runLine(std::string_view body, int number);
  void rankLine(const std::vector<std::string_view>& tokens, int number);
  void footerLine(std::string_view body, int number);
  void ncclLine(std::string_view text, int number);
  void rowLine(const std::vector<std::string_view>& tokens, int number, bool last);
  void otherLine(std::string_view text, int number);
  bool acceptTableLine(const std::string& tag);
  std::string where(int number) const { return "line " + std::to_string(number); }

  std::string name_;
  ParsedOutput out_;
  std::optional<RunBuilder> run_;
  std::vector<std::pair<std::string, std::string>> runTags_;  // the last `# RUN` line's
  std::vector<std::string> strayLines_;  // text before any run, kept for a failed-only file
  std::string tableTag_;
  std::set<std::string> otherTableTags_;
  bool sawAnything_ = false;
};

RunBuilder& TextParser::current(int number) {
  if (!run_) startRun(number);
  return *run_;
}

void TextParser::startRun(int number) {
  if (run_) finishRun();
  run_.emplace();
  run_->startLine = number;
  for (const auto& [key, value] : runTags_) {
    if (key == "config") run_->parsed.evidence.label = value;
    if (key == "file") run_->parsed.evidence.file = value;
    if (key == "setup") run_->parsed.evidence.setup = value;
    if (key == "collective") run_->taggedCollective = canonicalCollective(value);
  }
  // Text seen before the first run (a launcher's complaint) belongs to it.
  for (std::string& line : strayLines_) {
    (looksLikeError(line) ? run_->errorLines : run_->otherLines).push_back(std::move(line));
  }
  strayLines_.clear();
}

bool TextParser::acceptTableLine(const std::string& tag) {
  if (tag.empty() || tableTag_.empty() || tag == tableTag_) {
    if (!tag.empty() && tableTag_.empty()) tableTag_ = tag;
    return true;
  }
  otherTableTags_.insert(tag);
  return false;
}

void TextParser::line(std::string_view raw, int number, bool last) {
  const detail::CleanLine clean = detail::cleanLine(raw);
  const std::string_view trimmed = text::trim(clean.text);
  if (trimmed.empty()) return;
  sawAnything_ = true;
  const bool hashed = trimmed.front() == '#';
  std::string_view body = trimmed;
  while (!body.empty() && body.front() == '#') body.remove_prefix(1);
  body = text::trim(body);
  const std::vector<std::string_view> tokens = text::splitWhitespace(body);

  if (hashed && startsWith(body, "RUN") && (body.size() == 3 || body[3] == ' ')) {
    runLine(body.substr(3), number);
    return;
  }
  // NCCL's own lines first: their text may contain any of the words matched below. (A '#'
  // comment quoting one, like a fixture's "# SOURCE: ... 'NCCL version 2.22.3'", is not one.)
  if (!hashed && (trimmed.find("NCCL INFO") != std::string_view::npos ||
                  trimmed.find("NCCL WARN") != std::string_view::npos ||
                  trimmed.find("NCCL version ") != std::string_view::npos)) {
    ncclLine(trimmed, number);
    return;
  }
  const bool preamble = startsWith(body, "nccl-tests version") ||
                        startsWith(body, "Collective test starting:") ||
                        startsWith(body, "nThread ") ||
                        (startsWith(body, "Rank ") && body.find(" on ") != std::string_view::npos);
  const bool header = detail::isHeaderDecoration(body) || detail::layoutFromHeader(body);
  const bool row = !hashed && tokens.size() >= 2 && text::parseUnsigned(tokens[0]) &&
                   text::parseUnsigned(tokens[1]);
  const bool footer = startsWith(body, "Out of bounds values") ||
                      startsWith(body, "Avg bus bandwidth") ||
                      startsWith(body, "Collective test concluded");
  if ((preamble || header || row || footer) && !acceptTableLine(clean.tag)) return;

  if (startsWith(body, "nccl-tests version")) {
    if (run_ && (run_->sawVersion || run_->sawStarting || run_->sawThreads || run_->hasTable())) {
      startRun(number);
    }
    RunBuilder& b = current(number);
    b.sawVersion = true;
    for (std::string_view t : tokens) {
      if (startsWith(t, "nccl-library=") && b.parsed.run.ncclVersion.empty()) {
        auto code = text::parseSigned(t.substr(13));
        if (code) b.parsed.run.ncclVersion = detail::ncclVersionFromCode(static_cast<long>(*code));
      }
    }
  } else if (startsWith(body, "Collective test starting:")) {
    if (run_ && (run_->sawStarting || run_->sawThreads || run_->hasTable())) startRun(number);
    RunBuilder& b = current(number);
    b.sawStarting = true;
    b.programCollective = canonicalCollective(body.substr(25));
  } else if (startsWith(body, "nThread ")) {
    if (run_ && (run_->sawThreads || run_->hasTable())) startRun(number);
    current(number).sawThreads = true;
  } else if (startsWith(body, "Rank ") && body.find(" on ") != std::string_view::npos) {
    if (run_ && run_->hasTable()) startRun(number);  // a next run whose first lines were lost
    rankLine(tokens, number);
  } else if (header) {
    if (run_ && run_->hasTable()) startRun(number);
    RunBuilder& b = current(number);
    b.sawHeader = true;
    if (auto layout = detail::layoutFromHeader(body)) b.layout = *layout;
  } else if (footer) {
    footerLine(body, number);
  } else if (row) {
    rowLine(tokens, number, last);
  } else if (hashed) {
    if (startsWith(body, "error:") && run_) {
      run_->parsed.run.problems.push_back(where(number) + ": nccl-tests reports '" +
                                          std::string(body) + "'");
    } else if (body.find("Reducing maxBytes") != std::string_view::npos && run_) {
      run_->parsed.run.problems.push_back(where(number) + ": " + std::string(body));
    }
    // Other comments (# SOURCE, # Using devices, # Blocking Enabled, ...) say nothing we use.
  } else if (body == "Using devices") {
    // a preamble line whose '#' was lost
  } else {
    otherLine(trimmed, number);
  }
}

void TextParser::runLine(std::string_view body, int number) {
  finishRun();  // before the tags change: they belong to the next run
  runTags_ = runFields(body);
  startRun(number);
}

void TextParser::rankLine(const std::vector<std::string_view>& tokens, int number) {
  // Rank R Group G Pid P on HOST device D [bus] NAME
  RunBuilder& b = current(number);
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (tokens[i] == "Rank") {
      if (auto r = text::parseSigned(tokens[i + 1])) b.ranks.insert(static_cast<long>(*r));
    } else if (tokens[i] == "on") {
      b.hosts.insert(std::string(tokens[i + 1]));
      break;
    }
  }
}

void TextParser::footerLine(std::string_view body, int number) {
  RunBuilder& b = current(number);
  const size_t colon = body.find(':');
  const std::vector<std::string_view> value =
      text::splitWhitespace(colon == std::string_view::npos ? "" : body.substr(colon + 1));
  const bool failedWord = std::find(value.begin(), value.end(), "FAILED") != value.end();
  if (startsWith(body, "Out of bounds values")) {
    b.sawFooter = true;
    if (!value.empty()) {
      if (auto n = text::parseSigned(value[0])) b.oobCount = static_cast<long>(*n);
    }
    b.oobFailed = b.oobFailed || failedWord || b.oobCount > 0;
  } else if (startsWith(body, "Avg bus bandwidth")) {
    b.sawFooter = true;
    b.avgFailed = b.avgFailed || failedWord;
  } else {
    b.sawFooter = true;
    auto concluded =
        canonicalCollective(body.substr(colon == std::string_view::npos ? body.size() : colon + 1));
    if (b.programCollective.empty()) b.programCollective = concluded;
  }
}

void TextParser::ncclLine(std::string_view line, int number) {
  RunBuilder& b = current(number);
  if (size_t at = line.find("NCCL version "); at != std::string_view::npos) {
    auto words = text::splitWhitespace(line.substr(at + 13));
    // NCCL's own word beats nccl-tests' nccl-library= code (which an older release lacks).
    if (!words.empty()) b.parsed.run.ncclVersion = detail::stripVersionSuffix(words[0]);
    return;
  }
  if (size_t at = line.find("NCCL WARN"); at != std::string_view::npos) {
    if (b.warnings++ == 0) b.firstWarning = std::string(text::trim(line.substr(at + 9)));
    return;
  }
  const std::string_view info = text::trim(line.substr(line.find("NCCL INFO") + 9));
  if (detail::readNetworkLine(info, b.network)) return;
  const std::vector<std::string_view> w = text::splitWhitespace(info);
  // "NCCL_ALGO set by environment to Ring" (integer parameters end with '.')
  if (w.size() >= 6 && w[1] == "set" && w[2] == "by" && w[3] == "environment" && w[4] == "to") {
    b.envLogged = true;
    std::string name(w[0]);
    if (std::find(std::begin(kForcingVariables), std::end(kForcingVariables), name) !=
        std::end(kForcingVariables)) {
      std::string value(w[5]);
      if (name != "NCCL_ALGO" && name != "NCCL_PROTO" && !value.empty() && value.back() == '.') {
        value.pop_back();
      }
      if (Status s = setForcingVariable(b.envConfig, name, value); !s.ok()) {
        b.parsed.run.problems.push_back(where(number) + ": NCCL logs " + name + "=" + value +
                                        ", which is not understood: " + s.error());
      }
    }
    return;
  }
  // "AllReduce: 4194304 Bytes -> Algo Ring proto LL channel{Lo..Hi}={0..3} [comm 0x...]"
  if (w.size() >= 8 && !w[0].empty() && w[0].back() == ':' && w[2] == "Bytes" && w[3] == "->" &&
      w[4] == "Algo" && w[6] == "proto") {
    auto bytes = text::parseUnsigned(w[1]);
    auto coll = tuner::parseCollective(w[0].substr(0, w[0].size() - 1));
    if (!bytes || !coll) return;
    NcclChoice c;
    c.bytes = *bytes;
    auto algo = tuner::parseAlgorithm(w[5]);
    auto proto = tuner::parseProtocol(w[7]);
    c.algo = algo ? tuner::algorithmDisplayName(*algo) : std::string(w[5]);
    c.proto = proto ? tuner::protocolDisplayName(*proto) : std::string(w[7]);
    if (w.size() >= 9) {
      std::string_view ch = w[8];
      size_t open = ch.find("={"), dots = ch.find("..", open == std::string_view::npos ? 0 : open);
      if (open != std::string_view::npos && dots != std::string_view::npos && ch.back() == '}') {
        auto lo = text::parseUnsigned(ch.substr(open + 2, dots - open - 2));
        auto hi = text::parseUnsigned(ch.substr(dots + 2, ch.size() - dots - 3));
        if (lo && hi) {
          c.channelLo = static_cast<int>(*lo);
          c.channelHi = static_cast<int>(*hi);
        }
      }
    }
    if (b.choiceSeen.emplace(c.bytes, c.algo, c.proto).second) {
      b.choices.push_back({tuner::collectiveName(*coll), std::move(c)});
    }
  }
}

void TextParser::rowLine(const std::vector<std::string_view>& tokens, int number, bool last) {
  RunBuilder& b = current(number);
  Run& run = b.parsed.run;
  if (!b.layout) {
    if (tokens.size() != 13) {
      run.problems.push_back(where(number) +
                             ": a result-like row before any column header; skipped");
      return;
    }
    b.layout = detail::standardLayout();
    run.problems.push_back(where(number) +
                           ": rows without a column header; read as nccl-tests' standard columns");
  }
  detail::ParsedRow row = detail::parseRow(*b.layout, tokens);
  if (!row.error.empty()) {
    const bool cut = last && static_cast<int>(tokens.size()) < b.layout->fields;
    run.problems.push_back(where(number) + (cut ? ": the last row is cut off (truncated output)"
                                                : ": row skipped: " + row.error));
    return;
  }
  const Sample& first = row.samples.front();
  if (b.haveFirst) {
    const bool sameSweep = first.type == b.lastType && first.redop == b.lastRedop;
    if (sameSweep && first.size == b.lastSize && first.size != 0) {
      // Two rows for one size: several processes writing into one stream.
      if (!b.interleaved) {
        run.problems.push_back(where(number) + ": size " + std::to_string(first.size) +
                               " printed twice in a row: output of several processes "
                               "interleaved (a non-MPI nccl-tests build launched per rank?)");
      }
      b.interleaved = true;
    } else if (sameSweep && first.size < b.lastSize) {
      if (first.size == b.firstSize) {
        // nccl-tests -N: the same sweep again. A new run, so repeats stay one row per size.
        RunBuilder next;
        next.parsed.evidence = b.parsed.evidence;
        next.parsed.run.ncclVersion = run.ncclVersion;
        next.parsed.run.problems.push_back(where(number) +
                                           ": another cycle of the same sweep "
                                           "(nccl-tests -N); read as a separate run");
        next.startLine = number;
        next.layout = b.layout;
        next.ranks = b.ranks;
        next.hosts = b.hosts;
        next.programCollective = b.programCollective;
        next.taggedCollective = b.taggedCollective;
        next.sawHeader = true;
        next.envLogged = b.envLogged;
        next.envConfig = b.envConfig;
        next.network = b.network;
        b.sawFooter = true;  // this cycle is complete
        finishRun();
        run_ = std::move(next);
        rowLine(tokens, number, last);
        return;
      }
      if (!b.outOfOrder) {
        run.problems.push_back(where(number) + ": sizes go back from " +
                               std::to_string(b.lastSize) + " to " + std::to_string(first.size) +
                               " within one sweep");
      }
      b.outOfOrder = true;
    }
  } else {
    b.haveFirst = true;
    b.firstSize = first.size;
  }
  if (b.sweeps.emplace(first.type, first.redop).second && b.sweeps.size() == 2) {
    run.problems.push_back(where(number) +
                           ": several data types or operations in one run "
                           "(-d all / -o all); each sample names its own");
  }
  b.lastSize = first.size;
  b.lastType = first.type;
  b.lastRedop = first.redop;
  ++b.rows;
  for (Sample& s : row.samples) run.samples.push_back(std::move(s));
}

void TextParser::otherLine(std::string_view line, int number) {
  std::string text = where(number) + ": " + std::string(line);
  if (!run_) {
    strayLines_.push_back(std::move(text));
    return;
  }
  if (looksLikeError(line)) {
    if (run_->rows > 0 && run_->firstErrorAfterRows.empty()) run_->firstErrorAfterRows = text;
    run_->errorLines.push_back(std::move(text));
  } else {
    run_->otherLines.push_back(std::move(text));
  }
}

void TextParser::finishRun() {
  if (!run_) return;
  RunBuilder b = std::move(*run_);
  run_.reset();
  Run& run = b.parsed.run;
  RunEvidence& ev = b.parsed.evidence;
  run.source = name_ + ":" + std::to_string(std::max(b.startLine, 1));
  run.setup = ev.setup;
  run.network = b.network.network;
  run.fabrics = detail::fabricsOfNetwork(b.network);

  // The collective: the program's own words, else the `# RUN` line, else a file name.
  std::string collective = b.programCollective;
  if (collective.empty()) collective = b.taggedCollective;
  if (collective.empty() && !ev.file.empty()) {
    collective = detail::collectiveFromName(ev.file).value_or("");
  }
  if (collective.empty())
    collective = detail::collectiveFromName(detail::baseName(name_)).value_or("");
  run.collective = collective;

  if (!b.ranks.empty()) run.ranks = static_cast<int>(b.ranks.size());
  if (!b.hosts.empty()) run.nodes = static_cast<int>(b.hosts.size());
  for (PendingChoice& c : b.choices) {
    if (collective.empty() || c.collective == collective)
      run.ncclChoices.push_back(std::move(c.choice));
  }
  if (b.envLogged) {
    b.envConfig.label = canonicalLabel(b.envConfig);
    ev.config = b.envConfig;
    ev.configSource = "nccl-log";
  }
  ev.endedCleanly = b.sawFooter;

  auto fail = [&run](std::string why) {
    run.failed = true;
    run.problems.push_back(std::move(why));
  };
  auto quote = [](const std::vector<std::string>& lines) {
    std::string s = "'" + lines.front() + "'";
    if (lines.size() > 1) s += " (+" + std::to_string(lines.size() - 1) + " more lines)";
    return s;
  };
  if (b.rows == 0) {
    if (!b.errorLines.empty()) {
      fail("no results; the output says " + quote(b.errorLines));
    } else if (!b.otherLines.empty()) {
      fail("no results; the output says " + quote(b.otherLines));
    } else if (b.sawHeader) {
      fail("no results after the column header (the output ends there)");
    } else {
      fail("no results");
    }
  } else {
    if (!b.sawFooter && !b.firstErrorAfterRows.empty()) {
      fail("stopped after " + std::to_string(b.rows) + " sizes: '" + b.firstErrorAfterRows + "'");
    } else if (!b.sawFooter) {
      run.problems.push_back("truncated: " + std::to_string(b.rows) +
                             " sizes and no footer; the rows read so far are kept");
    }
    for (const Sample& s : run.samples) {
      if (s.wrong > 0) {
        fail("#wrong = " + std::to_string(s.wrong) + " at " + std::to_string(s.size) + " bytes (" +
             (s.inPlace ? "in-place" : "out-of-place") + "): the results are not trustworthy");
        break;
      }
    }
    if (b.oobFailed) {
      fail("nccl-tests reports " + std::to_string(b.oobCount) + " out-of-bounds values (FAILED)");
    }
    if (b.avgFailed) fail("nccl-tests marks the average bus bandwidth FAILED");
    if (b.interleaved) fail("rows of several processes are interleaved");
    if (b.outOfOrder) fail("sizes out of order");
    if (run.ranks == 1) {
      fail(
          "one rank: nothing crosses a GPU boundary (a non-MPI nccl-tests build launched once "
          "per rank?)");
    }
    if (collective.empty()) {
      fail(
          "which collective ran is unknown: no 'Collective test starting' line, no "
          "'# RUN ... collective=' and no collective in the file name");
    } else if (!detail::isTunedCollective(collective)) {
      fail(collective + " is not a collective NCCL's tuner decides");
    }
  }
  if (b.layout && b.layout->cpuTime) {
    run.problems.push_back("times are host CPU times (nccl-tests -C 1)");
  }
  if (b.warnings > 0) {
    run.problems.push_back(std::to_string(b.warnings) + " NCCL WARN line(s); the first: '" +
                           b.firstWarning + "'");
  }
  out_.runs.push_back(std::move(b.parsed));
}

ParsedOutput TextParser::finish() {
  finishRun();
  if (out_.runs.empty() && !strayLines_.empty()) {
    // A file holding only a launcher's complaint: one failed run, so it is counted.
    startRun(1);
    finishRun();
  }
  if (!sawAnything_) out_.problems.push_back(name_ + ": empty");
  if (!otherTableTags_.empty()) {
    std::string tags;
    for (const std::string& t : otherTableTags_) tags += (tags.empty() ? "" : " ") + t;
    out_.problems.push_back(name_ + ": lines tagged " + tags +
                            " print nccl-tests tables too (a non-MPI build launched once per "
                            "rank?); only " +
                            tableTag_ + "'s are read");
  }
  return std::move(out_);
}

}  // namespace

ParsedOutput parseNcclTestsText(std::string_view text, const std::string& name) {
  TextParser parser(name);
  // The last non-blank line may be a row cut off by truncation.
  size_t lastLineStart = 0;
  {
    size_t end = text.size();
    while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r' || text[end - 1] == ' '))
      --end;
    size_t nl = text.rfind('\n', end == 0 ? 0 : end - 1);
    lastLineStart = nl == std::string_view::npos ? 0 : nl + 1;
  }
  int number = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    ++number;
    parser.line(text.substr(pos, end - pos), number, pos == lastLineStart);
    pos = end + 1;
  }
  return parser.finish();
}

bool looksLikeJson(std::string_view text) {
  std::string_view t = text::trim(text);
  while (!t.empty() && (t.front() == '\n' || t.front() == '\r')) t.remove_prefix(1);
  return !t.empty() && t.front() == '{';
}

}  // namespace pilot::calibration
