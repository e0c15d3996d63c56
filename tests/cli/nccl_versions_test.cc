// Which tuner ABI each NCCL release loads, as the tool knows it, against the tuner's own table
// of releases (tuner/process_facts.h): the two must never disagree.
#include "cli/nccl_versions.h"

#include <gtest/gtest.h>

#include "pilot/tuner/process_facts.h"

namespace pilot::cli {
namespace {

int abiOf(const char* text) {
  auto v = parseNcclVersion(text);
  EXPECT_TRUE(v.ok()) << text;
  return v.ok() ? tunerAbiFor(*v) : -1;
}

TEST(NcclVersions, TunerAbiPerRelease) {
  EXPECT_EQ(abiOf("2.21"), 2);
  EXPECT_EQ(abiOf("2.22.3"), 3);
  EXPECT_EQ(abiOf("2.27"), 4);
  EXPECT_EQ(abiOf("2.28.9-1"), 5);
  EXPECT_EQ(abiOf("2.30"), 6);
  EXPECT_EQ(abiOf("2.31"), 6);
  EXPECT_EQ(abiOf("2.31.2"), 6);
  EXPECT_EQ(abiOf("2.32.3"), 6) << "2.32.3 predates tuner v7";
  EXPECT_EQ(abiOf("2.32.6"), 7);
  EXPECT_EQ(abiOf("2.32"), 7) << "a line without patch is its newest release, 2.32.7";
  EXPECT_EQ(abiOf("2.33"), 7);
}

TEST(NcclVersions, WithoutAPatchTheNewestKnownRelease) {
  auto v = parseNcclVersion("2.32");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(withPatch(*v).str(), "2.32.7");
  EXPECT_EQ(withPatch(*v).code(), 23207u);
  EXPECT_EQ(withPatch(*parseNcclVersion("2.28")).str(), "2.28.9");
  EXPECT_EQ(withPatch(*parseNcclVersion("2.40")).str(), "2.40.0");
  EXPECT_EQ(withPatch(*parseNcclVersion("2.32.3")).str(), "2.32.3");
}

TEST(NcclVersions, ServedReleasesAgreeWithTheTuner) {
  for (const NcclRelease& r : servedReleases()) {
    for (int minor = r.firstMinor; minor <= r.lastMinor; ++minor) {
      for (int patch : {r.firstPatch, r.lastPatch}) {
        const uint64_t code =
            tuner::ncclVersionCode(2, static_cast<unsigned>(minor), static_cast<unsigned>(patch));
        EXPECT_EQ(tuner::tunerAbiOf(code), r.tunerMax)
            << r.label() << " at 2." << minor << "." << patch;
      }
    }
  }
  EXPECT_EQ(servedReleases().back().label(), "2.32.6+");
  EXPECT_EQ(servedReleases().back().tunerMax, tuner::kNewestTunerAbi);
  EXPECT_EQ(servedReleases().back().firstMinor, kNewestKnownMinor);
}

}  // namespace
}  // namespace pilot::cli
