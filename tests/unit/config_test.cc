// pilot::config: typed settings read through an EnvLookup, and the settings table's docs.
#include "pilot/core/config.h"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "test_support.h"

namespace pilot {
namespace {

using test::mapEnv;

constexpr const char* kVar = "NCCL_PILOT_TUNER_STRICT";

TEST(ReadBool, AcceptsTrueSpellings) {
  for (const char* v : {"1", "true", "TRUE", "True", "yes", "YES", "on", "On", "  1  ", "\ttrue"}) {
    auto r = readBool(mapEnv({{kVar, v}}), kVar, false);
    ASSERT_TRUE(r.ok()) << "'" << v << "': " << r.error();
    EXPECT_TRUE(r.value()) << "'" << v << "'";
  }
}

TEST(ReadBool, AcceptsFalseSpellings) {
  for (const char* v : {"0", "false", "FALSE", "no", "No", "off", "OFF", " 0 "}) {
    auto r = readBool(mapEnv({{kVar, v}}), kVar, true);
    ASSERT_TRUE(r.ok()) << "'" << v << "': " << r.error();
    EXPECT_FALSE(r.value()) << "'" << v << "'";
  }
}

TEST(ReadBool, UnsetOrBlankGivesTheFallback) {
  for (bool fallback : {false, true}) {
    auto unset = readBool(mapEnv({}), kVar, fallback);
    ASSERT_TRUE(unset.ok());
    EXPECT_EQ(unset.value(), fallback);
    auto blank = readBool(mapEnv({{kVar, "   "}}), kVar, fallback);
    ASSERT_TRUE(blank.ok());
    EXPECT_EQ(blank.value(), fallback);
  }
}

TEST(ReadBool, MalformedValueIsAnErrorNamingTheVariable) {
  for (const char* v : {"2", "maybe", "10", "-1", "y", "enable", "1 1"}) {
    auto r = readBool(mapEnv({{kVar, v}}), kVar, false);
    ASSERT_FALSE(r.ok()) << "'" << v << "' was accepted";
    EXPECT_TRUE(test::contains(r.error(), kVar)) << r.error();
    EXPECT_TRUE(test::contains(r.error(), v)) << r.error();
    EXPECT_TRUE(test::contains(r.error(), "not a boolean")) << r.error();
  }
  auto other = readBool(mapEnv({{"NCCL_PILOT_TUNER", "perhaps"}}), "NCCL_PILOT_TUNER", true);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error(), "NCCL_PILOT_TUNER=perhaps is not a boolean (use 0 or 1)");
}

TEST(ReadText, TrimsAndTreatsBlankAsUnset) {
  EXPECT_EQ(readText(mapEnv({{"X", "  /a/b.table \t"}}), "X"), "/a/b.table");
  EXPECT_EQ(readText(mapEnv({{"X", ""}}), "X"), std::nullopt);
  EXPECT_EQ(readText(mapEnv({{"X", " \t "}}), "X"), std::nullopt);
  EXPECT_EQ(readText(mapEnv({}), "X"), std::nullopt);
}

TEST(ReadUnsigned, RangesAndByteSuffixes) {
  const char* name = "NCCL_PILOT_METRICS_SAMPLE";
  EXPECT_EQ(readUnsigned(mapEnv({}), name, 1, 10, 7).value(), 7u);
  EXPECT_EQ(readUnsigned(mapEnv({{name, " 10 "}}), name, 1, 10, 7).value(), 10u);
  EXPECT_EQ(readUnsigned(mapEnv({{name, "64K"}}), name, 0, 1 << 20, 0, true).value(), 65536u);
  for (const char* bad : {"11", "0", "-1", "ten", "64K"}) {
    auto r = readUnsigned(mapEnv({{name, bad}}), name, 1, 10, 7);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error(), std::string(name) + "=" + bad + " is not in [1, 10]");
  }
}

TEST(AllSettings, EntriesAreWellFormed) {
  const auto& settings = allSettings();
  ASSERT_FALSE(settings.empty());
  std::set<std::string> names;
  for (const SettingInfo& s : settings) {
    SCOPED_TRACE(s.name);
    ASSERT_NE(s.name, nullptr);
    EXPECT_TRUE(names.insert(s.name).second) << "listed twice";
    EXPECT_EQ(std::string(s.name).rfind("NCCL_", 0), 0u);
    ASSERT_NE(s.description, nullptr);
    EXPECT_STRNE(s.description, "");
    ASSERT_NE(s.defaultValue, nullptr);
    if (s.type == SettingType::Bool) {
      // The documented default must itself be a valid value.
      auto r = readBool(mapEnv({{s.name, s.defaultValue}}), s.name, false);
      EXPECT_TRUE(r.ok()) << r.error();
    }
    if (s.type == SettingType::Enum) {
      EXPECT_NE(s.choices, nullptr);
    }
  }
  // The settings the runtime reads are all listed.
  for (const char* name : {setting::kTunerTable, setting::kTunerConfigFile, setting::kTunerStrict,
                           setting::kTunerEnable}) {
    EXPECT_EQ(names.count(name), 1u) << name;
  }
}

/// True if `name` occurs in `text` as a whole word (so NCCL_PILOT_TUNER is not satisfied by
/// NCCL_PILOT_TUNER_TABLE).
bool mentionsWord(const std::string& text, const std::string& name) {
  auto isWordChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  };
  for (size_t pos = text.find(name); pos != std::string::npos; pos = text.find(name, pos + 1)) {
    bool startOk = pos == 0 || !isWordChar(text[pos - 1]);
    size_t end = pos + name.size();
    bool endOk = end == text.size() || !isWordChar(text[end]);
    if (startOk && endOk) return true;
  }
  return false;
}

TEST(AllSettings, EveryEntryIsDocumented) {
  const std::string path = std::string(PILOT_SOURCE_DIR) + "/docs/configuration.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot open " << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string doc = buffer.str();
  for (const SettingInfo& s : allSettings()) {
    EXPECT_TRUE(mentionsWord(doc, s.name)) << s.name << " is not documented in " << path;
  }
}

}  // namespace
}  // namespace pilot
