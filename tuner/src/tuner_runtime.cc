#include "pilot/tuner/tuner_runtime.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "pilot/core/text.h"
#include "pilot/tuner/decision.h"
#include "pilot/version.h"

namespace pilot::tuner {
namespace {

constexpr size_t kMaxLoggedDiagnostics = 20;

bool validCollective(int collType) {
  return collType >= 0 && collType < kNumCollectives;
}

void traceDecision(Logger& log, const char* abi, int collType, uint64_t nBytes, int numPipeOps,
                   const Rule* rule) {
  if (rule == nullptr) {
    PILOT_LOG(log, Trace, subsys::Tuning, "%s %s %llu bytes pipeOps %d: no rule, NCCL decides", abi,
              collectiveName(static_cast<Collective>(collType)),
              static_cast<unsigned long long>(nBytes), numPipeOps);
    return;
  }
  PILOT_LOG(log, Trace, subsys::Tuning, "%s %s %llu bytes pipeOps %d: line %d applied (%s)", abi,
            collectiveName(static_cast<Collective>(collType)),
            static_cast<unsigned long long>(nBytes), numPipeOps, rule->line,
            formatRule(*rule).c_str());
}

}  // namespace

TunerContext::TunerContext(std::shared_ptr<const CompiledTable> table,
                           std::unique_ptr<Logger> logger, bool trace,
                           std::unique_ptr<Explorer> explorer)
    : compiled_(std::move(table)),
      table_(compiled_ && !compiled_->empty() ? compiled_.get() : nullptr),
      logger_(std::move(logger)),
      trace_(trace),
      nNodes_(compiled_ ? compiled_->shape().nNodes : 1),
      explorer_(std::move(explorer)) {
  if (!logger_) logger_ = std::make_unique<NullLogger>();
  for (int c = 0; c < kNumCollectives && table_ != nullptr; ++c) {
    index_[c] = table_->sizeIndex(static_cast<Collective>(c));
  }
}

void TunerContext::explore(int collType, uint64_t nBytes, int numPipeOps, float* costTable,
                           int numAlgo, int numProto, int regBuff, int* nChannels) const noexcept {
  const int cells = numAlgo * numProto;
  // The decision's cell is no candidate. It is taken on a copy, with regBuff unknown (-1: rules
  // with regbuff= do not match), so that every rank leaves out the same cell.
  auto decided = [&]() {
    float scratch[kMaxExploreCells];
    std::memcpy(scratch, costTable, sizeof(float) * static_cast<size_t>(cells));
    int channels = 0;
    decide(collType, nBytes, numPipeOps, scratch, numAlgo, numProto, -1, &channels);
    return cheapestCell(scratch, cells);
  };
  auto hints = [&]() {
    return compiled_ && numProto == kNumProtocols
               ? compiled_->exploreHints(static_cast<Collective>(collType), nBytes)
               : ExploreHints{};
  };
  const int cell = costTable != nullptr && numAlgo > 0 && numProto > 0 &&
                           cells <= kMaxExploreCells && validCollective(collType)
                       ? explorer_->cellFor(collType, nBytes, costTable, cells, decided, hints)
                       : -1;
  if (cell < 0) {  // nothing NCCL left usable within the bound: the decision stands
    decide(collType, nBytes, numPipeOps, costTable, numAlgo, numProto, regBuff, nChannels);
    return;
  }
  // NCCL's own table with the candidate selected (NCCL's costs are positive, so it takes the
  // 0), and NCCL's channel count: the call measures the cell, not a rule's channels or chunk
  // (getChunkSize finds no rule for it).
  costTable[cell] = 0.0f;
  memoRule_.store(packMemo(collType, kNoRule), std::memory_order_relaxed);
  memoBytes_.store(nBytes, std::memory_order_relaxed);
  if (__builtin_expect(trace_, 0)) {
    PILOT_LOG(
        *logger_, Trace, subsys::Tuning, "getCollInfo %s %llu bytes pipeOps %d: explores %s/%s",
        collectiveName(static_cast<Collective>(collType)), static_cast<unsigned long long>(nBytes),
        numPipeOps,
        cell / numProto < kNumAlgorithms ? algorithmName(static_cast<Algorithm>(cell / numProto))
                                         : "?",
        cell % numProto < kNumProtocols ? protocolName(static_cast<Protocol>(cell % numProto))
                                        : "?");
  }
}

void TunerContext::getCollInfoSlow(int collType, uint64_t nBytes, int numPipeOps, float* costTable,
                                   int numAlgo, int numProto, int regBuff,
                                   int* nChannels) const noexcept {
  if (table_ == nullptr || costTable == nullptr || !validCollective(collType)) return;
  const auto coll = static_cast<Collective>(collType);
  const CompiledTable::Interval* iv = table_->interval(coll, nBytes);
  if (iv == nullptr) {  // the linear fallback, or no rule for this collective
    walkCandidates(collType, nBytes, numPipeOps, costTable, numAlgo, numProto, regBuff, nChannels,
                   table_->candidates(coll, nBytes));
    return;
  }
  CompiledTable::Span span = table_->candidatesOf(coll, iv);
  const PlainSelect direct = iv->direct;
  if (direct.valid()) {
    const int a = direct.cell() / kNumProtocols, p = direct.cell() % kNumProtocols;
    if (a < numAlgo && p < numProto && costTable[a * numProto + p] >= 0.0f) {
      costTable[a * numProto + p] = 0.0f;
      if (direct.channels() > 0 && nChannels != nullptr) *nChannels = direct.channels();
      remember(collType, nBytes, direct.rule(), numPipeOps);
      return;
    }
    ++span.begin;  // that candidate does not apply: the walk goes on behind it
  }
  walkCandidates(collType, nBytes, numPipeOps, costTable, numAlgo, numProto, regBuff, nChannels,
                 span);
}

void TunerContext::walkCandidates(int collType, uint64_t nBytes, int numPipeOps, float* costTable,
                                  int numAlgo, int numProto, int regBuff, int* nChannels,
                                  CompiledTable::Span span) const noexcept {
  const uint32_t pipeOps = numPipeOps < 0 ? 0 : static_cast<uint32_t>(numPipeOps);
  uint32_t rule = kNoRule;
  for (const HotRule* h = span.begin; h != span.end; ++h) {
    if (nBytes < h->sizeLo || nBytes > h->sizeHi) continue;
    if (pipeOps < h->pipeLo || pipeOps > h->pipeHi) continue;
    if (h->regBuff >= 0 && h->regBuff != regBuff) continue;
    if (h->selectAlgo >= 0) {
      if (h->selectAlgo >= numAlgo || h->selectProto >= numProto) continue;
      float& cell = costTable[h->selectAlgo * numProto + h->selectProto];
      if (!(cell >= 0.0f)) continue;
      cell = 0.0f;
      if (h->channels > 0 && nChannels != nullptr) *nChannels = h->channels;
    } else if (h->namesChoice) {
      const CostTableView view{costTable, numAlgo, numProto};
      if (applyToCostTable(table_->rule(h->rule), view, nChannels) != Outcome::Applied) continue;
    } else if (h->channels > 0 && nChannels != nullptr) {
      *nChannels = h->channels;
    }
    rule = h->rule;
    break;
  }
  remember(collType, nBytes, rule, numPipeOps);
}

void TunerContext::traceCall(int collType, uint64_t nBytes, uint32_t rule,
                             int numPipeOps) const noexcept {
  traceDecision(*logger_, "getCollInfo", collType, nBytes, numPipeOps,
                rule != kNoRule ? &table_->rule(rule) : nullptr);
}

void TunerContext::getCollInfoV2(int collType, uint64_t nBytes, int collNetSupport, int nvlsSupport,
                                 int numPipeOps, int* algorithm, int* protocol,
                                 int* nChannels) const noexcept {
  if (table_ == nullptr || algorithm == nullptr || protocol == nullptr ||
      !validCollective(collType)) {
    return;
  }
  const V2Support support{static_cast<Collective>(collType), collNetSupport == 1, nvlsSupport == 1,
                          static_cast<int>(nNodes_)};
  const uint64_t pipeOps = numPipeOps < 0 ? 0 : static_cast<uint64_t>(numPipeOps);
  const Rule* hit =
      table_->firstMatch(static_cast<Collective>(collType), nBytes, [&](const Rule& r) {
        if (!r.pipeOps.contains(pipeOps) || r.regBuff >= 0) return false;  // v2 has no regBuff
        return applyV2(r, support, algorithm, protocol, nChannels) != V2Outcome::NotApplicable;
      });
  if (trace_) traceDecision(*logger_, "getCollInfo(v2)", collType, nBytes, numPipeOps, hit);
}

void TunerContext::getChunkSize(int collType, uint64_t nBytes, int algo, int proto,
                                size_t* chunkSize) const noexcept {
  if (table_ == nullptr || chunkSize == nullptr || !validCollective(collType)) return;
  if (algo < 0 || algo >= kNumAlgorithms || proto < 0 || proto >= kNumProtocols) return;
  auto admits = [&](const Rule& r) {
    bool algoOk = r.algorithms == 0 || (r.algorithms & (1u << algo));
    bool protoOk = r.protocols == 0 || (r.protocols & (1u << proto));
    return algoOk && protoOk;
  };
  const Rule* hit = nullptr;
  const uint32_t memo = memoRule_.load(std::memory_order_relaxed);
  if (memoBytes_.load(std::memory_order_relaxed) == nBytes &&
      (memo >> 24) == static_cast<uint32_t>(collType)) {
    const uint32_t index = memo & kNoRule;
    if (index != kNoRule && admits(table_->rule(index))) hit = &table_->rule(index);
  } else {
    hit = table_->firstMatch(static_cast<Collective>(collType), nBytes, admits);
  }
  if (hit != nullptr && hit->chunkBytes > 0) *chunkSize = static_cast<size_t>(hit->chunkBytes);
  if (trace_ && hit != nullptr && hit->chunkBytes > 0) {
    PILOT_LOG(*logger_, Trace, subsys::Tuning, "getChunkSize %s %llu bytes: line %d chunk %llu",
              collectiveName(static_cast<Collective>(collType)),
              static_cast<unsigned long long>(nBytes), hit->line,
              static_cast<unsigned long long>(hit->chunkBytes));
  }
}

TunerRuntime::TunerRuntime(EnvLookup env) : env_(std::move(env)) {}

TunerRuntime& TunerRuntime::process() {
  static TunerRuntime runtime(processEnv());
  return runtime;
}

namespace {

constexpr size_t kLoggedDigest = 16;  // hex digits of a table's SHA-256 the logs show

bool isHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

/// "fabric ib (mlx5_0 port 1 ACTIVE, InfiniBand), NCCL 2.32.6 (ncclGetVersion in libnccl.so.2)"
std::string describeFacts(const ProcessFacts& f) {
  std::string out = "fabric ";
  out += f.fabric ? fabricName(*f.fabric) : "unknown";
  if (!f.fabricWhy.empty()) out += " (" + f.fabricWhy + ")";
  out += ", NCCL " + formatNcclVersions(f.nccl);
  if (!f.ncclWhy.empty()) out += " (" + f.ncclWhy + ")";
  return out;
}

}  // namespace

std::string TunerRuntime::digestProblem(const std::string& path, const TuningTable& table) const {
  auto expected = readText(env_, setting::kTunerTableSha256);
  if (!expected) return {};
  const std::string want = text::toLower(*expected);
  if (want.size() < 8 || want.size() > 64 || !isHex(want)) {
    return std::string(setting::kTunerTableSha256) + "=" + expected->substr(0, 80) +
           " is not a SHA-256 prefix (8 to 64 hex digits)";
  }
  if (table.sha256.compare(0, want.size(), want) == 0) return {};
  return path + ": sha256 " + table.sha256.substr(0, std::max(kLoggedDigest, want.size())) +
         " is not the " + setting::kTunerTableSha256 + "=" + want + " the job expects";
}

const TunerRuntime::Loaded& TunerRuntime::loadOnce(Logger& log, const ProcessFacts& facts) {
  if (loaded_) return *loaded_;
  Loaded& out = loaded_.emplace(Loaded{});  // not emplace(): clang 14 rejects it (nested NSDMI)
  PILOT_LOG(log, Info, subsys::Init | subsys::Tuning, "nccl-pilot %s", kVersion);

  bool strict = false;
  auto strictSetting = readBool(env_, setting::kTunerStrict, false);
  if (strictSetting.ok()) {
    strict = strictSetting.value();
  } else {
    PILOT_LOG(log, Warn, subsys::Tuning | subsys::Env, "%s; strict mode stays off",
              strictSetting.error().c_str());
  }
  auto enabled = readBool(env_, setting::kTunerEnable, true);
  if (!enabled.ok()) {
    PILOT_LOG(log, Warn, subsys::Tuning | subsys::Env, "%s; the tuner stays on",
              enabled.error().c_str());
  } else if (!enabled.value()) {
    PILOT_LOG(log, Info, subsys::Init | subsys::Tuning,
              "disabled by %s=0; NCCL keeps its own decisions", setting::kTunerEnable);
    return out;
  }
  out.enabled = true;
  // Exploration is read before the table: a job without one still explores around NCCL.
  auto explore = readExploreSettings(env_);
  if (explore.ok()) {
    out.explore = explore.value();
  } else if (strict) {
    out.strictFailure = true;
    out.strictReason = explore.error() + " and " + setting::kTunerStrict + "=1";
    return out;
  } else {
    PILOT_LOG(log, Warn, subsys::Init | subsys::Tuning | subsys::Env,
              "%s; exploration stays off on this rank, which now decides apart from ranks that "
              "explore (give every rank the same value)",
              explore.error().c_str());
  }

  // The table is a file on each node: a node holding another version of it would decide
  // differently from the others. Its digest goes into the log, and a launcher can pin it
  // (NCCL_PILOT_TUNER_TABLE_SHA256) so that such a node steps aside loudly (or, strict, fails).
  const char* from = setting::kTunerTable;
  auto path = readText(env_, setting::kTunerTable);
  if (!path) {
    from = setting::kTunerConfigFile;
    path = readText(env_, setting::kTunerConfigFile);
  }
  if (!path) {
    PILOT_LOG(log, Info, subsys::Init | subsys::Tuning,
              "no tuning table (set %s); NCCL keeps its own decisions", setting::kTunerTable);
    return out;
  }

  ParsedTable parsed = loadTableFile(*path);
  size_t logged = 0;
  bool unreadable = false;
  for (const Diagnostic& d : parsed.diagnostics) {
    if (logged++ == kMaxLoggedDiagnostics) {
      PILOT_LOG(log, Warn, subsys::Tuning, "%s: %zu more bad lines not shown", path->c_str(),
                parsed.diagnostics.size() - kMaxLoggedDiagnostics);
      break;
    }
    if (d.line == 0) {
      unreadable = true;
      PILOT_LOG(log, Warn, subsys::Tuning, "%s (from %s): %s; NCCL keeps its own decisions",
                path->c_str(), from, d.message.c_str());
    } else {
      PILOT_LOG(log, Warn, subsys::Tuning, "%s:%d: %s; line skipped", path->c_str(), d.line,
                d.message.c_str());
    }
  }
  if (strict && !parsed.diagnostics.empty()) {
    out.strictFailure = true;
    out.strictReason = *path + ": " + std::to_string(parsed.diagnostics.size()) +
                       " problem(s) and " + setting::kTunerStrict + "=1";
    return out;
  }
  if (unreadable) return out;
  if (std::string problem = digestProblem(*path, parsed.table); !problem.empty()) {
    if (strict) {
      out.strictFailure = true;
      out.strictReason = problem + " and " + setting::kTunerStrict + "=1";
      return out;
    }
    PILOT_LOG(log, Warn, subsys::Init | subsys::Tuning,
              "%s; NCCL keeps its own decisions on this rank (set %s=1 to fail instead)",
              problem.c_str(), setting::kTunerStrict);
    return out;
  }
  std::string provenance;
  for (const auto& [key, value] : parsed.table.provenance) {
    if (!provenance.empty()) provenance += ", ";
    provenance += key + " " + value;
  }
  size_t withFabric = 0, withNccl = 0, fabricKept = 0, ncclKept = 0, marks = 0;
  for (const Rule& r : parsed.table.rules) {
    marks += r.isMark() ? 1 : 0;
    withFabric += r.fabrics != 0 ? 1 : 0;
    withNccl += r.ncclVersions.any() ? 0 : 1;
    fabricKept += r.fabrics != 0 && fabricAdmits(r, facts) ? 1 : 0;
    ncclKept += !r.ncclVersions.any() && ncclAdmits(r, facts) ? 1 : 0;
  }
  const std::string markCount =
      marks == 0 ? "" : "; " + std::to_string(marks) + " of them exploration marks";
  PILOT_LOG(log, Info, subsys::Init | subsys::Tuning,
            "loaded %zu rules from %s (sha256 %s, %zu lines skipped)%s%s%s",
            parsed.table.rules.size(), path->c_str(),
            parsed.table.sha256.substr(0, kLoggedDigest).c_str(), parsed.diagnostics.size(),
            markCount.c_str(), provenance.empty() ? "" : "; ", provenance.c_str());
  PILOT_LOG(log, Info, subsys::Init | subsys::Tuning,
            "matching %s: fabric= on %zu rules (%zu hold), nccl= on %zu rules (%zu hold)",
            describeFacts(facts).c_str(), withFabric, fabricKept, withNccl, ncclKept);
  out.table = std::make_shared<const TuningTable>(std::move(parsed.table));
  return out;
}

Expected<std::unique_ptr<TunerContext>> TunerRuntime::createContext(
    const ContextParams& params, std::unique_ptr<Logger> logger) {
  if (!logger) logger = std::make_unique<NullLogger>();
  std::shared_ptr<const CompiledTable> compiled;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const Loaded& loaded = loadOnce(*logger, params.facts);
    if (loaded.strictFailure) return Error{loaded.strictReason};
    compiled = compileLocked(loaded, params);
  }
  if (params.abiVersion == 2 && compiled &&
      (readText(env_, setting::kNcclAlgo) || readText(env_, setting::kNcclProto))) {
    // NCCL 2.21 takes a v2 plugin's algorithm/protocol over NCCL_ALGO/NCCL_PROTO.
    PILOT_LOG(*logger, Info, subsys::Init | subsys::Tuning,
              "NCCL_ALGO or NCCL_PROTO is set and this NCCL uses tuner ABI v2: the table steps "
              "aside so the user's choice holds");
    compiled.reset();
  }
  bool trace = false;
  if (auto debug = readText(env_, setting::kNcclDebug))
    trace = text::equalsIgnoreCase(*debug, "TRACE");
  if (compiled) {
    PILOT_LOG(*logger, Info, subsys::Init | subsys::Tuning,
              "communicator %llu ranks on %llu nodes: %zu rules apply (tuner ABI v%d; %s; %zu "
              "dropped by fabric=, %zu by nccl=)",
              static_cast<unsigned long long>(params.nRanks),
              static_cast<unsigned long long>(params.nNodes), compiled->ruleCount(),
              params.abiVersion, describeFacts(params.facts).c_str(), compiled->droppedByFabric(),
              compiled->droppedByNccl());
  }
  std::unique_ptr<Explorer> explorer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto made = explorerFor(*loaded_, params, *logger);
    if (!made.ok()) return Error{made.error()};
    explorer = std::move(made.value());
  }
  return std::make_unique<TunerContext>(std::move(compiled), std::move(logger), trace,
                                        std::move(explorer));
}

Expected<std::unique_ptr<Explorer>> TunerRuntime::explorerFor(const Loaded& loaded,
                                                              const ContextParams& params,
                                                              Logger& logger) const {
  if (!loaded.enabled || !loaded.explore.on()) return std::unique_ptr<Explorer>();
  if (params.abiVersion < 3) {
    PILOT_LOG(logger, Info, subsys::Init | subsys::Tuning,
              "%s is set, but tuner ABI v2 (NCCL 2.21) passes no cost table to bound the "
              "alternatives: no exploration",
              setting::kTunerExplore);
    return std::unique_ptr<Explorer>();
  }
  if (readText(env_, setting::kNcclAlgo) || readText(env_, setting::kNcclProto)) {
    PILOT_LOG(logger, Info, subsys::Init | subsys::Tuning,
              "%s is set, but so is NCCL_ALGO or NCCL_PROTO: the user's choice holds, no "
              "exploration",
              setting::kTunerExplore);
    return std::unique_ptr<Explorer>();
  }
  const std::string tableSha = loaded.table ? loaded.table->sha256 : "";
  const std::string digest = exploreDigest(loaded.explore, tableSha);
  // The pin, as the table's: a rank whose schedule would differ from the launcher's says so
  // (and, strict, fails) rather than explore apart from the others.
  if (auto pinned = readText(env_, setting::kTunerExploreDigest);
      pinned && text::toLower(*pinned) != digest) {
    const std::string problem =
        std::string(setting::kTunerExploreDigest) + "=" + pinned->substr(0, 40) +
        " is not this rank's schedule digest " + digest + " (" + setting::kTunerExplore + "=" +
        readText(env_, setting::kTunerExplore).value_or("") + ", table " +
        (tableSha.empty() ? "none" : tableSha.substr(0, kLoggedDigest)) + ")";
    if (strictMode()) return Error{problem + " and " + setting::kTunerStrict + "=1"};
    PILOT_LOG(logger, Warn, subsys::Init | subsys::Tuning,
              "%s; no exploration on this rank, which now decides apart from ranks that explore "
              "(set %s=1 to fail instead)",
              problem.c_str(), setting::kTunerStrict);
    return std::unique_ptr<Explorer>();
  }
  PILOT_LOG(logger, Info, subsys::Init | subsys::Tuning,
            "communicator %llu ranks on %llu nodes: exploring within %g%% of NCCL's predicted "
            "time, the cheap calls first (an alternative is charged %gx NCCL's cost of it); "
            "schedule digest %s (the budget and table %s: it must be the same on every rank)",
            static_cast<unsigned long long>(params.nRanks),
            static_cast<unsigned long long>(params.nNodes), 100.0 * loaded.explore.fraction,
            ExploreSchedule::kMargin, digest.c_str(),
            tableSha.empty() ? "none" : tableSha.substr(0, kLoggedDigest).c_str());
  return std::make_unique<Explorer>(loaded.explore, params.commId);
}

bool TunerRuntime::strictMode() const {
  auto strict = readBool(env_, setting::kTunerStrict, false);
  return strict.ok() && strict.value();
}

std::shared_ptr<const CompiledTable> TunerRuntime::compileLocked(const Loaded& loaded,
                                                                 const ContextParams& params) {
  if (!loaded.table) return nullptr;
  CommShape shape = CommShape::from(params.nRanks, params.nNodes);
  if (params.ranksPerNode) shape.ranksPerNode = params.ranksPerNode;
  if (params.unevenNodes) shape.ranksPerNode.reset();
  auto key = std::make_pair(shape, params.facts);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  auto compiled = std::make_shared<const CompiledTable>(
      CompiledTable::compile(*loaded.table, shape, params.facts));
  if (cache_.size() < kMaxCachedShapes) cache_.emplace(std::move(key), compiled);
  return compiled;
}

TunerRuntime::Compiled TunerRuntime::compiledFor(const ContextParams& params, Logger& logger) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Loaded& loaded = loadOnce(logger, params.facts);
  if (loaded.strictFailure || !loaded.table) return {};
  return {loaded.table, compileLocked(loaded, params)};
}

size_t TunerRuntime::cachedShapes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_.size();
}

}  // namespace pilot::tuner
