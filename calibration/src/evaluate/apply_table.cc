#include "evaluate/apply_table.h"

#include "pilot/calibration/fit.h"
#include "pilot/core/text.h"
#include "pilot/tuner/names.h"

namespace pilot::calibration::detail {
namespace {

/// NCCL's version code of "2.28.3", or 0 when it is not one.
uint64_t versionCode(const std::string& version) {
  const std::vector<std::string_view> parts = text::split(version, '.');
  if (parts.size() != 3) return 0;
  auto a = text::parseUnsigned(parts[0]), b = text::parseUnsigned(parts[1]),
       c = text::parseUnsigned(parts[2]);
  if (!a || !b || !c || *a > 99 || *b > 99 || *c > 99) return 0;
  return tuner::ncclVersionCode(static_cast<unsigned>(*a), static_cast<unsigned>(*b),
                                static_cast<unsigned>(*c));
}

bool sameChoice(const tuner::Rule& a, const tuner::Rule& b) {
  return a.algorithms == b.algorithms && a.protocols == b.protocols && a.channels == b.channels;
}

}  // namespace

int firstMatchingRule(const tuner::TuningTable& table, const Shape& shape, uint64_t size,
                      std::set<std::string>* assumed) {
  const auto coll = tuner::parseCollective(shape.key.collective);
  if (!coll) return -1;
  const ShapeKey& key = shape.key;
  const uint64_t version = versionCode(shape.ncclVersion);
  for (size_t k = 0; k < table.rules.size(); ++k) {
    const tuner::Rule& r = table.rules[k];
    if (r.isMark() || (r.collectives & tuner::bit(*coll)) == 0) continue;  // marks decide nothing
    const bool perRank =
        r.perRankSize && key.ranks > 0 &&
        (*coll == tuner::Collective::AllGather || *coll == tuner::Collective::ReduceScatter);
    if (!r.size.contains(perRank ? size / static_cast<uint64_t>(key.ranks) : size)) continue;
    auto fits = [](const tuner::Range& range, int v) {
      return range.any() || (v > 0 && range.contains(static_cast<uint64_t>(v)));
    };
    // nccl-tests issues one operation per group on unregistered buffers.
    if (!fits(r.nodes, key.nodes) || !fits(r.ranks, key.ranks) ||
        !fits(r.ranksPerNode, key.ranksPerNode()) || !r.pipeOps.contains(1) || r.regBuff == 1) {
      continue;
    }
    // The tuner drops a rule whose keys the running process does not match.
    if (r.fabrics != 0) {
      if (shape.fabrics != 0 && (shape.fabrics & r.fabrics) == 0) continue;
      if (assumed && (shape.fabrics & ~r.fabrics) != 0) assumed->insert("fabric");
      if (assumed && shape.fabrics == 0) assumed->insert("fabric");
    }
    if (!r.ncclVersions.any()) {
      if (version != 0 && !r.ncclVersions.contains(version)) continue;
      if (assumed && version == 0) assumed->insert("nccl");
    }
    return static_cast<int>(k);
  }
  return -1;
}

bool keepsNcclChoice(const tuner::Rule& rule) {
  return !rule.namesChoice() && rule.channels == 0;
}

int seriesForRule(const Shape& shape, const tuner::Rule& rule) {
  for (size_t c = 0; c < shape.series.size(); ++c) {
    const Series& s = shape.series[c];
    if (s.isDefault()) continue;
    auto forced = ruleForConfig(s.config);
    if (forced.ok() && sameChoice(*forced, rule)) return static_cast<int>(c);
  }
  return -1;
}

}  // namespace pilot::calibration::detail
