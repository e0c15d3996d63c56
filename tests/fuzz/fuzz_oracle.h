// The fuzzer's oracles: a plain first-match reference for CompiledTable, field equality for
// the round trip, probe sizes around every boundary, and invariant checks of TunerContext calls.
// Every check aborts on a violation.
#pragma once

#include <cstdint>
#include <vector>

#include "pilot/tuner/compiled_table.h"
#include "pilot/tuner/decision.h"
#include "pilot/tuner/tuner_runtime.h"

namespace fuzz {

using pilot::tuner::Collective;
using pilot::tuner::CommShape;
using pilot::tuner::CompiledTable;
using pilot::tuner::Rule;
using pilot::tuner::TunerContext;
using pilot::tuner::TuningTable;

/// Every field but the source line (the expected times exactly: formatDecimal round-trips).
bool sameFields(const Rule& a, const Rule& b);

/// 0, 1, small and huge sizes, and each boundary of `coll`'s lane with its neighbours (capped).
std::vector<uint64_t> probeSizes(const CompiledTable& table, Collective coll);

/// A deterministic per-rule "does the decision apply" answer for the differential check. Rules
/// without a choice or per-call condition must say yes: CompiledTable relies on that (they are
/// what TunerContext's visitors always accept) to drop the candidates behind them.
bool visitVerdict(const Rule& r);

/// The first rule of `table`, in file order, matching the shape, the facts (a fabric= key names
/// the fabric, an nccl= range holds all of facts.nccl), collective and NCCL nBytes (per-rank
/// sizes scaled by nRanks) for which visitVerdict says yes.
const Rule* referenceMatch(const TuningTable& table, const CommShape& shape,
                           const pilot::tuner::ProcessFacts& facts, Collective coll,
                           uint64_t nBytes);

/// The cells the table's explore=slow|known marks exclude at (coll, nBytes), by a linear scan.
uint32_t referenceExclusion(const TuningTable& table, const CommShape& shape,
                            const pilot::tuner::ProcessFacts& facts, Collective coll,
                            uint64_t nBytes);

/// getCollInfo on a guarded cost table: IGNORE cells stay IGNORE, others keep their value or
/// become 0 / -1, nothing past numAlgo is written, channels stay in 0..64; an invalid
/// collective changes nothing.
void checkCostTableCall(const TunerContext& ctx, int coll, uint64_t nBytes, int numAlgo,
                        int regBuff);
/// getCollInfoV2: both or neither of algorithm/protocol, in range.
void checkV2Call(const TunerContext& ctx, int coll, uint64_t nBytes);
/// getChunkSize: untouched or 1 .. 1 GiB.
void checkChunkCall(const TunerContext& ctx, int coll, uint64_t nBytes);

}  // namespace fuzz
