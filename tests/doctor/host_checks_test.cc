// numa, memlock and cpu-governor on the recorded machines' /proc/self and cpufreq files.
#include <gtest/gtest.h>

#include "test_support.h"

namespace pilot::doctor {
namespace {

using testing::contains;
using testing::dump;
using testing::matching;
using testing::of;
using testing::runOn;

TEST(Numa, AMaskThatMissesAGpusSocketWarns) {
  const DoctorReport r = runOn("baremetal-faulty", {}, {"numa"});
  const auto warns = matching(r, "numa", Verdict::Warn);
  ASSERT_EQ(warns.size(), 1u) << dump(r);
  EXPECT_EQ(warns[0].subject, "GPU1 0000:9a:00.0");
  EXPECT_TRUE(contains(warns[0].evidence, "this process may run on CPUs 0-15"));
  EXPECT_TRUE(contains(warns[0].evidence, "local CPUs 16-31"));
  EXPECT_TRUE(contains(warns[0].evidence, "0 of them allowed"));
  EXPECT_TRUE(contains(warns[0].fix, "--cpu-bind"));
  EXPECT_EQ(matching(r, "numa", Verdict::Pass, "GPU0").size(), 1u) << dump(r);
}

TEST(Numa, AFullMaskPasses) {
  const DoctorReport r = runOn("baremetal-repaired", {}, {"numa"});
  EXPECT_EQ(matching(r, "numa", Verdict::Pass).size(), 2u) << dump(r);
}

TEST(Numa, AnUnreadableMaskIsASkip) {
  testing::TreeCopy copy("baremetal-repaired");
  copy.write("proc/self/status", "Name:\tx\nCpus_allowed_list:\t0-banana\n");
  const DoctorReport r = copy.run({}, {"numa"});
  ASSERT_EQ(of(r, "numa").size(), 1u) << dump(r);
  EXPECT_EQ(of(r, "numa")[0].verdict, Verdict::Skip);
  EXPECT_TRUE(contains(of(r, "numa")[0].evidence, "is not a cpulist"));
}

TEST(Memlock, ASmallLimitWithRdmaFails) {
  const DoctorReport r = runOn("baremetal-faulty", {}, {"memlock"});
  ASSERT_EQ(of(r, "memlock").size(), 1u) << dump(r);
  const Finding f = of(r, "memlock")[0];
  EXPECT_EQ(f.verdict, Verdict::Fail);
  EXPECT_TRUE(
      contains(f.evidence, "soft limit 65536 (Max locked memory, /proc/self/limits) = 64 KiB"));
  EXPECT_TRUE(contains(f.fix, "ulimit -l unlimited"));
  EXPECT_EQ(r.facts.at("memlock"), "65536");
}

TEST(Memlock, UnlimitedPassesAndWithoutRdmaAnyLimitDoes) {
  EXPECT_EQ(of(runOn("baremetal-repaired", {}, {"memlock"}), "memlock")[0].verdict, Verdict::Pass);
  const DoctorReport noRdma = runOn("baremetal-faulty", {{"NCCL_IB_DISABLE", "1"}}, {"memlock"});
  EXPECT_EQ(of(noRdma, "memlock")[0].verdict, Verdict::Pass) << dump(noRdma);
}

TEST(Memlock, ALargeFiniteLimitWarns) {
  testing::TreeCopy copy("baremetal-repaired");
  copy.write("proc/self/limits",
             "Max locked memory         68719476736          68719476736          bytes\n");
  const DoctorReport r = copy.run({}, {"memlock"});
  EXPECT_EQ(of(r, "memlock")[0].verdict, Verdict::Warn) << dump(r);
  EXPECT_TRUE(contains(of(r, "memlock")[0].evidence, "64 GiB"));
}

TEST(CpuGovernor, PowersaveWarnsPerformancePasses) {
  const DoctorReport faulty = runOn("baremetal-faulty", {}, {"cpu-governor"});
  ASSERT_EQ(of(faulty, "cpu-governor").size(), 1u) << dump(faulty);
  EXPECT_EQ(of(faulty, "cpu-governor")[0].verdict, Verdict::Warn);
  EXPECT_TRUE(contains(of(faulty, "cpu-governor")[0].evidence, "powersave on 32 of 32 CPUs"));
  EXPECT_TRUE(contains(of(faulty, "cpu-governor")[0].fix, "cpupower frequency-set -g performance"));
  const DoctorReport repaired = runOn("baremetal-repaired", {}, {"cpu-governor"});
  EXPECT_EQ(of(repaired, "cpu-governor")[0].verdict, Verdict::Pass);
  EXPECT_EQ(repaired.facts.at("cpu.governor"), "performance");
}

TEST(CpuGovernor, MixedGovernorsGiveALineEach) {
  testing::TreeCopy copy("baremetal-repaired");
  copy.write("sys/devices/system/cpu/cpu7/cpufreq/scaling_governor", "ondemand\n");
  const DoctorReport r = copy.run({}, {"cpu-governor"});
  EXPECT_EQ(matching(r, "cpu-governor", Verdict::Warn, "ondemand").size(), 1u) << dump(r);
  EXPECT_TRUE(contains(matching(r, "cpu-governor", Verdict::Warn)[0].evidence, "first cpu7"));
  EXPECT_EQ(matching(r, "cpu-governor", Verdict::Pass, "performance").size(), 1u);
}

TEST(CpuGovernor, NoCpufreqIsASkip) {
  const DoctorReport r = runOn("kvm-roce-v2", {}, {"cpu-governor"});
  EXPECT_EQ(of(r, "cpu-governor")[0].verdict, Verdict::Skip) << dump(r);
  EXPECT_TRUE(contains(of(r, "cpu-governor")[0].evidence, "16 CPUs"));
}

}  // namespace
}  // namespace pilot::doctor
