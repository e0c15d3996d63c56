// core/file.h: the one read loop behind the tuning table, the hwloc XML and the tool's files.
#include <gtest/gtest.h>
#include <sys/stat.h>
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

TEST_F(FileTest, AnAtomicWriteReplacesTheFileAndLeavesNoTemporary) {
  ASSERT_TRUE(writeFile(path_, "old content").ok());
  ASSERT_TRUE(writeFileAtomically(path_, "new").ok());
  EXPECT_EQ(readFile(path_).value(), "new");
  struct stat st {};
  EXPECT_NE(::stat((path_ + ".tmp").c_str(), &st), 0);
  auto failed = writeFileAtomically("/nonexistent-dir/x", "y");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), "cannot write /nonexistent-dir/x: No such file or directory");
}

TEST_F(FileTest, MakeDirectoriesCreatesTheMissingParents) {
  const std::string dir = path_ + "/a/b/c";
  ASSERT_TRUE(makeDirectories(dir).ok());
  ASSERT_TRUE(makeDirectories(dir).ok());  // existing: fine
  ASSERT_TRUE(writeFileAtomically(dir + "/f", "x").ok());
  auto onAFile = makeDirectories(dir + "/f/g");
  ASSERT_FALSE(onAFile.ok());
  EXPECT_EQ(onAFile.error().rfind("cannot create " + dir + "/f/g", 0), 0u) << onAFile.error();
  for (const std::string& p : {dir + "/f", dir, path_ + "/a/b", path_ + "/a", path_}) {
    std::remove(p.c_str());
  }
}

}  // namespace
}  // namespace pilot
