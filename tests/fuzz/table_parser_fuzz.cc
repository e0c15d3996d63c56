// libFuzzer target: arbitrary bytes as a tuning table. For every input:
//  1. parseTable never crashes (ASan/UBSan watch);
//  2. every parsed rule round-trips: formatRule -> parseTable gives one rule, no diagnostic,
//     equal fields;
//  3. for several communicator shapes and process facts (fabric, NCCL version),
//     CompiledTable::firstMatch agrees with a plain first-match scan of the parsed rules (a
//     differential check of the interval index and of the fabric=/nccl= keys), and the
//     explore= marks exclude the cells a plain scan of them says;
//  4. TunerContext lookups through every entry point keep NCCL's invariants on a cost table.
// Any violation aborts with the details on stderr.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_oracle.h"
#include "pilot/tuner/tuner_runtime.h"

using namespace pilot;
using namespace pilot::tuner;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "table_parser_fuzz: %s\n", what.c_str());
  std::abort();
}

void checkRoundTrip(const TuningTable& table) {
  for (const Rule& r : table.rules) {
    const std::string text = formatRule(r);
    ParsedTable again = parseTable(text, "round-trip");
    if (!again.diagnostics.empty()) {
      die("formatRule output does not parse: '" + text + "': " + again.diagnostics[0].message);
    }
    if (again.table.rules.size() != 1) die("formatRule output is not one rule: '" + text + "'");
    if (!fuzz::sameFields(r, again.table.rules[0])) {
      die("round trip changed a field: line " + std::to_string(r.line) + " -> '" + text + "' -> '" +
          formatRule(again.table.rules[0]) + "'");
    }
  }
}

void checkIndex(const TuningTable& table, const CompiledTable& compiled, const CommShape& shape,
                const ProcessFacts& facts) {
  for (int c = 0; c < kNumCollectives; ++c) {
    const auto coll = static_cast<Collective>(c);
    for (uint64_t size : fuzz::probeSizes(compiled, coll)) {
      auto visit = [](const Rule& r) { return fuzz::visitVerdict(r); };
      const Rule* got = compiled.firstMatch(coll, size, visit);
      const Rule* want = fuzz::referenceMatch(table, shape, facts, coll, size);
      const uint32_t excluded = compiled.exploreHints(coll, size).exclude;
      if (excluded != fuzz::referenceExclusion(table, shape, facts, coll, size)) {
        die("explore= marks disagree with a linear scan: " + std::string(collectiveName(coll)) +
            " " + std::to_string(size) + " bytes");
      }
      const int gotLine = got ? got->line : 0, wantLine = want ? want->line : 0;
      if (gotLine != wantLine) {
        die("index disagrees with a linear scan: " + std::string(collectiveName(coll)) + " " +
            std::to_string(size) + " bytes, nRanks " + std::to_string(shape.nRanks) + " nNodes " +
            std::to_string(shape.nNodes) + ": line " + std::to_string(gotLine) + " vs line " +
            std::to_string(wantLine));
      }
    }
  }
}

void checkContext(std::shared_ptr<const CompiledTable> compiled, bool trace) {
  const CompiledTable& table = *compiled;
  TunerContext ctx(compiled, std::make_unique<NullLogger>(), trace);
  for (int c = -1; c <= kNumCollectives; ++c) {
    const auto probeColl = static_cast<Collective>(c < 0 || c >= kNumCollectives ? 0 : c);
    for (uint64_t size : fuzz::probeSizes(table, probeColl)) {
      for (int numAlgo : {6, 7}) {
        for (int regBuff : {-1, 0, 1}) fuzz::checkCostTableCall(ctx, c, size, numAlgo, regBuff);
      }
      fuzz::checkV2Call(ctx, c, size);
      fuzz::checkChunkCall(ctx, c, size);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ParsedTable parsed = parseTable(text, "fuzz-input");
  checkRoundTrip(parsed.table);
  const uint64_t kHuge = std::numeric_limits<uint64_t>::max() / 3;
  const CommShape shapes[] = {CommShape::from(16, 2), CommShape::from(8, 1), CommShape::from(7, 3),
                              CommShape::from(1, 1), CommShape::from(kHuge, 4)};
  // Facts the fabric= and nccl= keys are matched with: none known, one exact version, and the
  // releases a tuner ABI implies.
  ProcessFacts facts[3];
  facts[1].fabric = Fabric::InfiniBand;
  facts[1].nccl = Range::exactly(ncclVersionCode(2, 28, 9));
  facts[2].fabric = Fabric::RoCE;
  facts[2].nccl = ncclVersionsOfTunerAbi(6);
  int i = 0;
  for (const CommShape& shape : shapes) {
    const ProcessFacts& f = facts[i++ % 3];
    auto compiled =
        std::make_shared<const CompiledTable>(CompiledTable::compile(parsed.table, shape, f));
    checkIndex(parsed.table, *compiled, shape, f);
    checkContext(compiled, /*trace=*/size % 2 == 1);
  }
  return 0;
}
