// Helpers shared by the unit tests: a recording logger, map-backed settings, temporary files,
// one-line parsing and NCCL-shaped cost tables.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pilot/core/config.h"
#include "pilot/core/log.h"
#include "pilot/tuner/decision.h"
#include "pilot/tuner/table.h"

namespace pilot::test {

struct LogLine {
  LogLevel level;
  unsigned long flags;
  std::string message;
};
using LogSink = std::shared_ptr<std::vector<LogLine>>;

/// Appends every message to a sink the test keeps (the runtime owns the logger itself).
class RecordingLogger final : public Logger {
 public:
  explicit RecordingLogger(LogSink sink) : sink_(std::move(sink)) {}
  void write(LogLevel level, unsigned long flags, const char*, int,
             const std::string& message) override {
    sink_->push_back({level, flags, message});
  }

 private:
  LogSink sink_;
};

inline LogSink makeSink() {
  return std::make_shared<std::vector<LogLine>>();
}

inline std::vector<LogLine> linesAt(const LogSink& sink, LogLevel level) {
  std::vector<LogLine> out;
  for (const LogLine& l : *sink) {
    if (l.level == level) out.push_back(l);
  }
  return out;
}

inline bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

/// Every recorded line, one per line, for failure messages.
inline std::string dumpLines(const LogSink& sink) {
  std::string out;
  for (const LogLine& l : *sink)
    out += "  [" + std::to_string(static_cast<int>(l.level)) + "] " + l.message + "\n";
  return out.empty() ? "  (no log lines)\n" : out;
}

/// Settings from a map instead of the process environment.
inline EnvLookup mapEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

/// A directory under /tmp, removed (with the files written through it) on destruction.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/pilot-unit-XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made == nullptr)
      ADD_FAILURE() << "mkdtemp failed";
    else
      path_ = made;
  }
  ~TempDir() {
    for (const std::string& f : files_) std::remove(f.c_str());
    if (!path_.empty()) rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  /// A path inside the directory that is removed at the end (whether or not it gets created).
  std::string file(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

  std::string write(const std::string& name, std::string_view content) {
    std::string p = file(name);
    std::ofstream out(p, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out) ADD_FAILURE() << "cannot write " << p;
    return p;
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

/// Parses text that must hold exactly one good rule.
inline tuner::Rule parseOne(std::string_view line) {
  tuner::ParsedTable parsed = tuner::parseTable(line, "test");
  for (const tuner::Diagnostic& d : parsed.diagnostics) {
    ADD_FAILURE() << "unexpected diagnostic for '" << line << "': line " << d.line << ": "
                  << d.message;
  }
  if (parsed.table.rules.size() != 1) {
    ADD_FAILURE() << "expected one rule from '" << line << "', got " << parsed.table.rules.size();
    return tuner::Rule{};
  }
  return parsed.table.rules[0];
}

/// Parses one line that must be rejected; returns its diagnostic (line must be 1).
inline std::string parseError(std::string_view line) {
  tuner::ParsedTable parsed = tuner::parseTable(line, "test");
  EXPECT_TRUE(parsed.table.rules.empty()) << "'" << line << "' was accepted";
  if (parsed.diagnostics.size() != 1) {
    ADD_FAILURE() << "expected one diagnostic for '" << line << "', got "
                  << parsed.diagnostics.size();
    return "";
  }
  EXPECT_EQ(parsed.diagnostics[0].line, 1);
  return parsed.diagnostics[0].message;
}

/// Compares every field of two rules except the source line.
inline void expectSameRule(const tuner::Rule& a, const tuner::Rule& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.collectives, b.collectives);
  EXPECT_EQ(a.size.lo, b.size.lo);
  EXPECT_EQ(a.size.hi, b.size.hi);
  EXPECT_EQ(a.perRankSize, b.perRankSize);
  EXPECT_EQ(a.nodes.lo, b.nodes.lo);
  EXPECT_EQ(a.nodes.hi, b.nodes.hi);
  EXPECT_EQ(a.ranks.lo, b.ranks.lo);
  EXPECT_EQ(a.ranks.hi, b.ranks.hi);
  EXPECT_EQ(a.ranksPerNode.lo, b.ranksPerNode.lo);
  EXPECT_EQ(a.ranksPerNode.hi, b.ranksPerNode.hi);
  EXPECT_EQ(a.pipeOps.lo, b.pipeOps.lo);
  EXPECT_EQ(a.pipeOps.hi, b.pipeOps.hi);
  EXPECT_EQ(a.regBuff, b.regBuff);
  EXPECT_EQ(a.algorithms, b.algorithms);
  EXPECT_EQ(a.protocols, b.protocols);
  EXPECT_EQ(a.channels, b.channels);
  EXPECT_EQ(a.chunkBytes, b.chunkBytes);
  EXPECT_EQ(a.fabrics, b.fabrics);
  EXPECT_EQ(a.ncclVersions.lo, b.ncclVersions.lo);
  EXPECT_EQ(a.ncclVersions.hi, b.ncclVersions.hi);
  ASSERT_EQ(a.expected.size(), b.expected.size());
  for (size_t i = 0; i < a.expected.size(); ++i) {
    EXPECT_EQ(a.expected[i].bytes, b.expected[i].bytes);
    EXPECT_EQ(a.expected[i].microseconds, b.expected[i].microseconds);
  }
}

/// An NCCL cost table float[numAlgo][numProto] followed by guard cells that nothing may touch.
class CostTable {
 public:
  static constexpr float kGuard = 12345.5f;
  static constexpr int kGuardCells = 16;

  CostTable(int numAlgo, int numProto)
      : numAlgo_(numAlgo), numProto_(numProto), cells_(numAlgo * numProto + kGuardCells, kGuard) {
    // Distinct positive model times, so any write is visible.
    for (int a = 0; a < numAlgo; ++a) {
      for (int p = 0; p < numProto; ++p) at(a, p) = 10.0f + static_cast<float>(a * numProto + p);
    }
  }

  float& at(int algo, int proto) { return cells_[algo * numProto_ + proto]; }
  float at(int algo, int proto) const { return cells_[algo * numProto_ + proto]; }
  float* data() { return cells_.data(); }
  int numAlgo() const { return numAlgo_; }
  int numProto() const { return numProto_; }
  tuner::CostTableView view() { return tuner::CostTableView{cells_.data(), numAlgo_, numProto_}; }
  const std::vector<float>& raw() const { return cells_; }

  bool guardsIntact() const {
    for (size_t i = static_cast<size_t>(numAlgo_ * numProto_); i < cells_.size(); ++i) {
      if (cells_[i] != kGuard) return false;
    }
    return true;
  }

 private:
  int numAlgo_, numProto_;
  std::vector<float> cells_;
};

inline int idx(tuner::Algorithm a) {
  return static_cast<int>(a);
}
inline int idx(tuner::Protocol p) {
  return static_cast<int>(p);
}
inline int idx(tuner::Collective c) {
  return static_cast<int>(c);
}

}  // namespace pilot::test

namespace pilot::tuner {

/// NCCL's indices, short: algorithms and protocols (the cost table's rows and columns) and the
/// collectives the tuner ABI passes.
constexpr int kTree = 0, kRing = 1, kCollNetDirect = 2, kNvls = 4, kPat = 6;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kAllGather = 2, kAllReduce = 4;
/// The largest size: a band without an upper edge.
constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

}  // namespace pilot::tuner
