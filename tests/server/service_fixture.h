// File: service_fixture.h
//
// What the PlannerService tests share: one real gRPC server for a suite
// (in-process channel) and the check that a refusal names its field.
#ifndef SLACKSWAP_TESTS_SERVER_SERVICE_FIXTURE_H_
#define SLACKSWAP_TESTS_SERVER_SERVICE_FIXTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/server.h"
#include "service/grpc_status.h"
#include "slackswap/v1/service.grpc.pb.h"
#include "tests/server/test_server.h"

namespace slackswap {
namespace testing {

// A refusal for bad input whose first violation names `field`.
inline void ExpectInvalidField(const grpc::Status& status,
                               const std::string& field) {
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << status.error_message();
  const std::vector<FieldViolation> violations = FieldViolationsOf(status);
  ASSERT_FALSE(violations.empty()) << status.error_message();
  EXPECT_EQ(violations[0].field, field);
}

class ServiceTest : public ::testing::Test {
 protected:
  // One server for the whole suite.
  static void SetUpTestSuite() { server_ = StartTestServer(2, 2).release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    stub_ = v1::PlannerService::NewStub(server_->InProcessChannel());
  }

  v1::GenerateTraceResponse Generated(int layers = 4) {
    return GenerateSmallTrace(*stub_, layers);
  }
  v1::PlanRequest PlanRequest(double fraction) {
    return SmallPlanRequest(*stub_, fraction);
  }

  static inline PlanningServer* server_ = nullptr;
  std::unique_ptr<v1::PlannerService::Stub> stub_;
};

}  // namespace testing
}  // namespace slackswap

#endif  // SLACKSWAP_TESTS_SERVER_SERVICE_FIXTURE_H_
