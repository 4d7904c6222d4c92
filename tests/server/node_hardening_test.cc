// The surfaces added with node physics, held like the first RPCs: PlanNode
// at the limits its fields accept, refusals that name the field (a job's
// trace, the time range's cause), and requests whose counts are refused from
// their bytes before protobuf builds them.
#include <condition_variable>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "service/grpc_status.h"
#include "slackswap/v1/service.grpc.pb.h"
#include "tests/server/test_server.h"

namespace slackswap {
namespace {

// Field `field` of wire type 2 holding `payload`: its tag (one byte here),
// its length as a varint, and the bytes.
std::string LengthDelimited(int field, const std::string& payload) {
  std::string out(1, static_cast<char>(field << 3 | 2));
  for (uint64_t n = payload.size();; n >>= 7) {
    out += static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
    if (n < 0x80) break;
  }
  return out + payload;
}

std::string FirstField(const grpc::Status& status) {
  const std::vector<FieldViolation> v = FieldViolationsOf(status);
  return v.empty() ? std::string() : v[0].field;
}

class NodeHardeningTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.metrics_address = "";
    options.call_log = false;
    options.max_concurrent_calls = 2;
    options.planning_threads = 2;
    options.max_message_bytes = 64 << 20;
    options.call_limits.max_memory_bytes = 8 << 20;
    auto server = PlanningServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    stub_ = v1::PlannerService::NewStub(server_->InProcessChannel());
  }

  // Two one-GPU jobs of a small generated trace on an uplink as fast as
  // one link.
  v1::PlanNodeRequest NodeRequest() {
    const v1::PlanRequest small = SmallPlanRequest(*stub_, 0.5);
    v1::PlanNodeRequest request;
    *request.mutable_hardware() = small.hardware();
    for (int i = 0; i < 2; ++i) {
      v1::NodeJob* job = request.add_jobs();
      *job->mutable_trace() = small.trace();
      job->mutable_budget()->set_fraction_of_peak(0.6);
    }
    return request;
  }

  grpc::Status PlanNode(const v1::PlanNodeRequest& request,
                        v1::PlanNodeResponse* response = nullptr) {
    v1::PlanNodeResponse ignored;
    grpc::ClientContext context;
    return stub_->PlanNode(&context, request,
                           response != nullptr ? response : &ignored);
  }

  static PlanningServer* server_;
  std::unique_ptr<v1::PlannerService::Stub> stub_;
};

PlanningServer* NodeHardeningTest::server_ = nullptr;

// Item 1: an uplink of 2^63 - 512 bytes/s or more made the share a double of
// 2^63, cast to int64 (undefined; in release a negative rate, refused as
// "too small"). Plan accepts the same hardware; PlanNode plans it too.
TEST_F(NodeHardeningTest, AnUplinkNearInt64MaxIsPlannedAsUncappedIsNot) {
  for (int64_t uplink : {std::numeric_limits<int64_t>::max() - 511,
                         std::numeric_limits<int64_t>::max()}) {
    v1::PlanNodeRequest request = NodeRequest();
    request.mutable_hardware()->set_uplink_d2h_bytes_per_second(uplink);
    request.mutable_hardware()->set_uplink_h2d_bytes_per_second(uplink);
    v1::PlanNodeResponse response;
    const grpc::Status status = PlanNode(request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.jobs_size(), 2);
    for (const v1::NodeJobReport& job : response.jobs()) {
      EXPECT_EQ(job.outcome(), v1::PLAN_OUTCOME_PLANNED) << job.reason();
      // An uplink far faster than the links slows no one.
      EXPECT_EQ(job.shared_step_ns(), job.alone_step_ns());
    }
  }
}

// Item 8: two ops of 2^59 ns over 5 steps pass 2^62 ns whatever the links
// do; the refusal named the (uncapped) uplink.
TEST_F(NodeHardeningTest, ATimeRangeOverflowNamesTheJobsOperators) {
  v1::PlanNodeRequest request = NodeRequest();
  request.set_steps(5);
  v1::Trace& trace = *request.mutable_jobs(1)->mutable_trace();
  trace.clear_tensors();
  trace.mutable_operators()->DeleteSubrange(1, trace.operators_size() - 2);
  ASSERT_EQ(trace.operators_size(), 2);
  for (v1::Operator& op : *trace.mutable_operators()) {
    op.set_duration_ns(int64_t{1} << 59);
    op.set_block_index(0);
  }
  v1::Tensor* t = trace.add_tensors();
  t->set_size_bytes(1 << 20);
  t->set_producer_op(0);
  t->add_use_ops(1);
  const grpc::Status status = PlanNode(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(FirstField(status), "jobs[1].trace.operators")
      << status.error_message();
  EXPECT_TRUE(absl::StrContains(status.error_message(), "over 6 steps"))
      << status.error_message();
}

// Item 9: a job's trace over the memory limit is named as the job's, and
// the jobs together count (each fits alone).
TEST_F(NodeHardeningTest, TheMemoryLimitNamesTheJobAndCountsTheJobsTogether) {
  v1::GenerateTraceRequest generate;
  generate.set_workload_preset("llama-7b");
  generate.set_hardware_preset("a100");
  generate.set_layers(32);
  v1::GenerateTraceResponse generated;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->GenerateTrace(&context, generate, &generated).ok());
  }
  v1::PlanNodeRequest request;
  *request.mutable_hardware() = generated.hardware();
  // Copies of the trace until they pass the 8 MiB limit together.
  v1::Trace big = generated.trace();
  while (big.operators_size() < 8000) {
    for (const v1::Operator& op : generated.trace().operators())
      *big.add_operators() = op;
  }
  for (int i = 0; i < 8; ++i) {
    v1::NodeJob* job = request.add_jobs();
    *job->mutable_trace() = i == 0 ? generated.trace() : big;
    job->mutable_budget()->set_fraction_of_peak(0.6);
  }
  const grpc::Status status = PlanNode(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
  const std::string field = FirstField(status);
  EXPECT_TRUE(absl::StartsWith(field, "jobs[") &&
              absl::EndsWith(field, "].trace"))
      << field << ": " << status.error_message();
  EXPECT_NE(field, "jobs[0].trace");  // the first fits alone
  EXPECT_TRUE(absl::StrContains(status.error_message(), "before it"))
      << status.error_message();
}

// Item 5: counts refused from the bytes, before protobuf builds a message
// per element, with the field the validation of the message names.
TEST_F(NodeHardeningTest, CountsAreRefusedFromTheBytesNamingTheField) {
  grpc::GenericStub stub(server_->InProcessChannel());
  // A million empty jobs (field 2, length 0): two bytes each.
  std::string jobs;
  for (int i = 0; i < 1'000'000; ++i) jobs += std::string("\x12\x00", 2);
  RawReply reply = CallWithBytes(stub, "PlanNode", jobs);
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(FirstField(reply.status), "jobs");
  EXPECT_TRUE(absl::StrContains(reply.status.error_message(), "has 1000000"))
      << reply.status.error_message();
  // Compare: empty budgets (field 3), then packed policies (field 4).
  std::string budgets;
  for (int i = 0; i < 1'000'000; ++i) budgets += std::string("\x1a\x00", 2);
  reply = CallWithBytes(stub, "Compare", budgets);
  EXPECT_EQ(FirstField(reply.status), "budgets")
      << reply.status.error_message();
  reply = CallWithBytes(stub, "Compare",
                        LengthDelimited(4, std::string(17, '\x01')));
  EXPECT_EQ(FirstField(reply.status), "policies")
      << reply.status.error_message();
  // Frontier: 65 fractions, packed doubles (field 3).
  reply = CallWithBytes(stub, "Frontier",
                        LengthDelimited(3, std::string(65 * 8, '\0')));
  EXPECT_EQ(FirstField(reply.status), "budget_fractions")
      << reply.status.error_message();
  // A job with a trace of 5 million empty operators (field 2 of the job,
  // then field 2 of the trace): over the trace limit, named from the bytes.
  std::string ops;
  for (int i = 0; i < 5'000'000; ++i) ops += std::string("\x12\x00", 2);
  // A request of one job (field 2) whose trace (field 2) holds `ops`.
  auto one_job = [](const std::string& trace_ops) {
    return LengthDelimited(2, LengthDelimited(2, trace_ops));
  };
  std::string job = one_job(ops);
  reply = CallWithBytes(stub, "PlanNode", job);
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << reply.status.error_message();
  EXPECT_EQ(FirstField(reply.status), "jobs[0].trace.operators")
      << reply.status.error_message();
  // Below the trace limit but over the memory limit: the job's trace.
  ops.resize(2 * 100'000);
  job = one_job(ops);
  reply = CallWithBytes(stub, "PlanNode", job);
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << reply.status.error_message();
  EXPECT_EQ(FirstField(reply.status), "jobs[0].trace")
      << reply.status.error_message();
}

// Fixed transfers are counted from the bytes too: over their limit, and
// toward the memory estimate.
TEST_F(NodeHardeningTest, FixedTransfersAreCountedFromTheBytes) {
  grpc::GenericStub stub(server_->InProcessChannel());
  // A trace (field 1 of a Plan, field 2 of a node's job) of 5 million empty
  // fixed transfers (field 4 of the trace).
  std::string fixed;
  for (int i = 0; i < 5'000'000; ++i) fixed += std::string("\x22\x00", 2);
  RawReply reply = CallWithBytes(stub, "Plan", LengthDelimited(1, fixed));
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << reply.status.error_message();
  EXPECT_EQ(FirstField(reply.status), "trace.fixed_transfers")
      << reply.status.error_message();
  reply = CallWithBytes(stub, "PlanNode",
                        LengthDelimited(2, LengthDelimited(2, fixed)));
  EXPECT_EQ(FirstField(reply.status), "jobs[0].trace.fixed_transfers")
      << reply.status.error_message();
  // Below the count limit, over the 8 MiB memory limit: the trace.
  fixed.resize(2 * 100'000);
  reply = CallWithBytes(stub, "Plan", LengthDelimited(1, fixed));
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << reply.status.error_message();
  EXPECT_EQ(FirstField(reply.status), "trace") << reply.status.error_message();
  // Within both: validation answers (a trace needs an operator).
  fixed.resize(2 * 1'000);
  reply = CallWithBytes(stub, "Plan", LengthDelimited(1, fixed));
  EXPECT_EQ(reply.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << reply.status.error_message();
}

// PlanNode's jobs' traces are decoded from the bytes: the answer is the one
// a request in any other encoding gets (here: each job's fields reversed).
TEST_F(NodeHardeningTest, JobTracesDecodedFromTheBytesGiveTheSameAnswer) {
  v1::PlanNodeRequest request = NodeRequest();
  grpc::GenericStub stub(server_->InProcessChannel());
  const RawReply canonical =
      CallWithBytes(stub, "PlanNode", request.SerializeAsString());
  ASSERT_TRUE(canonical.status.ok()) << canonical.status.error_message();
  // The same request with an unknown field in each trace: the wire decoder
  // declines it and protobuf parses the whole request.
  for (v1::NodeJob& job : *request.mutable_jobs()) {
    job.mutable_trace()
        ->GetReflection()
        ->MutableUnknownFields(job.mutable_trace())
        ->AddVarint(99, 1);
  }
  v1::PlanNodeResponse a, b;
  grpc::ClientContext c1, c2;
  ASSERT_TRUE(stub_->PlanNode(&c1, NodeRequest(), &a).ok());
  ASSERT_TRUE(stub_->PlanNode(&c2, request, &b).ok());
  a.clear_planning_time_ns();
  b.clear_planning_time_ns();
  EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
}

}  // namespace
}  // namespace slackswap
