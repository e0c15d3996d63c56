// SysfsRoot: reads stay inside the root, symlinks are followed by hand, nothing blocks.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "pilot/topology/sources.h"
#include "test_support.h"

namespace pilot::topology {
namespace {

class TempTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/pilot-sysfs-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    base_ = pattern;
    root_ = base_ + "/root";
    ASSERT_EQ(mkdir(root_.c_str(), 0755), 0);
  }
  void TearDown() override {
    std::string command = "rm -rf '" + base_ + "'";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }
  void write(const std::string& path, const std::string& content) {
    std::string full = base_ + path;
    std::string dir = full.substr(0, full.rfind('/'));
    std::string command = "mkdir -p '" + dir + "'";
    ASSERT_EQ(std::system(command.c_str()), 0);
    std::ofstream(full) << content;
  }
  void link(const std::string& path, const std::string& target) {
    std::string full = base_ + path;
    std::string dir = full.substr(0, full.rfind('/'));
    std::string command = "mkdir -p '" + dir + "'";
    ASSERT_EQ(std::system(command.c_str()), 0);
    ASSERT_EQ(symlink(target.c_str(), full.c_str()), 0);
  }
  std::string base_, root_;
};

TEST_F(TempTree, PathPrefixesTheRoot) {
  EXPECT_EQ(SysfsRoot("/").path("/sys/bus/pci"), "/sys/bus/pci");
  EXPECT_EQ(SysfsRoot("/x/").path("/sys"), "/x/sys");
  EXPECT_EQ(SysfsRoot(root_).path("/sys"), root_ + "/sys");
}

TEST_F(TempTree, ReadLineTrimsAndReadAllIsBounded) {
  write("/root/sys/a", "  4: ACTIVE \nsecond line\n");
  SysfsRoot sysfs(root_);
  EXPECT_EQ(sysfs.readLine("/sys/a"), "4: ACTIVE");
  EXPECT_EQ(sysfs.readAll("/sys/a", 4), "  4:");
  EXPECT_EQ(sysfs.readAll("/sys/a"), "  4: ACTIVE \nsecond line\n");
  EXPECT_FALSE(sysfs.readLine("/sys/missing"));
  EXPECT_FALSE(sysfs.readLine("/sys"));  // a directory is not a file
}

TEST_F(TempTree, ListIsSortedAndEmptyWhenUnreadable) {
  write("/root/d/b", "");
  write("/root/d/a", "");
  write("/root/d/c/x", "");
  SysfsRoot sysfs(root_);
  EXPECT_EQ(sysfs.list("/d"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(sysfs.list("/nope").empty());
}

TEST_F(TempTree, ResolvesRelativeAndAbsoluteLinksInsideTheRoot) {
  write("/root/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0/class", "0x030200\n");
  link("/root/sys/bus/pci/devices/0000:01:00.0",
       "../../../devices/pci0000:00/0000:00:02.0/0000:01:00.0");
  link("/root/sys/bus/pci/devices/abs", "/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0");
  SysfsRoot sysfs(root_);
  const std::string real = "/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0";
  EXPECT_EQ(sysfs.resolve("/sys/bus/pci/devices/0000:01:00.0"), real);
  EXPECT_EQ(sysfs.resolve("/sys/bus/pci/devices/abs"), real);
  EXPECT_EQ(sysfs.readLine("/sys/bus/pci/devices/abs/class"), "0x030200");
  EXPECT_EQ(sysfs.resolve("/sys/bus/pci/devices/0000:01:00.0/../.."), "/sys/devices/pci0000:00");
  EXPECT_EQ(sysfs.resolve("/"), "/");
}

TEST_F(TempTree, NeverEscapesTheRoot) {
  write("/outside", "secret\n");  // beside the root, reachable by a naive ../
  link("/root/sys/up", "../../outside");
  link("/root/sys/abs", "/../outside");
  SysfsRoot sysfs(root_);
  EXPECT_FALSE(sysfs.readLine("/sys/up"));
  EXPECT_FALSE(sysfs.readLine("/sys/abs"));
  EXPECT_FALSE(sysfs.readLine("/../outside"));
  write("/root/outside", "inside\n");
  EXPECT_EQ(sysfs.readLine("/sys/up"), "inside");  // ".." stops at the root
}

TEST_F(TempTree, SymlinkLoopsAndDanglingLinksFail) {
  link("/root/a", "b");
  link("/root/b", "a");
  link("/root/self", "self");
  link("/root/dangling", "nowhere/at/all");
  SysfsRoot sysfs(root_);
  EXPECT_FALSE(sysfs.resolve("/a"));
  EXPECT_FALSE(sysfs.resolve("/self/x"));
  EXPECT_FALSE(sysfs.resolve("/dangling"));
  EXPECT_TRUE(sysfs.list("/a").empty());
}

TEST_F(TempTree, FifoDoesNotBlock) {
  ASSERT_EQ(mkfifo((root_ + "/fifo").c_str(), 0600), 0);
  SysfsRoot sysfs(root_);
  EXPECT_FALSE(sysfs.readLine("/fifo"));
}

TEST(SysfsRootRecorded, ResolvesKernelLinksOfTheKvmTree) {
  SysfsRoot sysfs(testing::dataRoot("kvm-flat-2gpu-2nic"));
  EXPECT_EQ(sysfs.resolve("/sys/bus/pci/devices/0000:01:00.0"),
            "/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0");
  EXPECT_EQ(sysfs.resolve("/sys/class/infiniband/mlx5_0/device"),
            "/sys/devices/pci0000:00/0000:00:02.2/0000:03:00.0");
  EXPECT_EQ(sysfs.resolve("/sys/class/net/enp0s3/device"),
            "/sys/devices/pci0000:00/0000:00:03.0/virtio0");
  EXPECT_FALSE(sysfs.resolve("/sys/class/net/lo/device"));
}

}  // namespace
}  // namespace pilot::topology
