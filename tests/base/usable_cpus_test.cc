// How many CPUs the server plans on by default: affinity capped by cgroup
// CPU limits, against cgroup trees laid out in a temporary folder.
#include "base/usable_cpus.h"

#include <sched.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace slackswap {
namespace {

namespace fs = std::filesystem;

class UsableCpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ =
        fs::path(testing::TempDir()) /
        ("cgroups-" +
         std::string(
             testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Writes `text` to root/relative, creating its folders.
  void Write(const std::string& relative, const std::string& text) {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::string root() const { return root_.string(); }

  fs::path root_;
};

TEST(CpuMaxLimitTest, ReadsQuotaOverPeriod) {
  EXPECT_EQ(CpuMaxLimit("200000 100000\n"), 2.0);
  EXPECT_EQ(CpuMaxLimit("150000 100000"), 1.5);
  EXPECT_EQ(CpuMaxLimit("50000 100000\n"), 0.5);
}

TEST(CpuMaxLimitTest, NoLimitOrNotALimitIsNone) {
  EXPECT_EQ(CpuMaxLimit("max 100000\n"), std::nullopt);
  EXPECT_EQ(CpuMaxLimit(""), std::nullopt);
  EXPECT_EQ(CpuMaxLimit("200000"), std::nullopt);
  EXPECT_EQ(CpuMaxLimit("0 100000"), std::nullopt);
  EXPECT_EQ(CpuMaxLimit("200000 0"), std::nullopt);
  EXPECT_EQ(CpuMaxLimit("2e5 1e5"), std::nullopt);
  EXPECT_EQ(CpuMaxLimit("200000 100000 7"), std::nullopt);
}

TEST_F(UsableCpusTest, WithoutLimitsItIsTheAffinity) {
  EXPECT_EQ(UsableCpus(8, "", root()), 8);
  Write("cgroup.controllers", "cpu memory\n");
  Write("user.slice/cpu.max", "max 100000\n");
  EXPECT_EQ(UsableCpus(8, "0::/user.slice\n", root()), 8);
  EXPECT_EQ(UsableCpus(0, "0::/user.slice\n", root()), 1);
}

TEST_F(UsableCpusTest, V2TakesTheSmallestLimitOnTheWayUp) {
  Write("cgroup.controllers", "cpu memory\n");
  Write("kubepods/cpu.max", "max 100000\n");
  Write("kubepods/pod1/cpu.max", "300000 100000\n");
  Write("kubepods/pod1/ctr/cpu.max", "max 100000\n");
  const std::string self = "0::/kubepods/pod1/ctr\n";
  EXPECT_EQ(UsableCpus(8, self, root()), 3);
  EXPECT_EQ(UsableCpus(2, self, root()), 2);  // affinity is smaller
  Write("kubepods/cpu.max", "100000 100000\n");
  EXPECT_EQ(UsableCpus(8, self, root()), 1);
}

TEST_F(UsableCpusTest, FractionalLimitsRoundUp) {
  Write("cgroup.controllers", "cpu\n");
  Write("cpu.max", "150000 100000\n");
  EXPECT_EQ(UsableCpus(8, "0::/\n", root()), 2);
  Write("cpu.max", "10000 100000\n");
  EXPECT_EQ(UsableCpus(8, "0::/\n", root()), 1);
  Write("cpu.max", "200000 100000\n");
  EXPECT_EQ(UsableCpus(8, "0::/\n", root()), 2);
}

TEST_F(UsableCpusTest, AContainerSeesItsCgroupAtTheRootOfTheMount) {
  // /proc/self/cgroup names the host's path; only the root folder exists.
  Write("cgroup.controllers", "cpu\n");
  Write("cpu.max", "200000 100000\n");
  EXPECT_EQ(UsableCpus(16, "0::/system.slice/docker-abc.scope\n", root()), 2);
}

TEST_F(UsableCpusTest, V1ReadsTheCfsQuotaOfTheCpuController) {
  Write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "250000\n");
  Write("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  const std::string self =
      "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/\n";
  EXPECT_EQ(UsableCpus(8, self, root()), 3);
  Write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n");
  EXPECT_EQ(UsableCpus(8, self, root()), 8);
  // Inside the container: the mount's root is the container's cgroup.
  Write("cpu,cpuacct/cpu.cfs_quota_us", "100000\n");
  Write("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(UsableCpus(8, self, root()), 1);
}

TEST_F(UsableCpusTest, V1LimitsOfOtherControllersDoNotCount) {
  Write("cpuset/docker/abc/cpu.cfs_quota_us", "100000\n");
  Write("cpuset/docker/abc/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(UsableCpus(4, "3:cpuset:/docker/abc\n", root()), 4);
}

TEST_F(UsableCpusTest, MalformedFilesSetNoLimit) {
  Write("cgroup.controllers", "cpu\n");
  Write("a/cpu.max", "lots\n");
  EXPECT_EQ(UsableCpus(6, "0::/a\n", root()), 6);
  EXPECT_EQ(UsableCpus(6, "garbage without colons\n0:\n::\n", root()), 6);
}

TEST(UsableCpusOfThisProcessTest, FollowsTheAffinityMask) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  const int cpus = UsableCpus();
  EXPECT_GE(cpus, 1);
  EXPECT_LE(cpus, CPU_COUNT(&allowed));
  // Narrowed to one CPU (this thread's mask is what sched_getaffinity(0)
  // reads), whatever the machine and any cgroup limit: one.
  int first = 0;
  while (!CPU_ISSET(first, &allowed)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(UsableCpus(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(allowed), &allowed), 0);
}

}  // namespace
}  // namespace slackswap
