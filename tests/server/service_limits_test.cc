// PlannerService's limits through a real gRPC server: a call's duration
// without a deadline, negative limits, the concurrency limit and the
// planning queue.
#include <condition_variable>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "service/grpc_status.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/small_traces.h"
#include "slackswap/v1/service.grpc.pb.h"
#include "tests/server/service_fixture.h"
#include "tests/server/test_server.h"

namespace slackswap {
namespace {

using ::slackswap::testing::ExpectInvalidField;
using ::slackswap::testing::ServiceTest;

TEST(CallLimitsTest, TheServerBoundsACallWithoutADeadline) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.metrics_address = "";
  options.planning_threads = 1;
  options.max_call_duration = absl::Milliseconds(300);
  auto server = PlanningServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = v1::PlannerService::NewStub((*server)->InProcessChannel());
  const v1::PlanRequest base = SmallPlanRequest(*stub, 0.5);
  v1::CompareRequest compare;
  *compare.mutable_trace() = base.trace();
  *compare.mutable_hardware() = base.hardware();
  for (int i = 0; i < 8; ++i)
    compare.add_budgets()->set_fraction_of_peak(0.3 + 0.05 * i);
  compare.add_policies(v1::POLICY_GENETIC_SEARCH);
  compare.set_genetic_search_evaluations(100000);  // minutes of work
  grpc::ClientContext context;                     // no deadline
  v1::CompareResponse response;
  const grpc::Status status = stub->Compare(&context, compare, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << status.error_message();
}

TEST(CallLimitsTest, StartRejectsNegativeLimits) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.metrics_address = "";
  options.call_limits.max_work = -1;
  EXPECT_EQ(PlanningServer::Start(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.call_limits.max_work = 0;
  options.max_call_duration = -absl::Seconds(1);
  EXPECT_EQ(PlanningServer::Start(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ServiceTest, CallsOverTheConcurrencyLimitAreRefusedAtOnce) {
  const v1::PlanRequest base = PlanRequest(0.5);
  v1::CompareRequest heavy;
  *heavy.mutable_trace() = base.trace();
  *heavy.mutable_hardware() = base.hardware();
  heavy.add_budgets()->set_fraction_of_peak(0.5);
  heavy.add_policies(v1::POLICY_GENETIC_SEARCH);
  heavy.set_genetic_search_evaluations(40000);
  std::atomic<int> ok{0}, refused{0}, other{0};
  std::vector<std::thread> callers;
  callers.reserve(6);
  for (int i = 0; i < 6; ++i) {
    callers.emplace_back([&] {
      grpc::ClientContext context;
      v1::CompareResponse response;
      const grpc::Status s = stub_->Compare(&context, heavy, &response);
      if (s.ok()) {
        ++ok;
      } else if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        ++refused;
      } else {
        ++other;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_GE(ok.load(), 2);
  EXPECT_GE(refused.load(), 1);
  EXPECT_EQ(other.load(), 0);
}

// With one planning thread, admitted calls queue instead of being refused:
// all of them succeed, and only calls over the admission limit are refused.
TEST(PlanningQueueTest, AdmittedCallsWaitTheirTurnAndSucceed) {
  std::unique_ptr<PlanningServer> server = StartTestServer(3, 1);
  ASSERT_NE(server, nullptr);
  auto stub = v1::PlannerService::NewStub(server->InProcessChannel());
  const v1::PlanRequest plan = SmallPlanRequest(*stub, 0.5);
  v1::CompareRequest heavy;
  *heavy.mutable_trace() = plan.trace();
  *heavy.mutable_hardware() = plan.hardware();
  heavy.add_budgets()->set_fraction_of_peak(0.5);
  heavy.add_policies(v1::POLICY_GENETIC_SEARCH);
  heavy.set_genetic_search_evaluations(40000);

  std::vector<grpc::StatusCode> codes(3, grpc::StatusCode::UNKNOWN);
  std::vector<std::thread> callers;
  callers.reserve(3);
  for (int i = 0; i < 3; ++i) {
    callers.emplace_back([&, i] {
      grpc::ClientContext context;
      v1::CompareResponse response;
      codes[i] = stub->Compare(&context, heavy, &response).error_code();
    });
  }
  // All three admitted: one planning, two waiting.
  for (int i = 0; i < 500 && server->inflight() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(server->inflight(), 3);
  {
    grpc::ClientContext context;
    v1::PlanResponse response;
    EXPECT_EQ(stub->Plan(&context, plan, &response).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  for (std::thread& t : callers) t.join();
  for (grpc::StatusCode code : codes) EXPECT_EQ(code, grpc::StatusCode::OK);
  EXPECT_EQ(server->inflight(), 0);
}

TEST(PlanningQueueTest, RejectsANegativeThreadCount) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.metrics_address = "";
  options.planning_threads = -1;
  auto server = PlanningServer::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(absl::StrContains(server.status().message(), "planning_threads"));
}

}  // namespace
}  // namespace slackswap
