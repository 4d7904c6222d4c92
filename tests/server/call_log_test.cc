// The per-call JSON line: every field, escaping of what clients send, levels
// by status, and fields left out when a call does not have them.
#include "server/call_log.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace slackswap {
namespace {

TEST(CallLogTest, WritesOneJsonLineWithEveryField) {
  CallRecord r;
  r.method = Method::kFrontier;
  r.code = grpc::StatusCode::OK;
  r.duration = absl::Microseconds(2104);
  r.queue_wait = absl::Microseconds(12);
  r.request_bytes = 67315;
  r.response_bytes = 2511;
  r.trace_operators = 968;
  r.trace_tensors = 483;
  r.request_id = "req-1";
  r.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  r.peer = "ipv4:127.0.0.1:5555";
  const absl::Time now = absl::FromUnixMicros(1796124502123456);
  EXPECT_EQ(CallLogLine(r, now),
            "{\"time\":\"2026-12-01T11:28:22.123456Z\",\"level\":\"info\","
            "\"msg\":\"call\",\"method\":\"Frontier\",\"code\":\"OK\","
            "\"duration_ms\":2.104,\"queue_wait_ms\":0.012,"
            "\"request_bytes\":67315,\"response_bytes\":2511,"
            "\"trace_operators\":968,\"trace_tensors\":483,"
            "\"request_id\":\"req-1\",\"traceparent\":\"00-"
            "0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\","
            "\"peer\":\"ipv4:127.0.0.1:5555\"}\n");
}

TEST(CallLogTest, FailedCallsCarryTheirErrorAndALevel) {
  CallRecord r;
  r.method = Method::kPlan;
  r.code = grpc::StatusCode::INTERNAL;
  r.error = "policy \"x\" broke\nits promise";
  const std::string line = CallLogLine(r, absl::UnixEpoch());
  EXPECT_TRUE(absl::StrContains(line, "\"level\":\"error\"")) << line;
  EXPECT_TRUE(absl::StrContains(
      line, "\"error\":\"policy \\\"x\\\" broke\\nits promise\""))
      << line;
  // One line, whatever the message held; no sizes the call did not have.
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_FALSE(absl::StrContains(line, "request_bytes")) << line;
  EXPECT_FALSE(absl::StrContains(line, "trace_operators")) << line;

  r.code = grpc::StatusCode::RESOURCE_EXHAUSTED;
  EXPECT_TRUE(absl::StrContains(CallLogLine(r, absl::UnixEpoch()),
                                "\"level\":\"warning\""));
  r.code = grpc::StatusCode::INVALID_ARGUMENT;
  EXPECT_TRUE(absl::StrContains(CallLogLine(r, absl::UnixEpoch()),
                                "\"level\":\"info\""));
  // Long errors are cut at 512 bytes.
  r.error = std::string(5000, 'e');
  EXPECT_LT(CallLogLine(r, absl::UnixEpoch()).size(), 900u);
}

}  // namespace
}  // namespace slackswap
