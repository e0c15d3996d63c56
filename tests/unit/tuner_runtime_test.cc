// TunerRuntime / TunerContext: where the table comes from, what gets logged, strict mode, the
// shape cache and the per-call entry points, with settings from a map (never the process env).
#include "pilot/tuner/tuner_runtime.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "pilot/version.h"
#include "test_support.h"

namespace pilot::tuner {
namespace {

using test::contains;
using test::CostTable;
using test::linesAt;
using test::LogLine;

class RuntimeTest : public ::testing::Test {
 protected:
  std::unique_ptr<TunerContext> create(TunerRuntime& runtime, ContextParams params = {}) {
    auto ctx = runtime.createContext(params, std::make_unique<test::RecordingLogger>(sink_));
    EXPECT_TRUE(ctx.ok()) << ctx.error();
    if (!ctx.ok()) return nullptr;
    return std::move(ctx.value());
  }

  std::unique_ptr<TunerContext> createWith(std::map<std::string, std::string> env,
                                           ContextParams params = {}) {
    runtime_ = std::make_unique<TunerRuntime>(test::mapEnv(std::move(env)));
    return create(*runtime_, params);
  }

  std::vector<LogLine> warns() const { return linesAt(sink_, LogLevel::Warn); }
  std::vector<LogLine> infos() const { return linesAt(sink_, LogLevel::Info); }
  std::vector<LogLine> traces() const { return linesAt(sink_, LogLevel::Trace); }

  /// Runs getCollInfo on a fresh 7x3 table; returns the cell set to 0.0 (algo*3+proto) or -1.
  static int selectedCell(const TunerContext& ctx, int coll = kAllReduce, uint64_t nBytes = 4096) {
    CostTable table(7, 3);
    ctx.getCollInfo(coll, nBytes, 1, table.data(), 7, 3, 0, nullptr);
    for (int a = 0; a < 7; ++a) {
      for (int p = 0; p < 3; ++p) {
        if (table.at(a, p) == 0.0f) return a * 3 + p;
      }
    }
    return -1;
  }

  test::TempDir dir_;
  test::LogSink sink_ = test::makeSink();
  std::unique_ptr<TunerRuntime> runtime_;
};

TEST_F(RuntimeTest, NoTableLeavesEverythingToNccl) {
  auto ctx = createWith({});
  ASSERT_NE(ctx, nullptr);
  EXPECT_FALSE(ctx->active());
  CostTable table(7, 3), before = table;
  int nChannels = 5;
  ctx->getCollInfo(kAllReduce, 4096, 1, table.data(), 7, 3, 0, &nChannels);
  EXPECT_EQ(table.raw(), before.raw());
  EXPECT_EQ(nChannels, 5);
  int algorithm = -1, protocol = -1;
  ctx->getCollInfoV2(kAllReduce, 4096, 0, 0, 1, &algorithm, &protocol, &nChannels);
  EXPECT_EQ(algorithm, -1);
  EXPECT_EQ(protocol, -1);
  size_t chunk = 99;
  ctx->getChunkSize(kAllReduce, 4096, kRing, kSimple, &chunk);
  EXPECT_EQ(chunk, 99u);
  EXPECT_TRUE(warns().empty());
  ASSERT_EQ(infos().size(), 2u);
  EXPECT_EQ(infos()[0].message, std::string("nccl-pilot ") + kVersion);
  EXPECT_TRUE(contains(infos()[1].message, "no tuning table")) << infos()[1].message;
  EXPECT_EQ(runtime_->cachedShapes(), 0u);
}

TEST_F(RuntimeTest, PilotTableIsPreferredOverTheNcclConfigFile) {
  std::string pilot = dir_.write("pilot.table", "allreduce algo=tree proto=ll\n");
  std::string nccl = dir_.write("nccl_tuner.conf", "allreduce,0,-1,ring,simple,-1,-1,-1\n");
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", pilot}, {"NCCL_TUNER_CONFIG_FILE", nccl}});
  ASSERT_NE(ctx, nullptr);
  EXPECT_TRUE(ctx->active());
  EXPECT_EQ(selectedCell(*ctx), kTree * 3 + kLL);
  bool loadedLine = false;
  for (const LogLine& l : infos())
    loadedLine |= contains(l.message, "loaded 1 rules from " + pilot);
  EXPECT_TRUE(loadedLine);
}

TEST_F(RuntimeTest, FallsBackToTheNcclConfigFile) {
  std::string nccl = dir_.write("nccl_tuner.conf", "allreduce,0,-1,ring,simple,-1,-1,-1\n");
  for (const char* pilotValue : {"", "   "}) {
    SCOPED_TRACE(std::string("NCCL_PILOT_TUNER_TABLE='") + pilotValue + "'");
    std::map<std::string, std::string> env = {{"NCCL_TUNER_CONFIG_FILE", nccl}};
    if (*pilotValue) env["NCCL_PILOT_TUNER_TABLE"] = pilotValue;
    auto ctx = createWith(env);
    ASSERT_NE(ctx, nullptr);
    EXPECT_TRUE(ctx->active());
    EXPECT_EQ(selectedCell(*ctx), kRing * 3 + kSimple);
  }
}

TEST_F(RuntimeTest, UnreadableTableWarnsAndInitSucceeds) {
  std::string missing = dir_.path() + "/missing.table";
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", missing}});
  ASSERT_NE(ctx, nullptr);
  EXPECT_FALSE(ctx->active());
  ASSERT_EQ(warns().size(), 1u);
  EXPECT_TRUE(contains(warns()[0].message, missing)) << warns()[0].message;
  EXPECT_TRUE(contains(warns()[0].message, "NCCL_PILOT_TUNER_TABLE")) << warns()[0].message;
  EXPECT_TRUE(contains(warns()[0].message, "cannot open")) << warns()[0].message;
  CostTable table(7, 3), before = table;
  int nChannels = 3;
  ctx->getCollInfo(kAllReduce, 4096, 1, table.data(), 7, 3, 0, &nChannels);
  EXPECT_EQ(table.raw(), before.raw());
  EXPECT_EQ(nChannels, 3);
}

TEST_F(RuntimeTest, UnreadableConfigFileNamesItsVariable) {
  std::string missing = dir_.path() + "/nccl_tuner.conf";
  auto ctx = createWith({{"NCCL_TUNER_CONFIG_FILE", missing}});
  ASSERT_NE(ctx, nullptr);
  ASSERT_EQ(warns().size(), 1u);
  EXPECT_TRUE(contains(warns()[0].message, missing));
  EXPECT_TRUE(contains(warns()[0].message, "NCCL_TUNER_CONFIG_FILE"));
}

TEST_F(RuntimeTest, OneBadLineIsOneWarningAndTheRestApplies) {
  std::string path = dir_.write("t.table",
                                "allreduce algo=tree proto=ll\n"
                                "allreduce algo=rign\n"
                                "allgather algo=ring proto=simple\n");
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}});
  ASSERT_NE(ctx, nullptr);
  ASSERT_EQ(warns().size(), 1u);
  const std::string m = warns()[0].message;
  EXPECT_TRUE(contains(m, path + ":2: ")) << m;
  EXPECT_TRUE(contains(m, "unknown algorithm 'rign'")) << m;
  EXPECT_TRUE(warns()[0].flags & subsys::Tuning);
  EXPECT_EQ(selectedCell(*ctx, kAllReduce), kTree * 3 + kLL);
  EXPECT_EQ(selectedCell(*ctx, kAllGather), kRing * 3 + kSimple);
  bool loadedLine = false;
  for (const LogLine& l : infos()) {
    loadedLine |= contains(l.message, "loaded 2 rules") && contains(l.message, "1 lines skipped");
  }
  EXPECT_TRUE(loadedLine);
}

std::string badLines(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += "allreduce algo=bad" + std::to_string(i + 1) + "\n";
  return text;
}

TEST_F(RuntimeTest, MoreThanTwentyBadLinesAreSummarized) {
  std::string path = dir_.write("t.table", badLines(25) + "allreduce algo=ring proto=ll128\n");
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}});
  ASSERT_NE(ctx, nullptr);
  auto w = warns();
  ASSERT_EQ(w.size(), 21u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(contains(w[i].message, path + ":" + std::to_string(i + 1) + ": ")) << w[i].message;
    EXPECT_TRUE(contains(w[i].message, "'bad" + std::to_string(i + 1) + "'")) << w[i].message;
  }
  EXPECT_TRUE(contains(w[20].message, "5 more bad lines not shown")) << w[20].message;
  EXPECT_TRUE(contains(w[20].message, path)) << w[20].message;
  EXPECT_EQ(selectedCell(*ctx), kRing * 3 + kLL128);
}

TEST_F(RuntimeTest, TwentyBadLinesNeedNoSummary) {
  std::string path = dir_.write("t.table", badLines(20));
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}});
  ASSERT_NE(ctx, nullptr);
  auto w = warns();
  ASSERT_EQ(w.size(), 20u);
  EXPECT_TRUE(contains(w[19].message, path + ":20: "));
}

TEST_F(RuntimeTest, TwentyOneBadLinesSummarizeOne) {
  std::string path = dir_.write("t.table", badLines(21));
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}});
  ASSERT_NE(ctx, nullptr);
  auto w = warns();
  ASSERT_EQ(w.size(), 21u);
  EXPECT_TRUE(contains(w[20].message, "1 more bad lines not shown")) << w[20].message;
}

TEST_F(RuntimeTest, StrictModeFailsOnABadTable) {
  std::string path = dir_.write("t.table", "allreduce algo=ring\nallreduce algo=rign\n");
  runtime_ = std::make_unique<TunerRuntime>(
      test::mapEnv({{"NCCL_PILOT_TUNER_TABLE", path}, {"NCCL_PILOT_TUNER_STRICT", "1"}}));
  auto ctx = runtime_->createContext({}, std::make_unique<test::RecordingLogger>(sink_));
  ASSERT_FALSE(ctx.ok());
  EXPECT_TRUE(contains(ctx.error(), path)) << ctx.error();
  EXPECT_TRUE(contains(ctx.error(), "NCCL_PILOT_TUNER_STRICT=1")) << ctx.error();
  EXPECT_TRUE(contains(ctx.error(), "1 problem")) << ctx.error();
  EXPECT_EQ(warns().size(), 1u);  // the bad line is still reported
  // Every later communicator fails the same way.
  auto again = runtime_->createContext({}, std::make_unique<test::RecordingLogger>(sink_));
  EXPECT_FALSE(again.ok());
}

TEST_F(RuntimeTest, StrictModeFailsOnAnUnreadableTable) {
  runtime_ = std::make_unique<TunerRuntime>(test::mapEnv(
      {{"NCCL_PILOT_TUNER_TABLE", dir_.path() + "/missing"}, {"NCCL_PILOT_TUNER_STRICT", "yes"}}));
  auto ctx = runtime_->createContext({}, std::make_unique<test::RecordingLogger>(sink_));
  ASSERT_FALSE(ctx.ok());
  EXPECT_TRUE(contains(ctx.error(), dir_.path() + "/missing")) << ctx.error();
}

TEST_F(RuntimeTest, StrictModeAcceptsAGoodTable) {
  std::string path = dir_.write("t.table", "# fine\nallreduce algo=ring proto=ll\n");
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}, {"NCCL_PILOT_TUNER_STRICT", "1"}});
  ASSERT_NE(ctx, nullptr);
  EXPECT_TRUE(ctx->active());
  EXPECT_TRUE(warns().empty());
  EXPECT_EQ(selectedCell(*ctx), kRing * 3 + kLL);
}

TEST_F(RuntimeTest, MalformedStrictSettingWarnsAndStaysLenient) {
  std::string path = dir_.write("t.table", "allreduce algo=rign\nallreduce algo=ring proto=ll\n");
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}, {"NCCL_PILOT_TUNER_STRICT", "maybe"}});
  ASSERT_NE(ctx, nullptr);
  EXPECT_TRUE(ctx->active());
  auto w = warns();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_TRUE(contains(w[0].message, "NCCL_PILOT_TUNER_STRICT=maybe")) << w[0].message;
  EXPECT_TRUE(contains(w[1].message, path + ":1: ")) << w[1].message;
}

TEST_F(RuntimeTest, DisabledByNcclPilotTuner) {
  std::string path = dir_.write("t.table", "allreduce algo=ring proto=ll\n");
  for (const char* off : {"0", "false", "off"}) {
    SCOPED_TRACE(off);
    sink_->clear();
    auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}, {"NCCL_PILOT_TUNER", off}});
    ASSERT_NE(ctx, nullptr);
    EXPECT_FALSE(ctx->active());
    EXPECT_EQ(selectedCell(*ctx), -1);
    bool said = false;
    for (const LogLine& l : infos()) said |= contains(l.message, "disabled by NCCL_PILOT_TUNER=0");
    EXPECT_TRUE(said);
  }
  // Disabled wins over strict with a bad table.
  std::string bad = dir_.write("bad.table", "allreduce algo=rign\n");
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", bad},
                         {"NCCL_PILOT_TUNER", "0"},
                         {"NCCL_PILOT_TUNER_STRICT", "1"}});
  ASSERT_NE(ctx, nullptr);
  EXPECT_FALSE(ctx->active());
}

TEST_F(RuntimeTest, MalformedEnableSettingWarnsAndStaysOn) {
  std::string path = dir_.write("t.table", "allreduce algo=ring proto=ll\n");
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}, {"NCCL_PILOT_TUNER", "2"}});
  ASSERT_NE(ctx, nullptr);
  EXPECT_TRUE(ctx->active());
  ASSERT_EQ(warns().size(), 1u);
  EXPECT_TRUE(contains(warns()[0].message, "NCCL_PILOT_TUNER=2")) << warns()[0].message;
}

TEST_F(RuntimeTest, V2StepsAsideWhenNcclAlgoOrProtoIsSet) {
  std::string path = dir_.write("t.table", "allreduce algo=ring proto=simple\n");
  ContextParams v2;
  v2.abiVersion = 2;
  for (const char* var : {"NCCL_ALGO", "NCCL_PROTO"}) {
    SCOPED_TRACE(var);
    sink_->clear();
    auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}, {var, "Tree"}}, v2);
    ASSERT_NE(ctx, nullptr);
    EXPECT_FALSE(ctx->active());
    int algorithm = -1, protocol = -1, nChannels = 0;
    ctx->getCollInfoV2(kAllReduce, 4096, 0, 0, 1, &algorithm, &protocol, &nChannels);
    EXPECT_EQ(algorithm, -1);
    EXPECT_EQ(protocol, -1);
    bool said = false;
    for (const LogLine& l : infos()) said |= contains(l.message, "NCCL_ALGO or NCCL_PROTO is set");
    EXPECT_TRUE(said);
  }
  // Without them, v2 applies the table.
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}}, v2);
  ASSERT_NE(ctx, nullptr);
  EXPECT_TRUE(ctx->active());
  int algorithm = -1, protocol = -1, nChannels = 0;
  ctx->getCollInfoV2(kAllReduce, 4096, 0, 0, 1, &algorithm, &protocol, &nChannels);
  EXPECT_EQ(algorithm, kRing);
  EXPECT_EQ(protocol, kSimple);
  // v3+ keeps the table: NCCL's IGNORE cells already carry NCCL_ALGO.
  ContextParams v6;
  auto ctx6 = createWith({{"NCCL_PILOT_TUNER_TABLE", path}, {"NCCL_ALGO", "Tree"}}, v6);
  ASSERT_NE(ctx6, nullptr);
  EXPECT_TRUE(ctx6->active());
}

TEST_F(RuntimeTest, V2FallsThroughUnsupportedChoices) {
  std::string path = dir_.write("t.table",
                                "allgather algo=tree proto=ll\n"       // Tree: AllReduce only
                                "allgather algo=ring|tree proto=ll\n"  // restricts: keep NCCL's
                                "allgather algo=ring proto=simple\n");
  ContextParams v2;
  v2.abiVersion = 2;
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}}, v2);
  ASSERT_NE(ctx, nullptr);
  int algorithm = -1, protocol = -1, nChannels = 0;
  ctx->getCollInfoV2(kAllGather, 4096, 0, 0, 1, &algorithm, &protocol, &nChannels);
  EXPECT_EQ(algorithm, -1);  // stopped at the restricting rule
  EXPECT_EQ(protocol, -1);
}

TEST_F(RuntimeTest, ShapeCacheReusesCompiledTables) {
  std::string path = dir_.write("t.table", "allreduce algo=ring proto=ll\n");
  runtime_ = std::make_unique<TunerRuntime>(test::mapEnv({{"NCCL_PILOT_TUNER_TABLE", path}}));
  ContextParams a;
  a.nRanks = 16;
  a.nNodes = 2;
  auto c1 = create(*runtime_, a);
  auto c2 = create(*runtime_, a);
  EXPECT_EQ(runtime_->cachedShapes(), 1u);
  ContextParams b = a;
  b.nRanks = 8;
  b.nNodes = 1;
  auto c3 = create(*runtime_, b);
  EXPECT_EQ(runtime_->cachedShapes(), 2u);
  ContextParams uneven = a;
  uneven.unevenNodes = true;  // same counts, unknown ranks per node: a different shape
  auto c4 = create(*runtime_, uneven);
  EXPECT_EQ(runtime_->cachedShapes(), 3u);
  auto c5 = create(*runtime_, a);
  EXPECT_EQ(runtime_->cachedShapes(), 3u);
  for (auto* c : {c1.get(), c2.get(), c3.get(), c4.get(), c5.get()}) {
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(selectedCell(*c), kRing * 3 + kLL);
  }
  // The table is read once: one "loaded" line for five communicators.
  int loaded = 0;
  for (const LogLine& l : infos()) loaded += contains(l.message, "loaded 1 rules") ? 1 : 0;
  EXPECT_EQ(loaded, 1);
}

TEST_F(RuntimeTest, RanksPerNodeFromParams) {
  std::string path = dir_.write("t.table", "allreduce rpn=8 algo=tree proto=ll\n");
  runtime_ = std::make_unique<TunerRuntime>(test::mapEnv({{"NCCL_PILOT_TUNER_TABLE", path}}));
  ContextParams even;
  even.nRanks = 16;
  even.nNodes = 2;
  auto c1 = create(*runtime_, even);
  ASSERT_NE(c1, nullptr);
  EXPECT_EQ(selectedCell(*c1), kTree * 3 + kLL);

  ContextParams uneven = even;
  uneven.unevenNodes = true;
  auto c2 = create(*runtime_, uneven);
  ASSERT_NE(c2, nullptr);
  EXPECT_EQ(selectedCell(*c2), -1);

  ContextParams nvlDomain;  // 15 ranks on 2 nodes, but NCCL says 8 per NVL domain
  nvlDomain.nRanks = 15;
  nvlDomain.nNodes = 2;
  nvlDomain.ranksPerNode = 8;
  auto c3 = create(*runtime_, nvlDomain);
  ASSERT_NE(c3, nullptr);
  EXPECT_EQ(selectedCell(*c3), kTree * 3 + kLL);
}

TEST_F(RuntimeTest, ChunkSizeComesFromTheFirstRuleAdmittingTheSelectedCell) {
  std::string path = dir_.write("t.table",
                                "allreduce size=..1M algo=tree proto=ll chunk=64K\n"
                                "allreduce size=..1M algo=ring proto=ll128|simple\n"
                                "allreduce size=..1M algo=ring chunk=256K\n"
                                "allreduce chunk=1M\n");
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}});
  ASSERT_NE(ctx, nullptr);
  auto chunkFor = [&](int coll, uint64_t nBytes, int algo, int proto) {
    size_t chunk = 12345;
    ctx->getChunkSize(coll, nBytes, algo, proto, &chunk);
    return chunk;
  };
  EXPECT_EQ(chunkFor(kAllReduce, 4096, kTree, kLL), 64u << 10);
  EXPECT_EQ(chunkFor(kAllReduce, 4096, kRing, kSimple), 12345u);  // rule 2 admits, sets none
  EXPECT_EQ(chunkFor(kAllReduce, 4096, kRing, kLL), 256u << 10);
  EXPECT_EQ(chunkFor(kAllReduce, 4096, kTree, kSimple), 1u << 20);
  EXPECT_EQ(chunkFor(kAllReduce, 2u << 20, kRing, kSimple), 1u << 20);
  EXPECT_EQ(chunkFor(kAllGather, 4096, kRing, kSimple), 12345u);
  // Out-of-range indices are ignored.
  EXPECT_EQ(chunkFor(kAllReduce, 4096, 7, kLL), 12345u);
  EXPECT_EQ(chunkFor(kAllReduce, 4096, -1, kLL), 12345u);
  EXPECT_EQ(chunkFor(kAllReduce, 4096, kTree, 3), 12345u);
  EXPECT_EQ(chunkFor(5, 4096, kTree, kLL), 12345u);
}

TEST_F(RuntimeTest, ChunkSizeFollowsTheRuleGetCollInfoApplied) {
  // Line 1 needs registered buffers; NCCL says they are not, so line 2 decides and its (absent)
  // chunk must hold, not line 1's.
  std::string path = dir_.write("t.table",
                                "allreduce regbuff=1 algo=ring proto=simple chunk=1M\n"
                                "allreduce algo=ring proto=simple\n");
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}});
  ASSERT_NE(ctx, nullptr);
  for (int regBuff : {0, 1}) {
    SCOPED_TRACE(regBuff);
    std::vector<float> cells(kNumAlgorithms * kNumProtocols, 10.0f);
    int nChannels = 0;
    ctx->getCollInfo(kAllReduce, 8192, 1, cells.data(), kNumAlgorithms, kNumProtocols, regBuff,
                     &nChannels);
    EXPECT_EQ(cells[kRing * 3 + kSimple], 0.0f);
    size_t chunk = 777;
    ctx->getChunkSize(kAllReduce, 8192, kRing, kSimple, &chunk);
    EXPECT_EQ(chunk, regBuff == 1 ? (1u << 20) : 777u);
  }
}

TEST_F(RuntimeTest, InvalidCollectiveIsIgnored) {
  std::string path = dir_.write("t.table", "any algo=ring proto=ll channels=3\n");
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}});
  ASSERT_NE(ctx, nullptr);
  for (int coll : {-1, 5, 100}) {
    CostTable table(7, 3), before = table;
    int nChannels = 0;
    ctx->getCollInfo(coll, 4096, 1, table.data(), 7, 3, 0, &nChannels);
    EXPECT_EQ(table.raw(), before.raw()) << coll;
    EXPECT_EQ(nChannels, 0) << coll;
  }
  EXPECT_EQ(selectedCell(*ctx, 0), kRing * 3 + kLL);
}

TEST_F(RuntimeTest, TraceOnlyWithNcclDebugTrace) {
  std::string path = dir_.write("t.table", "allreduce size=..1M algo=ring proto=ll\n");
  for (const char* level : {"TRACE", "trace"}) {
    SCOPED_TRACE(level);
    sink_->clear();
    auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}, {"NCCL_DEBUG", level}});
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(selectedCell(*ctx, kAllReduce, 4096), kRing * 3 + kLL);
    EXPECT_EQ(selectedCell(*ctx, kAllReduce, 2u << 20), -1);
    auto t = traces();
    ASSERT_EQ(t.size(), 2u);
    EXPECT_TRUE(contains(t[0].message, "allreduce 4096 bytes")) << t[0].message;
    EXPECT_TRUE(contains(t[0].message, "line 1 applied")) << t[0].message;
    EXPECT_TRUE(contains(t[1].message, "no rule, NCCL decides")) << t[1].message;
    EXPECT_TRUE(t[0].flags & subsys::Tuning);
  }
  for (const char* level : {"INFO", "WARN", "TRACEX"}) {
    SCOPED_TRACE(level);
    sink_->clear();
    auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}, {"NCCL_DEBUG", level}});
    ASSERT_NE(ctx, nullptr);
    EXPECT_EQ(selectedCell(*ctx, kAllReduce, 4096), kRing * 3 + kLL);
    size_t chunk = 0;
    ctx->getChunkSize(kAllReduce, 4096, kRing, kLL, &chunk);
    EXPECT_TRUE(traces().empty());
  }
  sink_->clear();
  auto quiet = createWith({{"NCCL_PILOT_TUNER_TABLE", path}});
  ASSERT_NE(quiet, nullptr);
  EXPECT_EQ(selectedCell(*quiet, kAllReduce, 4096), kRing * 3 + kLL);
  EXPECT_TRUE(traces().empty());
}

TEST_F(RuntimeTest, TraceForChunkSize) {
  std::string path = dir_.write("t.table", "allreduce algo=ring chunk=128K\n");
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}, {"NCCL_DEBUG", "TRACE"}});
  ASSERT_NE(ctx, nullptr);
  size_t chunk = 0;
  ctx->getChunkSize(kAllReduce, 4096, kRing, kSimple, &chunk);
  EXPECT_EQ(chunk, 128u << 10);
  auto t = traces();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_TRUE(contains(t[0].message, "getChunkSize allreduce 4096 bytes: line 1 chunk 131072"))
      << t[0].message;
}

TEST_F(RuntimeTest, ProvenanceIsReportedWhenLoading) {
  std::string path = dir_.write("t.table", "#@ source: unit test\nallreduce algo=ring\n");
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}});
  ASSERT_NE(ctx, nullptr);
  bool said = false;
  for (const LogLine& l : infos()) said |= contains(l.message, "source unit test");
  EXPECT_TRUE(said);
}

TEST_F(RuntimeTest, TableWithNoRuleForThisShapeIsInactive) {
  std::string path = dir_.write("t.table", "allreduce nodes=4 algo=ring proto=ll\n");
  ContextParams p;
  p.nRanks = 8;
  p.nNodes = 1;
  auto ctx = createWith({{"NCCL_PILOT_TUNER_TABLE", path}}, p);
  ASSERT_NE(ctx, nullptr);
  EXPECT_FALSE(ctx->active());
  EXPECT_EQ(selectedCell(*ctx), -1);
}

TEST_F(RuntimeTest, TheScheduleDigestPinKeepsARankWithOtherExploreSettingsFromExploringApart) {
  ContextParams params;
  params.abiVersion = 5;
  const std::string right = exploreDigest(
      readExploreSettings(test::mapEnv({{"NCCL_PILOT_TUNER_EXPLORE", "0.05"}})).value(), "");
  auto explores = [](const TunerContext& ctx) {
    for (int i = 0; i < 400; ++i) selectedCell(ctx);
    return ctx.explorations();
  };
  auto pinned = createWith(
      {{"NCCL_PILOT_TUNER_EXPLORE", "0.05"}, {"NCCL_PILOT_TUNER_EXPLORE_DIGEST", right}}, params);
  ASSERT_NE(pinned, nullptr);
  EXPECT_GT(explores(*pinned), 0u);
  EXPECT_TRUE(warns().empty());
  // Another fraction than the launcher's: one WARN naming both digests, no exploration.
  auto other = createWith(
      {{"NCCL_PILOT_TUNER_EXPLORE", "0.1"}, {"NCCL_PILOT_TUNER_EXPLORE_DIGEST", right}}, params);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(explores(*other), 0u);
  ASSERT_EQ(warns().size(), 1u);
  EXPECT_TRUE(contains(warns()[0].message, "NCCL_PILOT_TUNER_EXPLORE_DIGEST=" + right));
  EXPECT_TRUE(contains(warns()[0].message, "decides apart")) << warns()[0].message;
  // Strict: the communicator's init fails instead.
  TunerRuntime strict(test::mapEnv({{"NCCL_PILOT_TUNER_EXPLORE", "0.1"},
                                    {"NCCL_PILOT_TUNER_EXPLORE_DIGEST", right},
                                    {"NCCL_PILOT_TUNER_STRICT", "1"}}));
  auto failed = strict.createContext(params, std::make_unique<test::RecordingLogger>(sink_));
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(contains(failed.error(), "is not this rank's schedule digest"));
}

}  // namespace
}  // namespace pilot::tuner
