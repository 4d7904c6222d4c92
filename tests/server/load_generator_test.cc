// The load generator behind `slackswap bench-server`, against a real server
// on loopback and in-process.
#include "client/load_generator.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "base/usable_cpus.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "tests/server/test_server.h"

namespace slackswap {
namespace {

class LoadGeneratorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = StartTestServer(16, 0).release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  static std::shared_ptr<grpc::Channel> Channel() {
    return grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                               grpc::InsecureChannelCredentials());
  }

  static v1::PlanRequest Request(double fraction) {
    auto stub = v1::PlannerService::NewStub(server_->InProcessChannel());
    return SmallPlanRequest(*stub, fraction);
  }

  static PlanningServer* server_;
};

PlanningServer* LoadGeneratorTest::server_ = nullptr;

void ExpectOrderedPercentiles(const LoadReport& r) {
  EXPECT_GT(r.p50_ms, 0);
  EXPECT_LE(r.p50_ms, r.p90_ms);
  EXPECT_LE(r.p90_ms, r.p99_ms);
  EXPECT_LE(r.p99_ms, r.max_ms);
}

TEST_F(LoadGeneratorTest, MakesExactlyTheRequestedCallsAgainstAServer) {
  LoadOptions options;
  options.concurrency = 4;
  options.max_requests = 25;
  options.duration = absl::Seconds(60);
  const LoadReport r = RunLoad(Channel(), Request(0.5), options);
  EXPECT_EQ(r.calls, 25);
  EXPECT_EQ(r.ok, 25);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_GT(r.requests_per_second, 0);
  ExpectOrderedPercentiles(r);
}

TEST_F(LoadGeneratorTest, CountsErrorsByStatusCode) {
  v1::PlanRequest bad = Request(0.5);
  bad.mutable_trace()->mutable_tensors(0)->set_size_bytes(-1);
  LoadOptions options;
  options.concurrency = 3;
  options.max_requests = 9;
  const LoadReport r = RunLoad(Channel(), bad, options);
  EXPECT_EQ(r.calls, 9);
  EXPECT_EQ(r.ok, 0);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors.begin()->first, "INVALID_ARGUMENT");
  EXPECT_EQ(r.errors.begin()->second, 9);
}

TEST_F(LoadGeneratorTest, LeavesWarmUpCallsOutOfTheReport) {
  LoadOptions options;
  options.concurrency = 2;
  options.warmup = absl::Milliseconds(400);
  options.max_requests = 5;
  const absl::Time start = absl::Now();
  const LoadReport r = RunLoad(Channel(), Request(0.5), options);
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  EXPECT_EQ(r.calls, 5);
  EXPECT_EQ(r.ok, 5);
  // The measured stretch starts after the warm-up.
  EXPECT_GE(elapsed, 0.4);
  EXPECT_LE(r.seconds, elapsed - 0.35);
}

TEST_F(LoadGeneratorTest, StopsAtTheDuration) {
  LoadOptions options;
  options.concurrency = 2;
  options.duration = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  const LoadReport r = RunLoad(Channel(), Request(0.5), options);
  EXPECT_GT(r.ok, 0);
  EXPECT_EQ(r.ok, r.calls);
  // Calls in flight at the end finish; none starts after it.
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST_F(LoadGeneratorTest, PlansInProcessWithoutAChannel) {
  LoadOptions options;
  options.concurrency = 2;
  options.max_requests = 6;
  const LoadReport r = RunLoad(nullptr, Request(0.5), options);
  EXPECT_EQ(r.calls, 6);
  EXPECT_EQ(r.ok, 6);
  ExpectOrderedPercentiles(r);
  EXPECT_GT(r.cpu_seconds, 0);
}

TEST_F(LoadGeneratorTest, InProcessCallsQueueForThePlanningThreads) {
  LoadOptions options;
  // Past the first plans (thread start, cold caches).
  options.warmup = absl::Milliseconds(50);
  options.max_requests = 200;
  options.duration = absl::Seconds(60);
  options.concurrency = 4;
  options.planning_threads = 1;
  const LoadReport r = RunLoad(nullptr, Request(0.5), options);
  EXPECT_EQ(r.planning_threads, 1);
  EXPECT_EQ(r.calls, 200);
  EXPECT_EQ(r.ok, 200);
  ExpectOrderedPercentiles(r);
  // One thread plans: the process cannot use more CPU than time passed.
  EXPECT_LE(r.cpu_seconds, 1.1 * r.seconds + 0.02);
  // Four callers take turns at one thread, so a call's latency, counted from
  // its sending, holds the three calls ahead of it: about four plans. A plan
  // takes at least its CPU time, which this run measured itself (a lone
  // caller's run, measured at another moment, met other load on this shared
  // machine: under the sanitizers, beside the fuzzer, it came out four times
  // slower). Counted from the dequeue instead, the median is one plan.
  const double cpu_ms_per_call = 1000 * r.cpu_seconds / r.calls;
  EXPECT_GT(r.p50_ms, 3 * cpu_ms_per_call) << cpu_ms_per_call;
}

TEST_F(LoadGeneratorTest, InProcessPlanningThreadsNeverOutnumberCallers) {
  LoadOptions options;
  options.concurrency = 3;
  options.max_requests = 6;
  options.planning_threads = 8;
  EXPECT_EQ(RunLoad(nullptr, Request(0.5), options).planning_threads, 3);
  options.planning_threads = 0;  // one per core
  const int cores = UsableCpus();
  const LoadReport r = RunLoad(nullptr, Request(0.5), options);
  EXPECT_EQ(r.planning_threads, std::clamp(cores, 1, 3));
  EXPECT_EQ(r.calls, 6);
  // Against a server the server's threads plan.
  EXPECT_EQ(RunLoad(Channel(), Request(0.5), options).planning_threads, 0);
}

TEST_F(LoadGeneratorTest, ReportsCpuTimeOfItselfAndOfTheServerProcess) {
  LoadOptions options;
  options.concurrency = 4;
  options.duration = absl::Milliseconds(600);
  const LoadReport without = RunLoad(Channel(), Request(0.5), options);
  EXPECT_GT(without.cpu_seconds, 0);
  EXPECT_FALSE(without.server_cpu_seconds.has_value());

  // The test server runs in this process, so both meters measure the same
  // CPU time: one at nanosecond, the other at clock-tick resolution.
  options.server_pid = getpid();
  const LoadReport r = RunLoad(Channel(), Request(0.5), options);
  ASSERT_TRUE(r.server_cpu_seconds.has_value());
  EXPECT_GT(r.cpu_seconds, 0.05);
  EXPECT_NEAR(*r.server_cpu_seconds, r.cpu_seconds, 0.03 + 0.1 * r.cpu_seconds);
}

TEST(ProcessCpuSecondsTest, ReadsAnotherProcessWhateverItsName) {
  // /proc/PID/stat puts the name in parentheses; this one holds both.
  const std::filesystem::path dir = testing::TempDir();
  const std::filesystem::path odd = dir / "sle ep) (1";
  std::filesystem::copy_file("/bin/sleep", odd,
                             std::filesystem::copy_options::overwrite_existing);
  std::string path = odd.string();
  std::string seconds = "30";
  char* argv[] = {path.data(), seconds.data(), nullptr};
  pid_t child = 0;
  ASSERT_EQ(posix_spawn(&child, path.c_str(), nullptr, nullptr, argv, environ),
            0);
  // Until the child has exec'd, it carries this test's name.
  const std::string comm = "/proc/" + std::to_string(child) + "/comm";
  bool renamed = false;
  for (int i = 0; i < 500 && !renamed; ++i) {
    std::ifstream in(comm);
    std::string name;
    std::getline(in, name);
    renamed = name == odd.filename().string();
    if (!renamed) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(renamed);
  const absl::StatusOr<double> idle = ProcessCpuSeconds(child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  std::filesystem::remove(odd);
  ASSERT_TRUE(idle.ok()) << idle.status();
  EXPECT_GE(*idle, 0);
  EXPECT_LT(*idle, 0.5);
  EXPECT_EQ(ProcessCpuSeconds(child).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ProcessCpuSeconds(0).status().code(), absl::StatusCode::kNotFound);
}

TEST(ProcessCpuSecondsTest, CountsThisProcessWork) {
  const absl::StatusOr<double> before = ProcessCpuSeconds(getpid());
  ASSERT_TRUE(before.ok()) << before.status();
  // Busy for 0.3 s of this thread's CPU time.
  timespec start{};
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  volatile double sink = 0;
  do {
    for (int i = 0; i < 100000; ++i) sink = sink + std::sqrt(i);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) * 1e-9 <
           0.3);
  const absl::StatusOr<double> after = ProcessCpuSeconds(getpid());
  ASSERT_TRUE(after.ok());
  EXPECT_GE(*after - *before, 0.28);
}

}  // namespace
}  // namespace slackswap
