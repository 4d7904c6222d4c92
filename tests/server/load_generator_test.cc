// The load generator behind `slackswap bench-server`, against a real server
// on loopback and in-process.
#include "client/load_generator.h"

#include "absl/time/clock.h"
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
}

}  // namespace
}  // namespace slackswap
