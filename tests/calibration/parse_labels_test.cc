// Configuration specs, --configs lists, --label rules and the glob they use.
#include <gtest/gtest.h>

#include "pilot/calibration/dataset_loader.h"
#include "pilot/calibration/labels.h"
#include "sweep_test_support.h"

namespace pilot::calibration {
namespace {

TEST(ConfigSpec, DefaultAndVariables) {
  auto d = parseConfigSpec(" Default ");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->isDefault());
  EXPECT_EQ(d->label, "default");

  auto c = parseConfigSpec("NCCL_ALGO=ring,NCCL_PROTO=ll128");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->algo, "Ring");
  EXPECT_EQ(c->proto, "LL128");
  EXPECT_EQ(c->label, "ring+ll128");
  EXPECT_EQ(configSpec(*c), "NCCL_ALGO=Ring,NCCL_PROTO=LL128");

  auto plus = parseConfigSpec("NCCL_ALGO=Tree+NCCL_PROTO=Simple");
  ASSERT_TRUE(plus.ok());
  EXPECT_EQ(plus->label, "tree+simple");

  auto channels = parseConfigSpec("NCCL_MIN_NCHANNELS=4+NCCL_MAX_NCHANNELS=4");
  ASSERT_TRUE(channels.ok());
  EXPECT_EQ(channels->minChannels, 4);
  EXPECT_EQ(channels->maxChannels, 4);
  EXPECT_EQ(channels->label, "ch4");
  EXPECT_EQ(parseConfigSpec("NCCL_MIN_NCHANNELS=2,NCCL_MAX_NCHANNELS=8")->label, "ch2-8");
  EXPECT_EQ(parseConfigSpec("NCCL_MAX_NCHANNELS=8")->label, "chmax8");
}

TEST(ConfigSpec, ListValuesKeepTheirCommas) {
  auto c = parseConfigSpec("NCCL_ALGO=ring,tree,NCCL_PROTO=^ll");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->algo, "Ring,Tree");
  EXPECT_EQ(c->proto, "^LL");
  EXPECT_EQ(configSpec(*c), "NCCL_ALGO=Ring,Tree,NCCL_PROTO=^LL");
  // The spec round-trips.
  EXPECT_EQ(forcingKey(*parseConfigSpec(configSpec(*c))), forcingKey(*c));
  auto perColl = parseConfigSpec("NCCL_ALGO=allreduce:tree,ring;AllGather:ring");
  ASSERT_TRUE(perColl.ok()) << perColl.error();
  EXPECT_EQ(perColl->algo, "allreduce:Tree,Ring;allgather:Ring");
}

TEST(ConfigSpec, Errors) {
  for (const char* bad :
       {"", "ring", "NCCL_ALGO=", "NCCL_ALGO=warp", "NCCL_PROTO=LL256", "NCCL_NTHREADS=256",
        "NCCL_MIN_NCHANNELS=0", "NCCL_MAX_NCHANNELS=x", "NCCL_ALGO=Ring,NCCL_ALGO=Tree",
        "NCCL_MIN_NCHANNELS=8,NCCL_MAX_NCHANNELS=4", "NCCL_ALGO=bogus:ring"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parseConfigSpec(bad).ok());
  }
  EXPECT_NE(parseConfigSpec("NCCL_NTHREADS=256").error().find("--env"), std::string::npos);
}

TEST(ConfigList, CommasSeparateConfigurationsPlusJoinsVariables) {
  auto list = parseConfigList(
      "default,NCCL_ALGO=Ring,NCCL_PROTO=LL,NCCL_ALGO=Tree+NCCL_PROTO=Simple,"
      "NCCL_MIN_NCHANNELS=4+NCCL_MAX_NCHANNELS=4");
  ASSERT_TRUE(list.ok()) << list.error();
  ASSERT_EQ(list->size(), 5u);
  EXPECT_EQ((*list)[0].label, "default");
  EXPECT_EQ((*list)[1].label, "ring");
  EXPECT_EQ((*list)[2].label, "ll");
  EXPECT_EQ((*list)[3].label, "tree+simple");
  EXPECT_EQ((*list)[4].label, "ch4");
}

TEST(ConfigList, ValueListsAndNames) {
  auto list = parseConfigList("default,rt:NCCL_ALGO=Ring,Tree,NCCL_PROTO=LL");
  ASSERT_TRUE(list.ok()) << list.error();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[1].label, "rt");
  EXPECT_EQ((*list)[1].algo, "Ring,Tree");
  EXPECT_EQ((*list)[2].proto, "LL");
  EXPECT_FALSE(parseConfigList("NCCL_ALGO=Ring,NCCL_ALGO=ring").ok());      // listed twice
  EXPECT_FALSE(parseConfigList("a:NCCL_ALGO=Ring,a:NCCL_ALGO=Tree").ok());  // one name twice
  EXPECT_FALSE(parseConfigList("fast:default").ok());
  auto named = parseNamedConfig("ring_ll:NCCL_ALGO=Ring,NCCL_PROTO=LL");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->label, "ring_ll");
  EXPECT_EQ(named->proto, "LL");
}

TEST(Glob, Matching) {
  std::string captured;
  EXPECT_TRUE(globMatch("auto_*", "auto_ll128", &captured));
  EXPECT_EQ(captured, "ll128");
  EXPECT_TRUE(globMatch("*", ""));
  EXPECT_TRUE(globMatch("it?ration_*", "iteration_3", &captured));
  EXPECT_EQ(captured, "3");
  EXPECT_TRUE(globMatch("*/*.txt", "auto_ll/2026.txt", &captured));
  EXPECT_EQ(captured, "auto_ll");
  EXPECT_FALSE(globMatch("auto_*", "ring"));
  EXPECT_FALSE(globMatch("ring", "ring2"));
  EXPECT_TRUE(globMatch("a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"));
  EXPECT_FALSE(globMatch("a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
}

TEST(LabelRules, FirstMatchWinsAndStarIsSubstituted) {
  std::vector<LabelRule> rules;
  for (const char* r : {"auto_*=NCCL_PROTO=*", "ring=NCCL_ALGO=Ring", "*=default"}) {
    auto rule = parseLabelRule(r);
    ASSERT_TRUE(rule.ok()) << rule.error();
    rules.push_back(*rule);
  }
  auto ll = applyLabelRules(rules, "auto_ll");
  ASSERT_TRUE(ll && ll->ok());
  EXPECT_EQ((*ll)->proto, "LL");
  auto ring = applyLabelRules(rules, "ring");
  ASSERT_TRUE(ring && ring->ok());
  EXPECT_EQ((*ring)->algo, "Ring");
  auto other = applyLabelRules(rules, "whatever.txt");
  ASSERT_TRUE(other && other->ok());
  EXPECT_TRUE((*other)->isDefault());
  auto bad = applyLabelRules(rules, "auto_foo");
  ASSERT_TRUE(bad.has_value());
  EXPECT_FALSE(bad->ok());
  EXPECT_FALSE(applyLabelRules({}, "x").has_value());
}

TEST(LabelRules, BadRules) {
  for (const char* bad : {"ring", "=default", "ring=", "ring=NCCL_ALGO=Warp", "x=NCCL_FOO=1"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(parseLabelRule(bad).ok());
  }
  EXPECT_TRUE(parseLabelRule("auto_*=NCCL_PROTO=*").ok());
  EXPECT_TRUE(parseLabelRule("c*=NCCL_MIN_NCHANNELS=*,NCCL_MAX_NCHANNELS=*").ok());
}

TEST(LabelRules, DirectoryPathsAreKeys) {
  PILOT_REQUIRE_FIXTURE(test::fixture("l40s-1n4gpu-allreduce-forced.txt"));
  // Per-configuration directories, as the L40S study kept its raw files.
  test::ScratchDir dir;
  std::filesystem::create_directories(dir / "auto_ll");
  std::filesystem::create_directories(dir / "iteration_1");
  const std::string log = test::readText(test::fixture("l40s-1n4gpu-allreduce-forced.txt"));
  // The first run of the fixture (auto_ll) without its '# RUN' line, as the raw file was.
  const size_t start = log.find("# nccl-tests version");
  const size_t end = log.find("# RUN", start);
  test::writeText(dir / "auto_ll/2026-02-22.txt", log.substr(start, end - start));
  test::writeText(dir / "iteration_1/2026-02-20.txt", log.substr(start, end - start));
  LoadOptions options;
  options.labels.push_back(*parseLabelRule("auto_*/*=NCCL_PROTO=*"));
  options.labels.push_back(*parseLabelRule("iteration_*=default"));
  const Dataset data = loadDataset({dir.path()}, options);
  ASSERT_EQ(data.runs.size(), 2u);
  EXPECT_EQ(data.runs[0].config.proto, "LL");
  EXPECT_EQ(data.runs[0].config.label, "ll");
  EXPECT_TRUE(data.runs[1].config.isDefault());
  EXPECT_EQ(data.runs[1].configSource, "label");
}

TEST(LabelRules, OneLabelPerForcingAcrossInputs) {
  PILOT_REQUIRE_FIXTURE(test::fixture("l40s-1n4gpu-allreduce-forced.txt"));
  Dataset data;
  LoadOptions options;
  options.labels.push_back(*parseLabelRule("ring*=NCCL_ALGO=Ring"));
  const std::string body = test::readText(test::fixture("l40s-1n4gpu-allreduce-forced.txt"));
  const size_t start = body.find("# RUN file=ring");
  const std::string ring = body.substr(start, body.find("# RUN", start + 5) - start);
  std::string renamed = ring;
  renamed.replace(renamed.find("config=ring"), 11, "config=ring_again");
  addOutput(data, ring, "a.txt", "a.txt", options);
  addOutput(data, renamed, "b.txt", "b.txt", options);
  finishDataset(data);
  ASSERT_EQ(data.runs.size(), 2u);
  EXPECT_EQ(data.runs[0].config.label, "ring");
  EXPECT_EQ(data.runs[1].config.label, "ring");
  EXPECT_EQ(data.runs[1].repeat, 1);
  EXPECT_TRUE(test::mentions(data.problems, "'ring_again' forces the same as 'ring'"));
}

}  // namespace
}  // namespace pilot::calibration
