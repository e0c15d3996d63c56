// core/file.h: the one read loop behind the tuning table, the hwloc XML and the tool's files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "pilot/core/file.h"

namespace pilot {
namespace {

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "pilot_file_test_" + std::to_string(getpid());
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_F(FileTest, WritesAndReadsBackEveryByte) {
  std::string content(200000, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(writeFile(path_, content).ok());
  auto read = readFile(path_);
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(read.value(), content);
}

TEST_F(FileTest, TheBoundIsInclusive) {
  ASSERT_TRUE(writeFile(path_, std::string(100, 'x')).ok());
  std::string content;
  EXPECT_EQ(readFileUpTo(path_, 100, &content), ReadOutcome::Ok);
  EXPECT_EQ(content.size(), 100u);
  EXPECT_EQ(readFileUpTo(path_, 99, &content), ReadOutcome::TooLarge);
}

TEST_F(FileTest, AMissingFileGivesItsErrno) {
  std::string content = "stale";
  int openErrno = 0;
  EXPECT_EQ(readFileUpTo(path_, 10, &content, &openErrno), ReadOutcome::CannotOpen);
  EXPECT_EQ(openErrno, ENOENT);
  EXPECT_TRUE(content.empty());
  auto read = readFile(path_);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error(), "cannot open " + path_);
}

TEST_F(FileTest, AnUnwritablePathIsAnError) {
  auto written = writeFile("/nonexistent-dir/x", "y");
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.error(), "cannot write /nonexistent-dir/x");
}

}  // namespace
}  // namespace pilot
