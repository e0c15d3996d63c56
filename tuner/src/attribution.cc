#include "pilot/tuner/attribution.h"

namespace pilot::tuner {
namespace {

bool channelsAdmit(const Rule& r, int nChannels) {
  return r.channels <= 0 || nChannels <= 0 || nChannels <= r.channels;
}

bool choiceAdmits(const Rule& r, const RanDecision& ran) {
  const bool algo = r.algorithms == 0 || (r.algorithms & bit(ran.algorithm)) != 0;
  const bool proto = r.protocols == 0 || (r.protocols & bit(ran.protocol)) != 0;
  return algo && proto;
}

}  // namespace

const Rule* attributeDecision(const CompiledTable& table, const RanDecision& ran) {
  const CompiledTable::Span span = table.candidates(ran.collective, ran.nBytes);
  for (const HotRule* h = span.begin; h != span.end; ++h) {
    if (ran.nBytes < h->sizeLo || ran.nBytes > h->sizeHi) continue;
    const Rule& r = table.rule(h->rule);
    if (r.namesChoice()) {
      if (choiceAdmits(r, ran) && channelsAdmit(r, ran.nChannels)) return &r;
      continue;
    }
    if (r.channels > 0 && channelsAdmit(r, ran.nChannels)) return &r;
    if (r.alwaysApplies()) return nullptr;
  }
  return nullptr;
}

}  // namespace pilot::tuner
