// The tuning table: what a user (or `nccl-pilot fit`) writes, as parsed rules.
// Format: docs/tuning-table.md. Two line syntaxes share one file:
//   native:  allreduce size=0..64K algo=tree proto=ll nodes=2 channels=8
//   NCCL example-tuner CSV:  allreduce,0,65536,tree,ll,-1,2,-1[,numPipeOps[,regBuff]]
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pilot/core/fabric.h"
#include "pilot/tuner/names.h"

namespace pilot::tuner {

/// An inclusive range of unsigned values. The default range matches everything.
struct Range {
  uint64_t lo = 0;
  uint64_t hi = std::numeric_limits<uint64_t>::max();

  bool any() const { return lo == 0 && hi == std::numeric_limits<uint64_t>::max(); }
  bool contains(uint64_t v) const { return v >= lo && v <= hi; }
  static Range exactly(uint64_t v) { return Range{v, v}; }
};

/// Bit sets over Algorithm / Protocol / Collective indices.
using AlgoMask = uint8_t;
using ProtoMask = uint8_t;
using CollMask = uint8_t;
constexpr AlgoMask bit(Algorithm a) {
  return static_cast<AlgoMask>(1u << static_cast<int>(a));
}
constexpr ProtoMask bit(Protocol p) {
  return static_cast<ProtoMask>(1u << static_cast<int>(p));
}
constexpr CollMask bit(Collective c) {
  return static_cast<CollMask>(1u << static_cast<int>(c));
}
constexpr CollMask kAllCollectives = (1u << kNumCollectives) - 1;
using FabricMask = uint8_t;
constexpr FabricMask bit(Fabric f) {
  return static_cast<FabricMask>(1u << static_cast<int>(f));
}

/// NCCL's version code: major * 10000 + minor * 100 + patch (2.28.9 = 22809), as ncclGetVersion
/// reports it for every release since 2.9.
constexpr uint64_t ncclVersionCode(unsigned major, unsigned minor, unsigned patch = 0) {
  return major * 10000ull + minor * 100ull + patch;
}

/// One calibrated point of a rule (`expect=SIZE:MICROSECONDS`): the time per operation `fit`
/// measured for the rule's choice at that size (on the rule's size axis: per-rank bytes when
/// the rule is per-rank). Monitoring compares live times with these.
struct ExpectedTime {
  uint64_t bytes = 0;
  double microseconds = 0;
};

/// What an `explore=` line says of the cells it names at its sizes (written by `nccl-pilot fit`
/// from what jobs measured): never a decision, only which alternatives a job still explores.
enum class ExploreMark : uint8_t {
  None,   ///< a rule, not a mark
  Slow,   ///< `explore=slow`: measured clearly slower than the best there: never again
  Known,  ///< `explore=known`: measured enough, not clearly slower: no more
  First,  ///< `explore=first`: measured too little: the next job explores it (as any cell
          ///< without a mark)
};

struct Rule {
  CollMask collectives = 0;
  Range size;                ///< bytes; NCCL's nBytes unless perRankSize
  bool perRankSize = false;  ///< AllGather/ReduceScatter: size is nBytes / nRanks
  Range nodes, ranks, ranksPerNode, pipeOps;
  int regBuff = -1;  ///< -1 any, 0 or 1
  /// Where the rule holds beyond the communicator's shape, fixed for the whole process (so the
  /// same on every rank of a homogeneous job): the fabric NCCL's data crosses (0 = any;
  /// topology/fabric.h decides it) and the running NCCL's version code (any by default).
  FabricMask fabrics = 0;
  Range ncclVersions;

  /// The choice. 0 = not named. One bit in each = select that cell; anything else restricts
  /// NCCL's own choice to the named algorithms x protocols (as NCCL_ALGO/NCCL_PROTO would).
  AlgoMask algorithms = 0;
  ProtoMask protocols = 0;
  int channels = 0;         ///< 0 = keep NCCL's channel count
  uint64_t chunkBytes = 0;  ///< 0 = keep NCCL's chunk size (tuner ABI v6)

  /// Calibrated time per operation at sizes inside the rule's band, ascending by size; empty
  /// when the table does not say. Never changes a decision.
  std::vector<ExpectedTime> expected;

  /// Not None: the line marks the named cells for exploration and decides nothing.
  ExploreMark explore = ExploreMark::None;

  int line = 0;  ///< 1-based line in the source file

  bool selectsOneCell() const;
  bool namesChoice() const { return algorithms != 0 || protocols != 0; }
  /// It applies whenever it matches by size: no per-call condition and no choice the cost table
  /// could veto. compile() drops the candidates behind it: getCollInfo stops there.
  bool alwaysApplies() const { return !namesChoice() && pipeOps.any() && regBuff < 0; }
  bool isMark() const { return explore != ExploreMark::None; }
};

struct Diagnostic {
  int line = 0;  ///< 0 = the file as a whole
  std::string message;
};

struct TuningTable {
  std::string source;  ///< file name, for messages
  std::string sha256;  ///< 64 hex digits of the text parsed (the file's bytes); "" if unread
  std::vector<std::pair<std::string, std::string>> provenance;  ///< "#@ key: value" lines
  std::vector<Rule> rules;
};

struct ParsedTable {
  TuningTable table;
  std::vector<Diagnostic> diagnostics;  ///< one per rejected line, in file order
};

/// Limits that keep hostile or accidental input bounded.
constexpr size_t kMaxTableBytes = 64u << 20;
constexpr size_t kMaxLineBytes = 4096;
constexpr int kMaxChannels = 64;  ///< NCCL's MAXCHANNELS
constexpr uint64_t kMaxChunkBytes = 1ull << 30;
constexpr size_t kMaxExpectedTimes = 64;  ///< points per `expect=` key

/// Parses table text. Never throws on bad input: bad lines become diagnostics and are skipped.
ParsedTable parseTable(std::string_view text, std::string source);

/// Reads and parses a file. An unreadable or oversized file yields one line-0 diagnostic.
ParsedTable loadTableFile(const std::string& path);

/// "slow", "known", "first" ("" for None).
const char* exploreMarkName(ExploreMark mark);

/// Formats one rule in the native syntax (round-trips through parseTable).
std::string formatRule(const Rule& rule);

}  // namespace pilot::tuner
