#include <cerrno>
#include <cstring>
#include <sstream>

#include "pilot/core/file.h"
#include "pilot/core/sha256.h"
#include "pilot/core/text.h"
#include "pilot/tuner/table.h"

namespace pilot::tuner {
namespace {

constexpr uint64_t kAny = std::numeric_limits<uint64_t>::max();

bool singleBit(unsigned v) {
  return v != 0 && (v & (v - 1)) == 0;
}

/// Thrown only inside this file, caught per line; never escapes parseTable.
struct LineError {
  std::string message;
};

[[noreturn]] void fail(std::string message) {
  throw LineError{std::move(message)};
}

std::string quoted(std::string_view s) {
  return "'" + std::string(s.substr(0, 64)) + "'";
}

uint64_t parseBound(std::string_view s, bool bytes, std::string_view key) {
  auto v = bytes ? text::parseBytes(s) : text::parseUnsigned(s);
  if (!v) {
    fail(std::string(key) + ": " + quoted(s) +
         (bytes ? " is not a byte count (use 4096, 64K, 16M, 1G)" : " is not a whole number"));
  }
  return *v;
}

/// "A..B", "A..", "..B", "A", "*" (or any wildcard).
Range parseRange(std::string_view s, bool bytes, std::string_view key) {
  if (isWildcard(s)) return Range{};
  Range r;
  size_t dots = s.find("..");
  if (dots == std::string_view::npos) {
    r.lo = r.hi = parseBound(s, bytes, key);
  } else {
    std::string_view lo = s.substr(0, dots), hi = s.substr(dots + 2);
    if (lo.empty() && hi.empty()) fail(std::string(key) + ": empty range '..'");
    if (!lo.empty()) r.lo = parseBound(lo, bytes, key);
    if (!hi.empty()) r.hi = parseBound(hi, bytes, key);
  }
  if (r.lo > r.hi) fail(std::string(key) + ": lower bound is above upper bound in " + quoted(s));
  return r;
}

AlgoMask parseAlgorithms(std::string_view s) {
  if (isWildcard(s)) return 0;
  AlgoMask mask = 0;
  for (std::string_view name : text::split(s, '|')) {
    auto a = parseAlgorithm(text::trim(name));
    if (!a) fail("unknown algorithm " + quoted(name) + " (expected " + algorithmNameList() + ")");
    mask |= bit(*a);
  }
  return mask;
}

ProtoMask parseProtocols(std::string_view s) {
  if (isWildcard(s)) return 0;
  ProtoMask mask = 0;
  for (std::string_view name : text::split(s, '|')) {
    auto p = parseProtocol(text::trim(name));
    if (!p) fail("unknown protocol " + quoted(name) + " (expected " + protocolNameList() + ")");
    mask |= bit(*p);
  }
  return mask;
}

CollMask parseCollectives(std::string_view s) {
  if (s == "*" || text::equalsIgnoreCase(s, "any")) return kAllCollectives;
  CollMask mask = 0;
  for (std::string_view name : text::split(s, '|')) {
    auto c = parseCollective(text::trim(name));
    if (!c) fail("unknown collective " + quoted(name) + " (expected " + collectiveNameList() + ")");
    mask |= bit(*c);
  }
  return mask;
}

int parseChannels(std::string_view s) {
  if (isWildcard(s) || s == "0") return 0;
  auto v = text::parseUnsigned(s);
  if (!v || *v > static_cast<uint64_t>(kMaxChannels)) {
    fail("channels: " + quoted(s) + " is not -1 (keep NCCL's) or 1.." +
         std::to_string(kMaxChannels));
  }
  return static_cast<int>(*v);
}

int parseRegBuff(std::string_view s) {
  if (isWildcard(s)) return -1;
  if (s == "0") return 0;
  if (s == "1") return 1;
  fail("regbuff: " + quoted(s) + " is not -1, 0 or 1");
}

FabricMask parseFabrics(std::string_view s) {
  if (isWildcard(s)) return 0;
  FabricMask mask = 0;
  for (std::string_view name : text::split(s, '|')) {
    auto f = parseFabric(text::trim(name));
    if (!f) fail("fabric: unknown fabric " + quoted(name) + " (expected ib, roce, ethernet)");
    mask |= bit(*f);
  }
  return mask;
}

/// "2.28" -> [2.28.0, 2.28.99] (or its lower end alone: `upper` false); "2.28.9" -> 2.28.9.
uint64_t parseVersionEnd(std::string_view s, bool upper) {
  std::vector<std::string_view> parts = text::split(s, '.');
  std::optional<uint64_t> n[3];
  const bool shapeOk = parts.size() == 2 || parts.size() == 3;
  for (size_t i = 0; shapeOk && i < parts.size(); ++i) n[i] = text::parseUnsigned(parts[i]);
  if (!shapeOk || !n[0] || !n[1] || (parts.size() == 3 && !n[2]) || *n[0] == 0 || *n[0] > 99 ||
      *n[1] > 99 || (n[2] && *n[2] > 99)) {
    fail("nccl: " + quoted(s) + " is not a version like 2.28 or 2.28.9");
  }
  const uint64_t patch = parts.size() == 3 ? *n[2] : (upper ? 99 : 0);
  return ncclVersionCode(static_cast<unsigned>(*n[0]), static_cast<unsigned>(*n[1]),
                         static_cast<unsigned>(patch));
}

/// "2.28", "2.28-2.30", "2.28.3-2.30", "2.29-" (and up), "-2.30" (up to), "*".
Range parseVersions(std::string_view s) {
  if (isWildcard(s)) return Range{};
  Range r;
  const size_t dash = s.find('-');
  if (dash == std::string_view::npos) {
    r.lo = parseVersionEnd(s, false);
    r.hi = parseVersionEnd(s, true);
  } else {
    std::string_view lo = s.substr(0, dash), hi = s.substr(dash + 1);
    if (lo.empty() && hi.empty()) fail("nccl: empty range '-'");
    if (!lo.empty()) r.lo = parseVersionEnd(lo, false);
    if (!hi.empty()) r.hi = parseVersionEnd(hi, true);
  }
  if (r.lo > r.hi) fail("nccl: lower version is above the upper one in " + quoted(s));
  return r;
}

/// "64K:12.5|128K:14.25": sizes strictly ascending, times in microseconds, positive.
std::vector<ExpectedTime> parseExpected(std::string_view s) {
  std::vector<ExpectedTime> points;
  for (std::string_view item : text::split(s, '|')) {
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      fail("expect: " + quoted(item) + " is not SIZE:MICROSECONDS (e.g. 64K:12.5)");
    }
    ExpectedTime p;
    p.bytes = parseBound(item.substr(0, colon), true, "expect");
    std::optional<double> us = text::parseDecimal(item.substr(colon + 1));
    if (!us || *us <= 0 || *us > 1e12) {
      fail("expect: " + quoted(item.substr(colon + 1)) + " is not a time in microseconds");
    }
    p.microseconds = *us;
    if (!points.empty() && p.bytes <= points.back().bytes) {
      fail("expect: sizes must be ascending, " + quoted(item) + " is not");
    }
    if (points.size() == kMaxExpectedTimes) {
      fail("expect: more than " + std::to_string(kMaxExpectedTimes) + " points");
    }
    points.push_back(p);
  }
  return points;
}

/// A count key of the example CSV: -1 = any, else a positive number.
Range parseCsvCount(std::string_view s, std::string_view key) {
  if (isWildcard(s)) return Range{};
  auto v = text::parseUnsigned(s);
  if (!v || *v == 0) fail(std::string(key) + ": " + quoted(s) + " is not -1 or a positive number");
  return Range::exactly(*v);
}

/// collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]
Rule parseCsvLine(std::string_view line) {
  std::vector<std::string_view> f = text::split(line, ',');
  for (auto& field : f) field = text::trim(field);
  if (f.size() < 8 || f.size() > 10) {
    fail(
        "expected 8 to 10 comma-separated fields "
        "(collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks"
        "[,numPipeOps[,regBuff]]), found " +
        std::to_string(f.size()));
  }
  Rule r;
  r.collectives = parseCollectives(f[0]);
  r.size.lo = f[1] == "-1" ? 0 : parseBound(f[1], true, "min_bytes");
  r.size.hi = f[2] == "-1" ? kAny : parseBound(f[2], true, "max_bytes");
  if (r.size.lo > r.size.hi) fail("min_bytes is above max_bytes");
  r.algorithms = parseAlgorithms(f[3]);
  r.protocols = parseProtocols(f[4]);
  r.channels = parseChannels(f[5]);
  r.nodes = parseCsvCount(f[6], "nNodes");
  r.ranks = parseCsvCount(f[7], "nRanks");
  if (f.size() > 8) r.pipeOps = parseCsvCount(f[8], "numPipeOps");
  if (f.size() > 9) r.regBuff = parseRegBuff(f[9]);
  return r;
}

ExploreMark parseExploreMark(std::string_view value) {
  if (text::equalsIgnoreCase(value, "slow")) return ExploreMark::Slow;
  if (text::equalsIgnoreCase(value, "known")) return ExploreMark::Known;
  if (text::equalsIgnoreCase(value, "first")) return ExploreMark::First;
  fail("explore: " + quoted(value) + " is not slow, known or first");
}

/// allreduce size=0..64K algo=tree proto=ll nodes=2 ranks=16 rpn=8 pipeops=1 regbuff=0
///           channels=8 chunk=128K per-rank
Rule parseNativeLine(std::string_view line) {
  std::vector<std::string_view> tokens = text::splitWhitespace(line);
  Rule r;
  r.collectives = parseCollectives(tokens[0]);
  bool seen[16] = {};
  auto once = [&](int slot, std::string_view key) {
    if (seen[slot]) fail("key '" + std::string(key) + "' given twice");
    seen[slot] = true;
  };
  for (size_t i = 1; i < tokens.size(); ++i) {
    std::string_view token = tokens[i];
    if (text::equalsIgnoreCase(token, "per-rank")) {
      once(0, token);
      r.perRankSize = true;
      continue;
    }
    size_t eq = token.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == token.size()) {
      fail("expected key=value, found " + quoted(token));
    }
    std::string key = text::toLower(token.substr(0, eq));
    std::string_view value = token.substr(eq + 1);
    if (key == "size")
      once(1, key), r.size = parseRange(value, true, key);
    else if (key == "algo")
      once(2, key), r.algorithms = parseAlgorithms(value);
    else if (key == "proto")
      once(3, key), r.protocols = parseProtocols(value);
    else if (key == "nodes")
      once(4, key), r.nodes = parseRange(value, false, key);
    else if (key == "ranks")
      once(5, key), r.ranks = parseRange(value, false, key);
    else if (key == "rpn")
      once(6, key), r.ranksPerNode = parseRange(value, false, key);
    else if (key == "pipeops")
      once(7, key), r.pipeOps = parseRange(value, false, key);
    else if (key == "regbuff")
      once(8, key), r.regBuff = parseRegBuff(value);
    else if (key == "channels")
      once(9, key), r.channels = parseChannels(value);
    else if (key == "chunk") {
      once(10, key);
      if (isWildcard(value)) continue;
      r.chunkBytes = parseBound(value, true, key);
      if (r.chunkBytes == 0 || r.chunkBytes > kMaxChunkBytes) {
        fail("chunk: " + quoted(value) + " is not between 1 and 1G");
      }
    } else if (key == "fabric") {
      once(11, key), r.fabrics = parseFabrics(value);
    } else if (key == "nccl") {
      once(12, key), r.ncclVersions = parseVersions(value);
    } else if (key == "expect") {
      once(13, key), r.expected = parseExpected(value);
    } else if (key == "explore") {
      once(14, key), r.explore = parseExploreMark(value);
    } else {
      fail("unknown key " + quoted(key) +
           " (expected size, algo, proto, nodes, ranks, rpn, pipeops, regbuff, channels, chunk, "
           "fabric, nccl, expect, explore, per-rank)");
    }
  }
  if (r.isMark()) {
    // A mark names cells and decides nothing: no per-call condition or setting of a rule.
    if (!r.namesChoice()) fail("explore: name the cells it marks with algo= and/or proto=");
    if (r.channels != 0 || r.chunkBytes != 0 || !r.expected.empty() || !r.pipeOps.any() ||
        r.regBuff >= 0) {
      fail("explore: a mark takes no channels, chunk, expect, pipeops or regbuff");
    }
  }
  return r;
}

}  // namespace

const char* exploreMarkName(ExploreMark mark) {
  switch (mark) {
    case ExploreMark::Slow:
      return "slow";
    case ExploreMark::Known:
      return "known";
    case ExploreMark::First:
      return "first";
    case ExploreMark::None:
      break;
  }
  return "";
}

bool Rule::selectsOneCell() const {
  return singleBit(algorithms) && singleBit(protocols);
}

ParsedTable parseTable(std::string_view text, std::string source) {
  ParsedTable out;
  out.table.source = std::move(source);
  out.table.sha256 = sha256Hex(text);
  int lineNo = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineNo;
    if (raw.size() > kMaxLineBytes) {
      out.diagnostics.push_back(
          {lineNo, "line is longer than " + std::to_string(kMaxLineBytes) + " bytes"});
      continue;
    }
    std::string_view line = text::trim(raw);
    if (line.rfind("#@", 0) == 0) {
      std::string_view entry = text::trim(line.substr(2));
      size_t colon = entry.find(':');
      if (colon != std::string_view::npos) {
        out.table.provenance.emplace_back(std::string(text::trim(entry.substr(0, colon))),
                                          std::string(text::trim(entry.substr(colon + 1))));
      }
      continue;
    }
    line = text::trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    try {
      Rule rule =
          line.find(',') != std::string_view::npos ? parseCsvLine(line) : parseNativeLine(line);
      rule.line = lineNo;
      out.table.rules.push_back(rule);
    } catch (const LineError& e) {
      out.diagnostics.push_back({lineNo, e.message});
    }
  }
  return out;
}

ParsedTable loadTableFile(const std::string& path) {
  std::string content;
  int openErrno = 0;
  std::string problem;
  switch (readFileUpTo(path, kMaxTableBytes, &content, &openErrno)) {
    case ReadOutcome::Ok:
      return parseTable(content, path);
    case ReadOutcome::CannotOpen:
      problem = std::string("cannot open: ") + std::strerror(openErrno);
      break;
    case ReadOutcome::TooLarge:
      problem = "file is larger than " + text::formatBytes(kMaxTableBytes) + "; not loaded";
      break;
    case ReadOutcome::ReadError:
      problem = "read error";
      break;
  }
  ParsedTable out;
  out.table.source = path;
  out.diagnostics.push_back({0, problem});
  return out;
}

std::string formatRule(const Rule& r) {
  std::ostringstream os;
  if (r.collectives == kAllCollectives) {
    os << "any";
  } else {
    const char* sep = "";
    for (int c = 0; c < kNumCollectives; ++c) {
      if (r.collectives & (1u << c))
        os << sep << collectiveName(static_cast<Collective>(c)), sep = "|";
    }
  }
  auto range = [&](const char* key, const Range& x, bool bytes) {
    if (x.any()) return;
    auto fmt = [&](uint64_t v) { return bytes ? text::formatBytes(v) : std::to_string(v); };
    os << ' ' << key << '=';
    if (x.lo == x.hi)
      os << fmt(x.lo);
    else
      os << (x.lo == 0 ? "" : fmt(x.lo)) << ".." << (x.hi == kAny ? "" : fmt(x.hi));
  };
  range("size", r.size, true);
  if (r.perRankSize) os << " per-rank";
  auto mask = [&](const char* key, unsigned m, int n, auto name) {
    if (m == 0) return;
    os << ' ' << key << '=';
    const char* sep = "";
    for (int i = 0; i < n; ++i) {
      if (m & (1u << i)) os << sep << name(i), sep = "|";
    }
  };
  mask("algo", r.algorithms, kNumAlgorithms,
       [](int i) { return algorithmName(static_cast<Algorithm>(i)); });
  mask("proto", r.protocols, kNumProtocols,
       [](int i) { return protocolName(static_cast<Protocol>(i)); });
  range("nodes", r.nodes, false);
  range("ranks", r.ranks, false);
  range("rpn", r.ranksPerNode, false);
  range("pipeops", r.pipeOps, false);
  if (r.regBuff >= 0) os << " regbuff=" << r.regBuff;
  if (r.channels > 0) os << " channels=" << r.channels;
  if (r.chunkBytes > 0) os << " chunk=" << text::formatBytes(r.chunkBytes);
  mask("fabric", r.fabrics, kNumFabrics, [](int i) { return fabricName(static_cast<Fabric>(i)); });
  if (!r.ncclVersions.any()) {
    auto version = [](uint64_t code, bool upper) {
      const uint64_t patch = code % 100;
      std::string v = std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100);
      if (patch != (upper ? 99u : 0u)) v += "." + std::to_string(patch);
      return v;
    };
    const Range& v = r.ncclVersions;
    os << " nccl=";
    if (v.lo / 100 == v.hi / 100 && v.lo % 100 == 0 && v.hi % 100 == 99) {
      os << version(v.lo, false);
    } else if (v.lo == v.hi) {
      os << version(v.lo, false) << (v.lo % 100 == 0 ? ".0" : "");
    } else {
      os << (v.lo == 0 ? "" : version(v.lo, false)) << '-'
         << (v.hi == kAny ? "" : version(v.hi, true));
    }
  }
  if (r.isMark()) os << " explore=" << exploreMarkName(r.explore);
  if (!r.expected.empty()) {
    os << " expect=";
    const char* sep = "";
    for (const ExpectedTime& p : r.expected) {
      os << sep << text::formatBytes(p.bytes) << ':' << text::formatDecimal(p.microseconds);
      sep = "|";
    }
  }
  return os.str();
}

}  // namespace pilot::tuner
