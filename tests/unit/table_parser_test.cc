// parseTable / loadTableFile: both line syntaxes, every rejection and its message, and the
// file-level limits.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <limits>
#include <string>

#include "pilot/tuner/table.h"
#include "test_support.h"

namespace pilot::tuner {
namespace {

using test::contains;
using test::parseError;
using test::parseOne;

constexpr uint64_t kAny = std::numeric_limits<uint64_t>::max();

// ---- rejected lines: one diagnostic each, naming the bad token ----------------------------

TEST(TableParserErrors, UnknownCollectiveNamesTokenAndListsValidNames) {
  std::string m = parseError("allreduc size=0..4K");
  EXPECT_TRUE(contains(m, "unknown collective 'allreduc'")) << m;
  EXPECT_TRUE(contains(m, collectiveNameList())) << m;
  m = parseError("allreduce|alltoall algo=ring");
  EXPECT_TRUE(contains(m, "unknown collective 'alltoall'")) << m;
  m = parseError("sendrecv,0,65536,ring,simple,-1,-1,-1");
  EXPECT_TRUE(contains(m, "unknown collective 'sendrecv'")) << m;
  EXPECT_TRUE(contains(m, collectiveNameList())) << m;
}

TEST(TableParserErrors, UnknownAlgorithmNamesTokenAndListsValidNames) {
  std::string m = parseError("allreduce algo=rign");
  EXPECT_TRUE(contains(m, "unknown algorithm 'rign'")) << m;
  EXPECT_TRUE(contains(m, algorithmNameList())) << m;
  m = parseError("allreduce algo=ring|trie");
  EXPECT_TRUE(contains(m, "unknown algorithm 'trie'")) << m;
  m = parseError("allreduce algo=ring|");
  EXPECT_TRUE(contains(m, "unknown algorithm ''")) << m;
  m = parseError("allreduce,0,65536,treee,simple,-1,-1,-1");
  EXPECT_TRUE(contains(m, "unknown algorithm 'treee'")) << m;
  EXPECT_TRUE(contains(m, algorithmNameList())) << m;
}

TEST(TableParserErrors, UnknownProtocolNamesTokenAndListsValidNames) {
  std::string m = parseError("allreduce proto=ll129");
  EXPECT_TRUE(contains(m, "unknown protocol 'll129'")) << m;
  EXPECT_TRUE(contains(m, protocolNameList())) << m;
  m = parseError("allreduce,0,65536,ring,smple,-1,-1,-1");
  EXPECT_TRUE(contains(m, "unknown protocol 'smple'")) << m;
  EXPECT_TRUE(contains(m, protocolNameList())) << m;
}

TEST(TableParserErrors, BadByteCounts) {
  std::string m = parseError("allreduce size=12Q..4K");
  EXPECT_EQ(m, "size: '12Q' is not a byte count (use 4096, 64K, 16M, 1G)");
  m = parseError("allreduce size=0..4X");
  EXPECT_TRUE(contains(m, "size: '4X' is not a byte count")) << m;
  m = parseError("allreduce size=-5");
  EXPECT_TRUE(contains(m, "size: '-5' is not a byte count")) << m;
  m = parseError("allreduce size=99999999999999999999");
  EXPECT_TRUE(contains(m, "is not a byte count")) << m;
  m = parseError("allreduce,abc,65536,ring,simple,-1,-1,-1");
  EXPECT_TRUE(contains(m, "min_bytes: 'abc' is not a byte count")) << m;
  m = parseError("allreduce,0,64Q,ring,simple,-1,-1,-1");
  EXPECT_TRUE(contains(m, "max_bytes: '64Q' is not a byte count")) << m;
  m = parseError("allreduce,-2,65536,ring,simple,-1,-1,-1");
  EXPECT_TRUE(contains(m, "min_bytes: '-2'")) << m;
}

TEST(TableParserErrors, BadCounts) {
  EXPECT_EQ(parseError("allreduce nodes=two"), "nodes: 'two' is not a whole number");
  EXPECT_TRUE(contains(parseError("allreduce ranks=4K"), "ranks: '4K' is not a whole number"));
  EXPECT_TRUE(contains(parseError("allreduce rpn=-8"), "rpn: '-8' is not a whole number"));
  EXPECT_TRUE(contains(parseError("allreduce pipeops=1.5"), "pipeops: '1.5'"));
  EXPECT_TRUE(contains(parseError("allreduce,0,65536,ring,simple,-1,0,-1"),
                       "nNodes: '0' is not -1 or a positive number"));
  EXPECT_TRUE(contains(parseError("allreduce,0,65536,ring,simple,-1,-1,x"),
                       "nRanks: 'x' is not -1 or a positive number"));
  EXPECT_TRUE(contains(parseError("allreduce,0,65536,ring,simple,-1,-1,-1,0"),
                       "numPipeOps: '0' is not -1 or a positive number"));
}

TEST(TableParserErrors, LowerBoundAboveUpperBound) {
  EXPECT_EQ(parseError("allreduce size=64K..4K"),
            "size: lower bound is above upper bound in '64K..4K'");
  EXPECT_EQ(parseError("allreduce nodes=4..2"),
            "nodes: lower bound is above upper bound in '4..2'");
  EXPECT_TRUE(contains(parseError("allreduce pipeops=3..1"), "pipeops: lower bound is above"));
  // lo == hi is a single value, not an error.
  Rule r = parseOne("allreduce size=4K..4K");
  EXPECT_EQ(r.size.lo, 4096u);
  EXPECT_EQ(r.size.hi, 4096u);
}

TEST(TableParserErrors, CsvMinAboveMax) {
  EXPECT_EQ(parseError("allreduce,65536,4096,ring,simple,-1,-1,-1"),
            "min_bytes is above max_bytes");
  EXPECT_EQ(parseError("allreduce,1,0,ring,simple,-1,-1,-1"), "min_bytes is above max_bytes");
  Rule r = parseOne("allreduce,4096,4096,ring,simple,-1,-1,-1");
  EXPECT_EQ(r.size.lo, 4096u);
  EXPECT_EQ(r.size.hi, 4096u);
}

TEST(TableParserErrors, CsvFieldCount) {
  std::string m = parseError("allreduce,0,65536,ring,simple,-1,-1");
  EXPECT_TRUE(contains(m, "expected 8 to 10 comma-separated fields")) << m;
  EXPECT_TRUE(contains(m, "found 7")) << m;
  EXPECT_TRUE(contains(m, "collective,min_bytes,max_bytes")) << m;
  m = parseError("allreduce,0,65536,ring,simple,-1,-1,-1,-1,-1,-1");
  EXPECT_TRUE(contains(m, "found 11")) << m;
  // A trailing comma is one more (empty) field.
  EXPECT_TRUE(contains(parseError("allreduce,0,65536,ring,simple,-1,-1,-1,-1,-1,"), "found 11"));
  EXPECT_TRUE(contains(parseError("allreduce,"), "found 2"));
}

TEST(TableParserErrors, ChannelsOutOfRange) {
  const std::string nativeMsg = "channels: '65' is not -1 (keep NCCL's) or 1..64";
  EXPECT_EQ(parseError("allreduce channels=65"), nativeMsg);
  EXPECT_EQ(parseError("allreduce channels=-2"), "channels: '-2' is not -1 (keep NCCL's) or 1..64");
  EXPECT_EQ(parseError("allreduce,0,65536,ring,simple,65,-1,-1"), nativeMsg);
  EXPECT_EQ(parseError("allreduce,0,65536,ring,simple,-2,-1,-1"),
            "channels: '-2' is not -1 (keep NCCL's) or 1..64");
  EXPECT_TRUE(contains(parseError("allreduce channels=eight"), "channels: 'eight'"));
  // The edges that are accepted.
  EXPECT_EQ(parseOne("allreduce channels=64").channels, 64);
  EXPECT_EQ(parseOne("allreduce channels=1").channels, 1);
  EXPECT_EQ(parseOne("allreduce channels=0").channels, 0);
  EXPECT_EQ(parseOne("allreduce channels=-1").channels, 0);
  EXPECT_EQ(parseOne("allreduce,0,65536,ring,simple,64,-1,-1").channels, 64);
}

TEST(TableParserErrors, RegBuffMustBeMinusOneZeroOrOne) {
  EXPECT_EQ(parseError("allreduce regbuff=2"), "regbuff: '2' is not -1, 0 or 1");
  EXPECT_EQ(parseError("allreduce,0,65536,ring,simple,-1,-1,-1,-1,2"),
            "regbuff: '2' is not -1, 0 or 1");
  EXPECT_EQ(parseOne("allreduce regbuff=0").regBuff, 0);
  EXPECT_EQ(parseOne("allreduce regbuff=1").regBuff, 1);
  EXPECT_EQ(parseOne("allreduce regbuff=-1").regBuff, -1);
  EXPECT_EQ(parseOne("allreduce regbuff=*").regBuff, -1);
}

TEST(TableParserErrors, ChunkMustBeBetweenOneByteAndOneGiB) {
  EXPECT_EQ(parseError("allreduce chunk=0"), "chunk: '0' is not between 1 and 1G");
  EXPECT_EQ(parseError("allreduce chunk=1073741825"),
            "chunk: '1073741825' is not between 1 and 1G");
  EXPECT_EQ(parseError("allreduce chunk=2G"), "chunk: '2G' is not between 1 and 1G");
  EXPECT_TRUE(contains(parseError("allreduce chunk=big"), "chunk: 'big' is not a byte count"));
  EXPECT_EQ(parseOne("allreduce chunk=1G").chunkBytes, 1ull << 30);
  EXPECT_EQ(parseOne("allreduce chunk=1").chunkBytes, 1u);
  EXPECT_EQ(parseOne("allreduce chunk=512K").chunkBytes, 512u << 10);
  EXPECT_EQ(parseOne("allreduce chunk=-1").chunkBytes, 0u);
}

TEST(TableParserErrors, UnknownKey) {
  std::string m = parseError("allreduce colour=red");
  EXPECT_TRUE(contains(m, "unknown key 'colour'")) << m;
  EXPECT_TRUE(contains(m,
                       "size, algo, proto, nodes, ranks, rpn, pipeops, regbuff, channels, "
                       "chunk, fabric, nccl, expect, explore, per-rank"))
      << m;
}

TEST(TableParserErrors, DuplicateKey) {
  EXPECT_EQ(parseError("allreduce size=0..1K size=2K"), "key 'size' given twice");
  EXPECT_EQ(parseError("allreduce algo=ring ALGO=tree"), "key 'algo' given twice");
  EXPECT_EQ(parseError("allgather per-rank size=1K per-rank"), "key 'per-rank' given twice");
  EXPECT_EQ(parseError("allreduce chunk=1K chunk=*"), "key 'chunk' given twice");
}

TEST(TableParserErrors, KeyWithoutValue) {
  EXPECT_EQ(parseError("allreduce size="), "expected key=value, found 'size='");
  EXPECT_EQ(parseError("allreduce =4K"), "expected key=value, found '=4K'");
  EXPECT_EQ(parseError("allreduce ring"), "expected key=value, found 'ring'");
  EXPECT_EQ(parseError("allreduce size = 4K"), "expected key=value, found 'size'");
}

TEST(TableParserErrors, EmptyRange) {
  EXPECT_EQ(parseError("allreduce size=.."), "size: empty range '..'");
  EXPECT_EQ(parseError("allreduce nodes=.."), "nodes: empty range '..'");
}

TEST(TableParserErrors, OverlongLine) {
  // A line of exactly kMaxLineBytes is fine (trailing blanks are trimmed)...
  std::string atLimit = "allreduce algo=ring";
  atLimit.resize(kMaxLineBytes, ' ');
  ParsedTable ok = parseTable(atLimit, "t");
  EXPECT_TRUE(ok.diagnostics.empty());
  EXPECT_EQ(ok.table.rules.size(), 1u);

  // ...one more byte is rejected, and the next line still parses.
  std::string tooLong = "allreduce algo=ring #";
  tooLong.resize(kMaxLineBytes + 1, 'x');
  ParsedTable parsed =
      parseTable("allgather proto=ll\n" + tooLong + "\nbroadcast algo=tree\n", "t");
  ASSERT_EQ(parsed.diagnostics.size(), 1u);
  EXPECT_EQ(parsed.diagnostics[0].line, 2);
  EXPECT_EQ(parsed.diagnostics[0].message, "line is longer than 4096 bytes");
  ASSERT_EQ(parsed.table.rules.size(), 2u);
  EXPECT_EQ(parsed.table.rules[0].line, 1);
  EXPECT_EQ(parsed.table.rules[1].line, 3);
  EXPECT_EQ(parsed.table.rules[1].collectives, bit(Collective::Broadcast));
}

TEST(TableParserErrors, QuotedTokensAreCappedAt64Characters) {
  std::string longName(200, 'z');
  std::string m = parseError("allreduce algo=" + longName);
  EXPECT_TRUE(contains(m, "'" + std::string(64, 'z') + "'")) << m;
  EXPECT_FALSE(contains(m, std::string(65, 'z'))) << m;
}

// ---- line numbers, skipping, comments, line endings ---------------------------------------

TEST(TableParser, BadLinesAreSkippedWithOneBasedLineNumbers) {
  const char* text =
      "# header comment\n"                 // 1
      "allreduce size=0..64K algo=tree\n"  // 2
      "\n"                                 // 3
      "allreduce algo=rign\n"              // 4  bad
      "   \t  \n"                          // 5
      "allgather,0,65536,ring,simple\n"    // 6  bad (5 fields)
      "allgather proto=simple\n"           // 7
      "reduce channels=99\n"               // 8  bad
      "broadcast,0,-1,ring,ll,4,-1,-1\n";  // 9
  ParsedTable parsed = parseTable(text, "my.table");
  EXPECT_EQ(parsed.table.source, "my.table");
  ASSERT_EQ(parsed.diagnostics.size(), 3u);
  EXPECT_EQ(parsed.diagnostics[0].line, 4);
  EXPECT_TRUE(contains(parsed.diagnostics[0].message, "'rign'"));
  EXPECT_EQ(parsed.diagnostics[1].line, 6);
  EXPECT_TRUE(contains(parsed.diagnostics[1].message, "found 5"));
  EXPECT_EQ(parsed.diagnostics[2].line, 8);
  EXPECT_TRUE(contains(parsed.diagnostics[2].message, "channels: '99'"));
  ASSERT_EQ(parsed.table.rules.size(), 3u);
  EXPECT_EQ(parsed.table.rules[0].line, 2);
  EXPECT_EQ(parsed.table.rules[0].algorithms, bit(Algorithm::Tree));
  EXPECT_EQ(parsed.table.rules[1].line, 7);
  EXPECT_EQ(parsed.table.rules[1].protocols, bit(Protocol::Simple));
  EXPECT_EQ(parsed.table.rules[2].line, 9);
  EXPECT_EQ(parsed.table.rules[2].channels, 4);
}

TEST(TableParser, CommentsAndBlankLines) {
  const char* text =
      "# a comment, with commas, that is not CSV\n"
      "   # an indented comment\n"
      "allreduce algo=ring # trailing comment, with a comma\n"
      "allreduce,0,65536,tree,simple,2,1,-1 # trailing comment on a CSV line\n"
      "allgather proto=ll#no space before the comment\n"
      "#allreduce algo=tree\n"
      "\n\n";
  ParsedTable parsed = parseTable(text, "t");
  EXPECT_TRUE(parsed.diagnostics.empty());
  ASSERT_EQ(parsed.table.rules.size(), 3u);
  EXPECT_EQ(parsed.table.rules[0].line, 3);
  EXPECT_EQ(parsed.table.rules[0].algorithms, bit(Algorithm::Ring));
  EXPECT_EQ(parsed.table.rules[0].protocols, 0);
  EXPECT_EQ(parsed.table.rules[1].line, 4);
  EXPECT_EQ(parsed.table.rules[1].size.hi, 65536u);
  EXPECT_EQ(parsed.table.rules[1].channels, 2);
  EXPECT_EQ(parsed.table.rules[2].line, 5);
  EXPECT_EQ(parsed.table.rules[2].protocols, bit(Protocol::LL));
}

TEST(TableParser, EmptyTextHasNoRulesAndNoDiagnostics) {
  for (const char* text : {"", "\n", "\r\n", "# only a comment", "\n\n\n"}) {
    ParsedTable parsed = parseTable(text, "t");
    EXPECT_TRUE(parsed.table.rules.empty()) << text;
    EXPECT_TRUE(parsed.diagnostics.empty()) << text;
  }
}

TEST(TableParser, CrlfLineEndings) {
  const char* text =
      "#@ source: windows editor\r\n"
      "allreduce size=0..64K algo=tree proto=ll\r\n"
      "\r\n"
      "allreduce algo=rign\r\n"
      "reducescatter,0,131071,ring,ll128,-1,2,-1\r\n";
  ParsedTable parsed = parseTable(text, "t");
  ASSERT_EQ(parsed.diagnostics.size(), 1u);
  EXPECT_EQ(parsed.diagnostics[0].line, 4);
  EXPECT_FALSE(contains(parsed.diagnostics[0].message, "\r"));
  EXPECT_TRUE(contains(parsed.diagnostics[0].message, "'rign'"));
  ASSERT_EQ(parsed.table.rules.size(), 2u);
  EXPECT_EQ(parsed.table.rules[0].line, 2);
  EXPECT_EQ(parsed.table.rules[0].protocols, bit(Protocol::LL));
  EXPECT_EQ(parsed.table.rules[1].line, 5);
  EXPECT_EQ(parsed.table.rules[1].nodes.lo, 2u);
  EXPECT_TRUE(parsed.table.rules[1].ranks.any());
  ASSERT_EQ(parsed.table.provenance.size(), 1u);
  EXPECT_EQ(parsed.table.provenance[0].second, "windows editor");
}

TEST(TableParser, ProvenanceLines) {
  const char* text =
      "#@ table: nccl-pilot 1\n"
      "#@source:   hand written  \n"
      "  #@ url: http://example.org:8080/x\n"
      "#@ no colon here\n"
      "# @ not provenance: a comment\n"
      "allreduce algo=ring\n";
  ParsedTable parsed = parseTable(text, "t");
  EXPECT_TRUE(parsed.diagnostics.empty());
  EXPECT_EQ(parsed.table.rules.size(), 1u);
  ASSERT_EQ(parsed.table.provenance.size(), 3u);
  EXPECT_EQ(parsed.table.provenance[0].first, "table");
  EXPECT_EQ(parsed.table.provenance[0].second, "nccl-pilot 1");
  EXPECT_EQ(parsed.table.provenance[1].first, "source");
  EXPECT_EQ(parsed.table.provenance[1].second, "hand written");
  EXPECT_EQ(parsed.table.provenance[2].first, "url");
  EXPECT_EQ(parsed.table.provenance[2].second, "http://example.org:8080/x");
}

// ---- NCCL's example-tuner CSV ------------------------------------------------------------

TEST(TableParserCsv, NcclExampleTunerLines) {
  // The data lines of NCCL's example nccl_tuner.conf (ext-tuner/example, 2.27.5), unchanged.
  const char* text =
      "allreduce,0,65536,tree,simple,2,1,-1,-1,1\n"                 // 1
      "allreduce,65537,1048576,ring,simple,4,4,32,1,0\n"            // 2
      "allreduce,1048577,4294967295,ring,ll128,-1,-1,-1,4,-1\n"     // 3
      "broadcast,0,32768,tree,simple,-1,1,-1,-1,1\n"                // 4
      "broadcast,32769,4294967295,ring,simple,2,-1,-1,1,0\n"        // 5
      "allgather,0,4294967295,ring,simple,4,2,-1\n"                 // 6
      "reducescatter,0,131072,tree,simple,2,1,-1,1,1\n"             // 7
      "reducescatter,131073,4294967295,ring,simple,-1,-1,-1,2,0\n"  // 8
      "reduce,0,4294967295,tree,simple,-1,-1,-1\n";                 // 9
  ParsedTable parsed = parseTable(text, "nccl_tuner.conf");
  EXPECT_TRUE(parsed.diagnostics.empty());
  ASSERT_EQ(parsed.table.rules.size(), 9u);
  const auto& r = parsed.table.rules;

  EXPECT_EQ(r[0].collectives, bit(Collective::AllReduce));
  EXPECT_EQ(r[0].size.lo, 0u);
  EXPECT_EQ(r[0].size.hi, 65536u);
  EXPECT_EQ(r[0].algorithms, bit(Algorithm::Tree));
  EXPECT_EQ(r[0].protocols, bit(Protocol::Simple));
  EXPECT_EQ(r[0].channels, 2);
  EXPECT_EQ(r[0].nodes.lo, 1u);
  EXPECT_EQ(r[0].nodes.hi, 1u);
  EXPECT_TRUE(r[0].ranks.any());
  EXPECT_TRUE(r[0].pipeOps.any());
  EXPECT_EQ(r[0].regBuff, 1);
  EXPECT_TRUE(r[0].ranksPerNode.any());
  EXPECT_FALSE(r[0].perRankSize);
  EXPECT_EQ(r[0].chunkBytes, 0u);

  EXPECT_EQ(r[1].size.lo, 65537u);
  EXPECT_EQ(r[1].size.hi, 1048576u);
  EXPECT_EQ(r[1].algorithms, bit(Algorithm::Ring));
  EXPECT_EQ(r[1].channels, 4);
  EXPECT_EQ(r[1].nodes.lo, 4u);
  EXPECT_EQ(r[1].nodes.hi, 4u);
  EXPECT_EQ(r[1].ranks.lo, 32u);
  EXPECT_EQ(r[1].ranks.hi, 32u);
  EXPECT_EQ(r[1].pipeOps.lo, 1u);
  EXPECT_EQ(r[1].pipeOps.hi, 1u);
  EXPECT_EQ(r[1].regBuff, 0);

  EXPECT_EQ(r[2].size.lo, 1048577u);
  EXPECT_EQ(r[2].size.hi, 4294967295u);
  EXPECT_EQ(r[2].protocols, bit(Protocol::LL128));
  EXPECT_EQ(r[2].channels, 0);  // -1 = keep NCCL's
  EXPECT_TRUE(r[2].nodes.any());
  EXPECT_EQ(r[2].pipeOps.lo, 4u);
  EXPECT_EQ(r[2].regBuff, -1);

  EXPECT_EQ(r[3].collectives, bit(Collective::Broadcast));
  EXPECT_EQ(r[4].collectives, bit(Collective::Broadcast));
  EXPECT_EQ(r[4].size.lo, 32769u);

  // 8 fields: numPipeOps and regBuff match anything.
  EXPECT_EQ(r[5].collectives, bit(Collective::AllGather));
  EXPECT_EQ(r[5].nodes.lo, 2u);
  EXPECT_TRUE(r[5].pipeOps.any());
  EXPECT_EQ(r[5].regBuff, -1);

  EXPECT_EQ(r[6].collectives, bit(Collective::ReduceScatter));
  EXPECT_EQ(r[7].collectives, bit(Collective::ReduceScatter));
  EXPECT_EQ(r[7].pipeOps.lo, 2u);
  EXPECT_EQ(r[8].collectives, bit(Collective::Reduce));
  EXPECT_TRUE(r[8].pipeOps.any());

  for (size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i].line, static_cast<int>(i) + 1);
}

TEST(TableParserCsv, NineFieldsSetPipeOpsOnly) {
  Rule r = parseOne("allreduce,0,65536,tree,simple,2,1,-1,3");
  EXPECT_EQ(r.pipeOps.lo, 3u);
  EXPECT_EQ(r.pipeOps.hi, 3u);
  EXPECT_EQ(r.regBuff, -1);
  r = parseOne("allreduce,0,65536,tree,simple,2,1,-1,-1");
  EXPECT_TRUE(r.pipeOps.any());
}

TEST(TableParserCsv, MinusOneBytesMeanUnbounded) {
  Rule r = parseOne("allreduce,-1,-1,ring,simple,-1,-1,-1");
  EXPECT_TRUE(r.size.any());
  r = parseOne("allreduce,-1,4096,ring,simple,-1,-1,-1");
  EXPECT_EQ(r.size.lo, 0u);
  EXPECT_EQ(r.size.hi, 4096u);
  r = parseOne("allreduce,131072,-1,ring,simple,-1,-1,-1");
  EXPECT_EQ(r.size.lo, 131072u);
  EXPECT_EQ(r.size.hi, kAny);
}

TEST(TableParserCsv, FieldsAreTrimmedAndSuffixesAccepted) {
  Rule r = parseOne(" allgather , 64K , 16M , Ring , LL128 , 8 , 2 , 16 ");
  EXPECT_EQ(r.collectives, bit(Collective::AllGather));
  EXPECT_EQ(r.size.lo, 64u << 10);
  EXPECT_EQ(r.size.hi, 16u << 20);
  EXPECT_EQ(r.algorithms, bit(Algorithm::Ring));
  EXPECT_EQ(r.protocols, bit(Protocol::LL128));
  EXPECT_EQ(r.channels, 8);
  EXPECT_EQ(r.ranks.lo, 16u);
}

TEST(TableParserCsv, WildcardAlgorithmAndProtocol) {
  for (const char* w : {"-1", "*", "any", "ANY", "default", "Default"}) {
    SCOPED_TRACE(w);
    Rule a = parseOne(std::string("allreduce,0,65536,") + w + ",simple,-1,-1,-1");
    EXPECT_EQ(a.algorithms, 0);
    EXPECT_EQ(a.protocols, bit(Protocol::Simple));
    Rule p = parseOne(std::string("allreduce,0,65536,ring,") + w + ",-1,-1,-1");
    EXPECT_EQ(p.algorithms, bit(Algorithm::Ring));
    EXPECT_EQ(p.protocols, 0);
  }
}

// ---- native syntax ----------------------------------------------------------------------

TEST(TableParserNative, AllKeys) {
  Rule r = parseOne(
      "allreduce size=4K..16M algo=nvls_tree proto=ll128 nodes=2..8 ranks=16 rpn=8 pipeops=1..2 "
      "regbuff=1 channels=16 chunk=128K");
  EXPECT_EQ(r.collectives, bit(Collective::AllReduce));
  EXPECT_EQ(r.size.lo, 4096u);
  EXPECT_EQ(r.size.hi, 16u << 20);
  EXPECT_EQ(r.algorithms, bit(Algorithm::NvlsTree));
  EXPECT_EQ(r.protocols, bit(Protocol::LL128));
  EXPECT_EQ(r.nodes.lo, 2u);
  EXPECT_EQ(r.nodes.hi, 8u);
  EXPECT_EQ(r.ranks.lo, 16u);
  EXPECT_EQ(r.ranks.hi, 16u);
  EXPECT_EQ(r.ranksPerNode.lo, 8u);
  EXPECT_EQ(r.pipeOps.lo, 1u);
  EXPECT_EQ(r.pipeOps.hi, 2u);
  EXPECT_EQ(r.regBuff, 1);
  EXPECT_EQ(r.channels, 16);
  EXPECT_EQ(r.chunkBytes, 128u << 10);
  EXPECT_TRUE(r.selectsOneCell());
  EXPECT_TRUE(r.namesChoice());
}

TEST(TableParserNative, OpenRangesAndDefaults) {
  Rule r = parseOne("allreduce size=8M..");
  EXPECT_EQ(r.size.lo, 8u << 20);
  EXPECT_EQ(r.size.hi, kAny);
  r = parseOne("allreduce size=..64K");
  EXPECT_EQ(r.size.lo, 0u);
  EXPECT_EQ(r.size.hi, 65536u);
  r = parseOne("allreduce");
  EXPECT_TRUE(r.size.any());
  EXPECT_TRUE(r.nodes.any());
  EXPECT_TRUE(r.ranks.any());
  EXPECT_TRUE(r.ranksPerNode.any());
  EXPECT_TRUE(r.pipeOps.any());
  EXPECT_EQ(r.regBuff, -1);
  EXPECT_FALSE(r.namesChoice());
  EXPECT_EQ(r.channels, 0);
  EXPECT_EQ(r.chunkBytes, 0u);
}

TEST(TableParserNative, WildcardsForEveryKey) {
  for (const char* w : {"-1", "*", "any", "default", "ANY"}) {
    SCOPED_TRACE(w);
    std::string s(w);
    Rule r = parseOne("allreduce size=" + s + " algo=" + s + " proto=" + s + " nodes=" + s +
                      " ranks=" + s + " rpn=" + s + " pipeops=" + s + " regbuff=" + s +
                      " channels=" + s + " chunk=" + s);
    EXPECT_TRUE(r.size.any());
    EXPECT_EQ(r.algorithms, 0);
    EXPECT_EQ(r.protocols, 0);
    EXPECT_TRUE(r.nodes.any());
    EXPECT_TRUE(r.ranks.any());
    EXPECT_TRUE(r.ranksPerNode.any());
    EXPECT_TRUE(r.pipeOps.any());
    EXPECT_EQ(r.regBuff, -1);
    EXPECT_EQ(r.channels, 0);
    EXPECT_EQ(r.chunkBytes, 0u);
  }
}

TEST(TableParserNative, ListsOfAlgorithmsAndProtocols) {
  Rule r = parseOne("allreduce algo=ring|tree proto=ll|simple");
  EXPECT_EQ(r.algorithms, bit(Algorithm::Ring) | bit(Algorithm::Tree));
  EXPECT_EQ(r.protocols, bit(Protocol::LL) | bit(Protocol::Simple));
  EXPECT_FALSE(r.selectsOneCell());
  EXPECT_TRUE(r.namesChoice());
  r = parseOne("allreduce algo=NVLS|CollNet_Direct|collnetchain|PAT");
  EXPECT_EQ(r.algorithms, bit(Algorithm::Nvls) | bit(Algorithm::CollNetDirect) |
                              bit(Algorithm::CollNetChain) | bit(Algorithm::Pat));
  // A repeated name is the same bit.
  r = parseOne("allreduce algo=ring|ring proto=ll");
  EXPECT_EQ(r.algorithms, bit(Algorithm::Ring));
  EXPECT_TRUE(r.selectsOneCell());
}

TEST(TableParserNative, NcclSpellingsOfAlgorithmsAndProtocols) {
  EXPECT_EQ(parseOne("allreduce algo=NVLSTree").algorithms, bit(Algorithm::NvlsTree));
  EXPECT_EQ(parseOne("allreduce algo=CollNetDirect").algorithms, bit(Algorithm::CollNetDirect));
  EXPECT_EQ(parseOne("allreduce algo=CollNetChain").algorithms, bit(Algorithm::CollNetChain));
  EXPECT_EQ(
      parseOne("allreduce algo=NVLS|PAT|Tree|Ring").algorithms,
      bit(Algorithm::Nvls) | bit(Algorithm::Pat) | bit(Algorithm::Tree) | bit(Algorithm::Ring));
  EXPECT_EQ(parseOne("allreduce proto=LL|LL128|Simple").protocols,
            bit(Protocol::LL) | bit(Protocol::LL128) | bit(Protocol::Simple));
  Rule csv = parseOne("allreduce,0,65536,NVLSTree,Simple,-1,-1,-1");
  EXPECT_EQ(csv.algorithms, bit(Algorithm::NvlsTree));
  EXPECT_EQ(csv.protocols, bit(Protocol::Simple));
  // Display names and table names agree with the indices.
  for (int a = 0; a < kNumAlgorithms; ++a) {
    auto algo = static_cast<Algorithm>(a);
    EXPECT_EQ(parseAlgorithm(algorithmName(algo)), algo);
    EXPECT_EQ(parseAlgorithm(algorithmDisplayName(algo)), algo);
  }
  for (int p = 0; p < kNumProtocols; ++p) {
    auto proto = static_cast<Protocol>(p);
    EXPECT_EQ(parseProtocol(protocolName(proto)), proto);
    EXPECT_EQ(parseProtocol(protocolDisplayName(proto)), proto);
  }
  for (int c = 0; c < kNumCollectives; ++c) {
    auto coll = static_cast<Collective>(c);
    EXPECT_EQ(parseCollective(collectiveName(coll)), coll);
  }
}

TEST(TableParserNative, CollectiveNamesListsAndAny) {
  EXPECT_EQ(parseOne("any algo=ring").collectives, kAllCollectives);
  EXPECT_EQ(parseOne("ANY algo=ring").collectives, kAllCollectives);
  EXPECT_EQ(parseOne("* algo=ring").collectives, kAllCollectives);
  EXPECT_EQ(parseOne("any,0,65536,ring,simple,-1,-1,-1").collectives, kAllCollectives);
  EXPECT_EQ(parseOne("allreduce|allgather").collectives,
            bit(Collective::AllReduce) | bit(Collective::AllGather));
  EXPECT_EQ(parseOne("all_reduce").collectives, bit(Collective::AllReduce));
  EXPECT_EQ(parseOne("reduce_scatter").collectives, bit(Collective::ReduceScatter));
  EXPECT_EQ(parseOne("AllGather").collectives, bit(Collective::AllGather));
  EXPECT_EQ(parseOne("broadcast").collectives, bit(Collective::Broadcast));
  EXPECT_EQ(parseOne("reduce").collectives, bit(Collective::Reduce));
}

TEST(TableParserNative, PerRank) {
  Rule r = parseOne("allgather size=0..1M per-rank");
  EXPECT_TRUE(r.perRankSize);
  EXPECT_EQ(r.size.hi, 1u << 20);
  EXPECT_TRUE(parseOne("reducescatter PER-RANK size=4K").perRankSize);
  EXPECT_FALSE(parseOne("allgather size=0..1M").perRankSize);
}

TEST(TableParserNative, KeysAreCaseInsensitive) {
  Rule r = parseOne("allreduce SIZE=4K Algo=Ring PROTO=Simple Channels=4");
  EXPECT_EQ(r.size.lo, 4096u);
  EXPECT_EQ(r.algorithms, bit(Algorithm::Ring));
  EXPECT_EQ(r.protocols, bit(Protocol::Simple));
  EXPECT_EQ(r.channels, 4);
}

TEST(TableParserNative, FabricKey) {
  EXPECT_EQ(parseOne("allreduce fabric=ib").fabrics, bit(Fabric::InfiniBand));
  EXPECT_EQ(parseOne("allreduce fabric=RoCE|ethernet").fabrics,
            bit(Fabric::RoCE) | bit(Fabric::Ethernet));
  EXPECT_EQ(parseOne("allreduce fabric=*").fabrics, 0);
  EXPECT_EQ(parseOne("allreduce").fabrics, 0);
  std::string m = parseError("allreduce fabric=omnipath");
  EXPECT_EQ(m, "fabric: unknown fabric 'omnipath' (expected ib, roce, ethernet)");
  EXPECT_EQ(parseError("allreduce fabric=ib fabric=roce"), "key 'fabric' given twice");
}

TEST(TableParserNative, NcclVersionKey) {
  const Range one = parseOne("allreduce nccl=2.28").ncclVersions;
  EXPECT_EQ(one.lo, 22800u);
  EXPECT_EQ(one.hi, 22899u);
  const Range span = parseOne("allreduce nccl=2.28-2.30").ncclVersions;
  EXPECT_EQ(span.lo, 22800u);
  EXPECT_EQ(span.hi, 23099u);
  const Range patch = parseOne("allreduce nccl=2.28.3-2.30.7").ncclVersions;
  EXPECT_EQ(patch.lo, 22803u);
  EXPECT_EQ(patch.hi, 23007u);
  EXPECT_EQ(parseOne("allreduce nccl=2.29-").ncclVersions.lo, 22900u);
  EXPECT_TRUE(parseOne("allreduce nccl=2.29-").ncclVersions.contains(99999999u));
  EXPECT_EQ(parseOne("allreduce nccl=-2.27").ncclVersions.lo, 0u);
  EXPECT_EQ(parseOne("allreduce nccl=-2.27").ncclVersions.hi, 22799u);
  EXPECT_TRUE(parseOne("allreduce nccl=*").ncclVersions.any());
  for (const char* bad : {"2", "2.x", "2.28.1.4", "3.100", "0.9", "2.28-2.27", "-", ".28"}) {
    EXPECT_NE(parseError(std::string("allreduce nccl=") + bad).find("nccl: "), std::string::npos)
        << bad;
  }
}

TEST(TableParserNative, ExpectKey) {
  const Rule r = parseOne("allreduce size=64K..1M expect=64K:12.5|1M:80");
  ASSERT_EQ(r.expected.size(), 2u);
  EXPECT_EQ(r.expected[0].bytes, 64u << 10);
  EXPECT_DOUBLE_EQ(r.expected[0].microseconds, 12.5);
  EXPECT_EQ(r.expected[1].bytes, 1u << 20);
  EXPECT_DOUBLE_EQ(r.expected[1].microseconds, 80.0);
  EXPECT_NE(parseError("allreduce expect=64K").find("is not SIZE:MICROSECONDS"), std::string::npos);
  EXPECT_NE(parseError("allreduce expect=64K:0").find("is not a time"), std::string::npos);
  EXPECT_NE(parseError("allreduce expect=64K:nan").find("is not a time"), std::string::npos);
  EXPECT_NE(parseError("allreduce expect=64K:-1").find("is not a time"), std::string::npos);
  EXPECT_NE(parseError("allreduce expect=1M:5|64K:2").find("ascending"), std::string::npos);
  EXPECT_NE(parseError("allreduce expect=1Q:5").find("not a byte count"), std::string::npos);
  std::string many = "allreduce expect=";
  for (int i = 1; i <= 65; ++i) many += (i > 1 ? "|" : "") + std::to_string(i) + ":1";
  EXPECT_NE(parseError(many).find("more than 64 points"), std::string::npos);
}

// ---- files -------------------------------------------------------------------------------

TEST(LoadTableFile, ReadsAFile) {
  test::TempDir dir;
  std::string path = dir.write("t.table", "#@ k: v\nallreduce algo=ring\nallreduce algo=x\n");
  ParsedTable parsed = loadTableFile(path);
  EXPECT_EQ(parsed.table.source, path);
  ASSERT_EQ(parsed.table.rules.size(), 1u);
  EXPECT_EQ(parsed.table.rules[0].line, 2);
  ASSERT_EQ(parsed.diagnostics.size(), 1u);
  EXPECT_EQ(parsed.diagnostics[0].line, 3);
  ASSERT_EQ(parsed.table.provenance.size(), 1u);
}

TEST(LoadTableFile, MissingFileIsOneLineZeroDiagnostic) {
  test::TempDir dir;
  std::string path = dir.path() + "/does-not-exist.table";
  ParsedTable parsed = loadTableFile(path);
  EXPECT_EQ(parsed.table.source, path);
  EXPECT_TRUE(parsed.table.rules.empty());
  ASSERT_EQ(parsed.diagnostics.size(), 1u);
  EXPECT_EQ(parsed.diagnostics[0].line, 0);
  EXPECT_TRUE(contains(parsed.diagnostics[0].message, "cannot open"))
      << parsed.diagnostics[0].message;
  EXPECT_TRUE(contains(parsed.diagnostics[0].message, "No such file"))
      << parsed.diagnostics[0].message;
}

TEST(LoadTableFile, DirectoryIsOneLineZeroDiagnostic) {
  test::TempDir dir;
  ParsedTable parsed = loadTableFile(dir.path());
  EXPECT_TRUE(parsed.table.rules.empty());
  ASSERT_EQ(parsed.diagnostics.size(), 1u);
  EXPECT_EQ(parsed.diagnostics[0].line, 0);
}

/// A sparse file of `size` bytes (all NUL), made with ftruncate.
std::string sparseFile(test::TempDir& dir, const std::string& name, off_t size) {
  std::string path = dir.file(name);
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  EXPECT_GE(fd, 0);
  if (fd >= 0) {
    EXPECT_EQ(ftruncate(fd, size), 0);
    close(fd);
  }
  return path;
}

TEST(LoadTableFile, FileOverTheSizeLimitIsNotLoaded) {
  test::TempDir dir;
  std::string path = sparseFile(dir, "huge.table", static_cast<off_t>(kMaxTableBytes) + 1);
  ParsedTable parsed = loadTableFile(path);
  EXPECT_TRUE(parsed.table.rules.empty());
  ASSERT_EQ(parsed.diagnostics.size(), 1u);
  EXPECT_EQ(parsed.diagnostics[0].line, 0);
  EXPECT_EQ(parsed.diagnostics[0].message, "file is larger than 64M; not loaded");

  std::string bigger = sparseFile(dir, "huger.table", off_t{1} << 30);
  ParsedTable parsed2 = loadTableFile(bigger);
  ASSERT_EQ(parsed2.diagnostics.size(), 1u);
  EXPECT_EQ(parsed2.diagnostics[0].line, 0);
}

TEST(LoadTableFile, FileAtTheSizeLimitIsParsed) {
  test::TempDir dir;
  std::string path = sparseFile(dir, "limit.table", static_cast<off_t>(kMaxTableBytes));
  ParsedTable parsed = loadTableFile(path);
  // Read and parsed: the only complaint is the one (NUL-filled) over-long line.
  ASSERT_EQ(parsed.diagnostics.size(), 1u);
  EXPECT_EQ(parsed.diagnostics[0].line, 1);
  EXPECT_TRUE(contains(parsed.diagnostics[0].message, "longer than"));
}

TEST(TableParser, ExploreMarks) {
  const Rule r = parseOne("allreduce size=4M..128M nodes=2 algo=ring proto=ll explore=slow");
  EXPECT_TRUE(r.isMark());
  EXPECT_EQ(r.explore, ExploreMark::Slow);
  EXPECT_EQ(parseOne("allreduce algo=tree explore=KNOWN").explore, ExploreMark::Known);
  EXPECT_EQ(parseOne("allreduce proto=ll explore=first").explore, ExploreMark::First);
  EXPECT_FALSE(parseOne("allreduce algo=tree").isMark());
  EXPECT_EQ(formatRule(r), "allreduce size=4M..128M algo=ring proto=ll nodes=2 explore=slow");
  EXPECT_TRUE(
      contains(parseError("allreduce algo=ring explore=maybe"), "not slow, known or first"));
  EXPECT_TRUE(contains(parseError("allreduce explore=slow"), "name the cells"));
  EXPECT_TRUE(contains(parseError("allreduce algo=ring channels=4 explore=known"), "takes no"));
  EXPECT_TRUE(contains(parseError("allreduce algo=ring explore=known explore=slow"), "twice"));
}

}  // namespace
}  // namespace pilot::tuner
