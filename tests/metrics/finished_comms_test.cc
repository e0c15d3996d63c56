// FinishedComms (metrics/finished_comms.h): finalized communicators folded per name and shape,
// their figures adding up exactly (the same as one communicator that made every call), the
// record's id, the bounds on records and keys, and the lines the summary gets.
#include "pilot/metrics/finished_comms.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "pilot/metrics/summary.h"

namespace pilot::metrics {
namespace {

ProcessReport process() {
  ProcessReport p;
  p.node = "n1";
  p.pid = 42;
  return p;
}

KeyTotals totals(std::initializer_list<uint64_t> ns, uint64_t bytes) {
  KeyAggregate a;
  for (uint64_t t : ns) {
    Completion c;
    c.timeNs = t;
    c.messageBytes = bytes;
    c.busBytes = static_cast<double>(bytes) * 1.75;
    a.record(c);
  }
  return a.totals();
}

KeyReport key(Operation op, uint8_t bucket, const KeyTotals& t) {
  KeyReport k;
  k.fields.op = op;
  k.fields.bucket = bucket;
  k.fields.algorithm = 1;
  k.fields.protocol = 2;
  k.fields.channels = 4;
  k.decision = "NCCL";
  k.total = t;
  k.interval = t;
  return k;
}

CommReport comm(uint64_t id, const std::string& name, int rank = 3) {
  CommReport c;
  c.identity.commId = id;
  c.identity.name = name;
  c.identity.nRanks = 8;
  c.identity.nNodes = 2;
  c.identity.rank = rank;
  c.identity.gpu = "GPU3";
  c.finalized = true;
  return c;
}

SampleKey sampleKey(uint64_t bytes) {
  SampleKey k;
  k.op = Operation::AllReduce;
  k.messageBytes = bytes;
  k.algorithm = 1;
  k.protocol = 2;
  k.channels = 4;
  return k;
}

/// Absolute bin -> count of a view.
std::map<int, uint64_t> binsOf(const CallSamples::View& v) {
  std::map<int, uint64_t> out;
  for (size_t b = 0; b < v.counts.size(); ++b) {
    if (v.counts[b] != 0) out[v.firstBin + static_cast<int>(b)] += v.counts[b];
  }
  return out;
}

TEST(FinishedComms, CommunicatorsOfOneNameAndShapeAddUpExactly) {
  FinishedComms f;
  CommReport a = comm(0xa1, "weight_sync");
  a.collectives.seen = 5;
  a.collectives.measured = 3;
  a.collectives.skipped[static_cast<int>(Skip::Abandoned)] = 2;
  a.keys.push_back(key(Operation::Broadcast, 22, totals({300'000, 310'000, 290'000}, 4 << 20)));
  CommReport b = comm(0xb2, "weight_sync");
  b.collectives.seen = 2;
  b.collectives.measured = 2;
  b.keys.push_back(key(Operation::Broadcast, 22, totals({450'000, 280'000}, 4 << 20)));
  b.keys.push_back(key(Operation::AllGather, 10, totals({9'000}, 1024)));

  f.add(a, process());
  ASSERT_EQ(f.records().size(), 1u);
  EXPECT_EQ(f.records()[0]->identity.commId, 0xa1u) << "one communicator: its own id";
  f.add(b, process());
  ASSERT_EQ(f.records().size(), 1u);
  const CommReport& r = *f.records()[0];
  EXPECT_EQ(r.folded, 2u);
  EXPECT_EQ(r.firstCommId, 0xa1u);
  EXPECT_EQ(r.lastCommId, 0xb2u);
  EXPECT_EQ(r.identity.commId, FinishedComms::foldedId(a.identity));
  EXPECT_EQ(r.collectives.seen, 7u);
  EXPECT_EQ(r.collectives.measured, 5u);
  EXPECT_EQ(r.collectives.skipped[static_cast<int>(Skip::Abandoned)], 2u);
  ASSERT_EQ(r.keys.size(), 2u);
  // The same totals as one aggregate that saw all five Broadcasts.
  const KeyTotals all = totals({300'000, 310'000, 290'000, 450'000, 280'000}, 4 << 20);
  const KeyTotals& k = r.keys[0].total;
  EXPECT_EQ(k.calls, all.calls);
  EXPECT_EQ(k.timeNs, all.timeNs);
  EXPECT_EQ(k.messageBytes, all.messageBytes);
  EXPECT_DOUBLE_EQ(k.busBytes, all.busBytes);
  EXPECT_EQ(k.minNs, 280'000u);
  EXPECT_EQ(k.maxNs, 450'000u);
  for (unsigned i = 0; i < kBins; ++i) EXPECT_EQ(k.bins[i], all.bins[i]) << "bin " << i;
  EXPECT_DOUBLE_EQ(busGbs(k), busGbs(all));
  EXPECT_EQ(r.keys[1].total.calls, 1u);
  EXPECT_EQ(r.keys[1].fields.op, Operation::AllGather);

  const CommCounts n = f.counts();
  EXPECT_EQ(n.finished, 2u);
  EXPECT_EQ(n.records, 1u);
  EXPECT_EQ(n.dropped, 0u);
}

TEST(FinishedComms, TheRecordIdIsEveryRanksAlikeAndRanksStayApart) {
  // Two processes (ranks 0 and 5) fold the same communicators: the same id, so monitor
  // compares them as one group's ranks; within a process each rank has its record.
  FinishedComms rank0, rank5, both;
  for (uint64_t id : {0x11u, 0x12u}) {
    rank0.add(comm(id, "ep", 0), process());
    rank5.add(comm(id, "ep", 5), process());
    both.add(comm(id, "ep", 0), process());
    both.add(comm(id, "ep", 5), process());
  }
  EXPECT_EQ(rank0.records()[0]->identity.commId, rank5.records()[0]->identity.commId);
  EXPECT_EQ(both.records().size(), 2u);
  // Another name, or the same name with another shape, is another record and another id.
  CommReport other = comm(0x13, "ep");
  other.identity.nRanks = 16;
  EXPECT_NE(FinishedComms::foldedId(other.identity),
            FinishedComms::foldedId(comm(0x13, "ep").identity));
  EXPECT_NE(FinishedComms::foldedId(comm(0x13, "ep2").identity),
            FinishedComms::foldedId(comm(0x13, "ep").identity));
}

TEST(FinishedComms, CalibrationSamplesFromDifferentWindowsAddUpBinByBin) {
  // Two communicators whose first calls differ put their 2% windows at different bins; folded,
  // each call is in the bin of its time, as if one communicator had made them all.
  CallSamples first, second, one;
  const unsigned a = first.slotOf(sampleKey(1 << 20));
  const unsigned b = second.slotOf(sampleKey(1 << 20));
  const unsigned c = one.slotOf(sampleKey(1 << 20));
  for (uint64_t ns : {50'000u, 51'000u, 60'000u}) {
    first.record(a, ns);
    one.record(c, ns);
  }
  for (uint64_t ns : {90'000u, 50'500u, 120'000u}) {
    second.record(b, ns);
    one.record(c, ns);
  }
  CommReport x = comm(1, "sync"), y = comm(2, "sync");
  x.samples = first.snapshot();
  x.sampleDecisions = {"rule 1 (line 3)"};
  y.samples = second.snapshot();
  y.sampleDecisions = {"rule 1 (line 3)"};
  ASSERT_NE(x.samples[0].firstBin, y.samples[0].firstBin);
  FinishedComms f;
  f.add(x, process());
  f.add(y, process());
  const CommReport& r = *f.records()[0];
  ASSERT_EQ(r.samples.size(), 1u);
  const CallSamples::View& merged = r.samples[0];
  const CallSamples::View whole = one.snapshot()[0];
  EXPECT_EQ(merged.calls, 6u);
  EXPECT_EQ(merged.sumNs, whole.sumNs);
  EXPECT_EQ(merged.minNs, 50'000u);
  EXPECT_EQ(merged.maxNs, 120'000u);
  EXPECT_EQ(binsOf(merged), binsOf(whole));
  EXPECT_EQ(r.sampleDecisions[0], "rule 1 (line 3)");
  // Another exact size is another sample.
  CommReport z = comm(3, "sync");
  CallSamples third;
  third.record(third.slotOf(sampleKey((1 << 20) + 4)), 70'000);
  z.samples = third.snapshot();
  f.add(z, process());
  EXPECT_EQ(f.records()[0]->samples.size(), 2u);
}

TEST(FinishedComms, RecordsAreBoundedLeastRecentlyFinishedFirstAndCounted) {
  FinishedComms f;
  const size_t n = FinishedComms::kMaxRecords;
  for (size_t i = 0; i < n; ++i) {
    CommReport c = comm(i + 1, "name " + std::to_string(i));
    c.collectives.measured = 1;
    f.add(c, process());
  }
  // Name 0 finishes again: now the most recent; name 1 is the least recent.
  CommReport again = comm(1000, "name 0");
  again.collectives.measured = 1;
  f.add(again, process());
  CommReport fresh = comm(2000, "fresh");
  fresh.collectives.measured = 7;
  f.add(fresh, process());
  const CommCounts counts = f.counts();
  EXPECT_EQ(counts.records, n);
  EXPECT_EQ(counts.finished, n + 2);
  EXPECT_EQ(counts.dropped, 1u);
  EXPECT_EQ(counts.droppedCalls, 1u);
  std::map<std::string, uint64_t> names;
  for (const CommReport* r : f.records()) names[r->identity.name] = r->folded;
  EXPECT_EQ(names.count("name 1"), 0u);
  EXPECT_EQ(names["name 0"], 2u);
  EXPECT_EQ(names["fresh"], 1u);
  EXPECT_EQ(f.records().back()->identity.name, "fresh");
}

TEST(FinishedComms, KeysPastTheBoundShareTheRecordsOtherKey) {
  FinishedComms f;
  for (unsigned i = 0; i < FinishedComms::kMaxKeys + 10; ++i) {
    CommReport c = comm(i + 1, "many sizes");
    c.keys.push_back(
        key(Operation::AllReduce, static_cast<uint8_t>(i % 60), totals({1'000 + i}, 64)));
    c.keys.back().fields.channels = static_cast<uint8_t>(1 + i / 60);
    f.add(c, process());
  }
  const CommReport& r = *f.records()[0];
  ASSERT_EQ(r.keys.size(), FinishedComms::kMaxKeys + 1);
  EXPECT_TRUE(r.keys.back().other);
  EXPECT_EQ(r.keys.back().total.calls, 10u);
  uint64_t calls = 0;
  for (const KeyReport& k : r.keys) calls += k.total.calls;
  EXPECT_EQ(calls, FinishedComms::kMaxKeys + 10);
}

TEST(FinishedComms, TheSummaryHasEachRecordOnceWithItsCount) {
  FinishedComms f;
  for (uint64_t id = 1; id <= 3; ++id) {
    CommReport c = comm(id, "sync \"q\"");
    c.keys.push_back(key(Operation::Broadcast, 22, totals({400'000}, 4 << 20)));
    f.add(c, process());
  }
  std::string text;
  f.appendSummary(&text);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);  // communicator + one key
  EXPECT_NE(text.find("\"comm_name\":\"sync \\\"q\\\"\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"folded\":3,\"first_comm\":\"0x1\",\"last_comm\":\"0x3\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"calls\":3,\"bytes\":12582912"), std::string::npos) << text;
  EXPECT_NE(text.find("\"comm\":\"" +
                      commIdText(FinishedComms::foldedId(comm(1, "sync \"q\"").identity)) + "\""),
            std::string::npos);
}

}  // namespace
}  // namespace pilot::metrics
