#include "service/grpc_status.h"

#include <string>

#include "base/field_violations.h"
#include "gtest/gtest.h"

namespace slackswap {
namespace {

TEST(GrpcStatusTest, FieldViolationsSurviveTheRoundTrip) {
  FieldViolations violations;
  violations.Add("trace.tensors[3].use_ops[0]", "out of range [0, 12)");
  violations.Add("budget.fraction_of_peak", "must be in (0, 1]");
  const absl::Status status = violations.ToStatus();
  const grpc::Status wire = ToGrpcStatus(status);
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const absl::Status back = FromGrpcStatus(wire);
  EXPECT_EQ(back.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(back.message(), status.message());
  const std::vector<FieldViolation> got = FieldViolationsOf(back);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].field, "trace.tensors[3].use_ops[0]");
  EXPECT_EQ(got[0].description, "out of range [0, 12)");
  EXPECT_EQ(got[1].field, "budget.fraction_of_peak");
  // What a client reads from the wire form is the same list.
  ASSERT_EQ(FieldViolationsOf(wire).size(), 2u);
  EXPECT_EQ(FieldViolationsOf(wire)[1].description, "must be in (0, 1]");
}

TEST(GrpcStatusTest, CodesAndMessagesWithoutViolations) {
  const absl::Status exhausted = TooLargeField("trace", "over 2^22 operators");
  const absl::Status back = FromGrpcStatus(ToGrpcStatus(exhausted));
  EXPECT_EQ(back.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(FieldViolationsOf(back).size(), 1u);
  for (const absl::Status& s :
       {absl::DeadlineExceededError("late"), absl::InternalError("bug"),
        absl::CancelledError("stop")}) {
    const absl::Status round = FromGrpcStatus(ToGrpcStatus(s));
    EXPECT_EQ(round.code(), s.code());
    EXPECT_EQ(round.message(), s.message());
    EXPECT_TRUE(FieldViolationsOf(round).empty());
  }
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(GrpcStatusTest, LongMessagesAreCutOnTheWire) {
  const std::string long_message(5000, 'x');
  const grpc::Status wire =
      ToGrpcStatus(absl::InvalidArgumentError(long_message));
  EXPECT_EQ(wire.error_message().size(), kMaxStatusMessageBytes + 3);
  EXPECT_EQ(wire.error_message().substr(kMaxStatusMessageBytes), "...");
}

TEST(GrpcStatusTest, CodeNames) {
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::OK), "OK");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::RESOURCE_EXHAUSTED),
               "RESOURCE_EXHAUSTED");
  EXPECT_STREQ(GrpcCodeName(grpc::StatusCode::UNAUTHENTICATED),
               "UNAUTHENTICATED");
  EXPECT_STREQ(GrpcCodeName(static_cast<grpc::StatusCode>(17)), "UNKNOWN");
  EXPECT_STREQ(GrpcCodeName(static_cast<grpc::StatusCode>(-1)), "UNKNOWN");
}

}  // namespace
}  // namespace slackswap
