// The tuner behind every exported ABI version. One TunerRuntime per process loads the table
// once (NCCL_PILOT_TUNER_TABLE, else NCCL_TUNER_CONFIG_FILE) and caches one CompiledTable per
// communicator shape; each communicator gets a cheap TunerContext that points at it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "pilot/core/config.h"
#include "pilot/core/log.h"
#include "pilot/core/result.h"
#include "pilot/tuner/compiled_table.h"
#include "pilot/tuner/exploration.h"

namespace pilot::tuner {

struct ContextParams {
  uint64_t nRanks = 1;
  uint64_t nNodes = 1;
  /// From NCCL's v5+ NVL-domain info when min == max ranks per domain; else derived.
  std::optional<uint64_t> ranksPerNode;
  /// NCCL said nodes hold different numbers of ranks: rules with rpn= never match.
  bool unevenNodes = false;
  int abiVersion = 6;
  /// NCCL's commHash (v5+ init; 0 before): the same on every rank of the communicator.
  uint64_t commId = 0;
  /// The fabric and the running NCCL's version (plugin/ reads them; process_facts.h says why
  /// they must be alike on every node). The default knows neither.
  ProcessFacts facts;
};

/// Per-communicator state. All calls are const, allocation-free and lock-free, so NCCL may call
/// them from several threads on several contexts at once.
class TunerContext {
 public:
  /// `explorer`: null unless NCCL_PILOT_TUNER_EXPLORE is on for this communicator.
  TunerContext(std::shared_ptr<const CompiledTable> table, std::unique_ptr<Logger> logger,
               bool trace, std::unique_ptr<Explorer> explorer = nullptr);

  /// v3+: edits NCCL's cost table (float[numAlgo][numProto]) and maybe *nChannels.
  /// regBuff < 0 means the ABI does not pass it (v3): rules with regbuff= do not match.
  /// Inline: its common case (see below) is a handful of loads, cheaper than a call's set-up.
  __attribute__((always_inline)) void getCollInfo(int collType, uint64_t nBytes, int numPipeOps,
                                                  float* costTable, int numAlgo, int numProto,
                                                  int regBuff, int* nChannels) const noexcept;

  /// v2 (NCCL 2.21): writes *algorithm and *protocol (both or neither) and maybe *nChannels.
  void getCollInfoV2(int collType, uint64_t nBytes, int collNetSupport, int nvlsSupport,
                     int numPipeOps, int* algorithm, int* protocol, int* nChannels) const noexcept;

  /// v6: the chunk size of the rule getCollInfo applied to this operation, if it sets one and
  /// its choice admits the algorithm and protocol NCCL selected. NCCL calls getChunkSize right
  /// after getCollInfo for the same operation on the same thread; when the two calls do not
  /// pair up, the first rule matching (collective, size) that admits the cell is used.
  void getChunkSize(int collType, uint64_t nBytes, int algo, int proto,
                    size_t* chunkSize) const noexcept;

  bool active() const { return table_ != nullptr || explorer_ != nullptr; }
  /// Calls that ran an alternative (0 without exploration).
  uint64_t explorations() const { return explorer_ ? explorer_->explorations() : 0; }
  Logger& logger() const { return *logger_; }

 private:
  /// getCollInfo without exploration: the table's decision (or none).
  __attribute__((always_inline)) void decide(int collType, uint64_t nBytes, int numPipeOps,
                                             float* costTable, int numAlgo, int numProto,
                                             int regBuff, int* nChannels) const noexcept;
  /// A call the schedule names (exploration.h): NCCL's own table with the pair's next
  /// candidate selected, NCCL's channel count, no rule; the decision when none is usable.
  void explore(int collType, uint64_t nBytes, int numPipeOps, float* costTable, int numAlgo,
               int numProto, int regBuff, int* nChannels) const noexcept;
  /// getCollInfo in full: the interval, its plain select if any, then its candidates in
  /// priority order (and the linear fallback, and no table at all).
  void getCollInfoSlow(int collType, uint64_t nBytes, int numPipeOps, float* costTable, int numAlgo,
                       int numProto, int regBuff, int* nChannels) const noexcept;
  void walkCandidates(int collType, uint64_t nBytes, int numPipeOps, float* costTable, int numAlgo,
                      int numProto, int regBuff, int* nChannels,
                      CompiledTable::Span span) const noexcept;
  void remember(int collType, uint64_t nBytes, uint32_t rule, int numPipeOps) const noexcept {
    memoRule_.store(packMemo(collType, rule), std::memory_order_relaxed);
    memoBytes_.store(nBytes, std::memory_order_relaxed);
    if (__builtin_expect(trace_, 0)) traceCall(collType, nBytes, rule, numPipeOps);
  }
  void traceCall(int collType, uint64_t nBytes, uint32_t rule, int numPipeOps) const noexcept;

  /// Each collective's size index, copied out of the table (empty when there is none).
  CompiledTable::SizeIndex index_[kNumCollectives];
  std::shared_ptr<const CompiledTable> compiled_;
  const CompiledTable* table_ = nullptr;  // null: the context never touches anything
  std::unique_ptr<Logger> logger_;
  bool trace_ = false;
  uint64_t nNodes_ = 1;
  std::unique_ptr<Explorer> explorer_;  // mutable state behind a const pointer: its counters

  // The decision of the last getCollInfo, for getChunkSize. Relaxed atomics: NCCL drives one
  // communicator from one thread at a time, so they only need to be free of data races.
  static constexpr uint32_t kNoRule = 0xffffff;
  static uint32_t packMemo(int collType, uint32_t rule) {
    return (static_cast<uint32_t>(collType) << 24) | rule;
  }
  mutable std::atomic<uint64_t> memoBytes_{~0ull};
  mutable std::atomic<uint32_t> memoRule_{~0u};
};

inline void TunerContext::getCollInfo(int collType, uint64_t nBytes, int numPipeOps,
                                      float* costTable, int numAlgo, int numProto, int regBuff,
                                      int* nChannels) const noexcept {
  if (__builtin_expect(explorer_ != nullptr, 0) &&
      static_cast<unsigned>(collType) < static_cast<unsigned>(kNumCollectives) &&
      explorer_->due()) {
    explore(collType, nBytes, numPipeOps, costTable, numAlgo, numProto, regBuff, nChannels);
    return;
  }
  decide(collType, nBytes, numPipeOps, costTable, numAlgo, numProto, regBuff, nChannels);
}

inline void TunerContext::decide(int collType, uint64_t nBytes, int numPipeOps, float* costTable,
                                 int numAlgo, int numProto, int regBuff,
                                 int* nChannels) const noexcept {
  // The common case: the size's bucket holds at most one edge and its interval's first rule is
  // a plain select whose cell NCCL left usable. Everything else goes the full way; without a
  // table there is nothing to do.
  if (static_cast<unsigned>(collType) >= static_cast<unsigned>(kNumCollectives)) return;
  if (index_[collType].buckets != nullptr && costTable != nullptr) {
    if (const CompiledTable::Interval* iv = index_[collType].direct(nBytes)) {
      // NCCL's tables have 3 protocols, so the packed cell index is NCCL's own.
      const PlainSelect d = iv->direct;
      const int cell = d.cell();
      if (d.valid() && numProto == kNumProtocols && cell < numAlgo * kNumProtocols &&
          costTable[cell] >= 0.0f) {
        costTable[cell] = 0.0f;
        if (nChannels != nullptr) {
          // Stored back unchanged when the rule keeps NCCL's count: no unpredictable branch on
          // tables that set channels every few bands.
          const int keep = *nChannels, set = d.channels();
          *nChannels = set > 0 ? set : keep;
        }
        remember(collType, nBytes, d.rule(), numPipeOps);
        return;
      }
    }
  }
  if (table_ != nullptr) {
    getCollInfoSlow(collType, nBytes, numPipeOps, costTable, numAlgo, numProto, regBuff, nChannels);
  }
}

/// Every rank must decide alike: its inputs that are not NCCL's (the same on every rank) are
/// the table file, the facts (process_facts.h) and this process's settings (NCCL_PILOT_TUNER*,
/// NCCL_TUNER_CONFIG_FILE, NCCL_ALGO/NCCL_PROTO under ABI v2, NCCL_PILOT_TUNER_EXPLORE), which
/// a launcher must give every rank alike. The table's digest, and exploration's, are logged
/// (and the table's can be pinned) for that reason.
class TunerRuntime {
 public:
  explicit TunerRuntime(EnvLookup env);

  /// The process-wide runtime, reading the real environment. Destroyed when the library is
  /// unloaded (NCCL unloads the tuner when its last communicator goes and may load it again):
  /// contexts share ownership of their compiled tables, so none dangles meanwhile.
  static TunerRuntime& process();

  /// Builds a communicator's context. Fails only in strict mode, with a bad table or one whose
  /// digest is not NCCL_PILOT_TUNER_TABLE_SHA256's.
  Expected<std::unique_ptr<TunerContext>> createContext(const ContextParams& params,
                                                        std::unique_ptr<Logger> logger);

  /// Compiled tables currently cached (one per communicator shape and facts seen).
  size_t cachedShapes();

  /// The loaded table and its compilation for a communicator's shape, exactly as
  /// createContext builds them (both null: no table, tuner disabled, or a strict-mode
  /// failure). For the profiler, which credits NCCL's decisions to the table's rules.
  struct Compiled {
    std::shared_ptr<const TuningTable> table;
    std::shared_ptr<const CompiledTable> compiled;
  };
  Compiled compiledFor(const ContextParams& params, Logger& logger);

  static constexpr size_t kMaxCachedShapes = 256;

 private:
  struct Loaded {
    bool enabled = false;
    bool strictFailure = false;
    std::string strictReason;
    std::shared_ptr<const TuningTable> table;  // null: no table, NCCL decides
    ExploreSettings explore;
  };
  /// The communicator's explorer, or null (off, ABI v2, NCCL_ALGO/NCCL_PROTO set, a schedule
  /// digest other than NCCL_PILOT_TUNER_EXPLORE_DIGEST's); logs why. An error only in strict
  /// mode with another digest.
  Expected<std::unique_ptr<Explorer>> explorerFor(const Loaded& loaded, const ContextParams& params,
                                                  Logger& logger) const;
  bool strictMode() const;
  const Loaded& loadOnce(Logger& logger, const ProcessFacts& facts);
  /// Empty when NCCL_PILOT_TUNER_TABLE_SHA256 is unset or names this table; else the WARN.
  std::string digestProblem(const std::string& path, const TuningTable& table) const;
  /// The cached compilation for the shape and facts of `params` (mutex_ held); null without a
  /// table.
  std::shared_ptr<const CompiledTable> compileLocked(const Loaded& loaded,
                                                     const ContextParams& params);

  EnvLookup env_;
  std::mutex mutex_;
  std::optional<Loaded> loaded_;
  std::map<std::pair<CommShape, ProcessFacts>, std::shared_ptr<const CompiledTable>> cache_;
};

}  // namespace pilot::tuner
