// PlannerService through a real gRPC server: every encoding of a trace gets
// the same answer, every policy plans, the exact optimum, the floor, Compare
// and Frontier, and deadlines.
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

struct PlanReply {
  grpc::Status status;
  v1::PlanResponse response;
};

// Plan through a generic stub with the request bytes as given.
PlanReply PlanFromBytes(grpc::GenericStub& stub, const std::string& bytes) {
  const RawReply raw = CallWithBytes(stub, "Plan", bytes);
  PlanReply result{raw.status, {}};
  if (raw.status.ok()) {
    EXPECT_TRUE(result.response.ParseFromString(raw.bytes));
  }
  return result;
}

// Field 99, which v1::Trace does not define.
void AddUnknownField(v1::Trace& trace) {
  trace.GetReflection()->MutableUnknownFields(&trace)->AddVarint(99, 1);
}

// Code, message and field violations.
std::string Describe(const grpc::Status& status) {
  std::string out = absl::StrCat(GrpcCodeName(status.error_code()), ": ",
                                 status.error_message());
  for (const FieldViolation& v : FieldViolationsOf(status))
    absl::StrAppend(&out, " | ", v.field, ": ", v.description);
  return out;
}

// The server decodes traces in the form protobuf serializers write straight
// from the bytes and leaves every other encoding to protobuf: the answers
// must not differ.
TEST_F(ServiceTest, EveryEncodingOfATraceGetsTheSameAnswer) {
  grpc::GenericStub stub(server_->InProcessChannel());
  v1::PlanRequest request = PlanRequest(0.5);
  const std::string canonical = request.SerializeAsString();

  // The trace in two parts, which protobuf merges: operators, then tensors.
  v1::PlanRequest operators_only = request;
  operators_only.mutable_trace()->clear_tensors();
  v1::PlanRequest tensors_only;
  *tensors_only.mutable_trace()->mutable_tensors() = request.trace().tensors();
  const std::string split =
      operators_only.SerializeAsString() + tensors_only.SerializeAsString();
  // The trace with a field this server does not know (a newer client's).
  v1::PlanRequest newer = request;
  AddUnknownField(*newer.mutable_trace());
  const std::string unknown_field = newer.SerializeAsString();

  const PlanReply expected = PlanFromBytes(stub, canonical);
  ASSERT_TRUE(expected.status.ok()) << Describe(expected.status);
  for (const std::string& bytes : {split, unknown_field}) {
    const PlanReply got = PlanFromBytes(stub, bytes);
    ASSERT_TRUE(got.status.ok()) << Describe(got.status);
    EXPECT_EQ(got.response.report().SerializeAsString(),
              expected.response.report().SerializeAsString());
  }

  // The same for a trace that breaks a rule: the same field violation.
  v1::PlanRequest broken = request;
  broken.mutable_trace()->mutable_tensors(1)->set_producer_op(-1);
  v1::PlanRequest broken_newer = broken;
  AddUnknownField(*broken_newer.mutable_trace());
  const std::string direct =
      Describe(PlanFromBytes(stub, broken.SerializeAsString()).status);
  const std::string parsed =
      Describe(PlanFromBytes(stub, broken_newer.SerializeAsString()).status);
  EXPECT_EQ(direct, parsed);
  EXPECT_TRUE(absl::StartsWith(direct, "INVALID_ARGUMENT")) << direct;
  EXPECT_TRUE(absl::StrContains(direct, "trace.tensors[1].producer_op"))
      << direct;
}

// A trace with no tensors is valid (nothing to plan). The genetic searches
// of SwapAdvisor and the genetic search policy divided by the tensor count:
// SIGFPE killed the server.
TEST_F(ServiceTest, EveryPolicyPlansATraceWithoutTensors) {
  v1::PlanRequest request = PlanRequest(0.5);
  request.mutable_trace()->clear_tensors();
  request.mutable_budget()->set_fraction_of_peak(1.0);
  v1::CompareRequest compare;
  *compare.mutable_trace() = request.trace();
  *compare.mutable_hardware() = request.hardware();
  *compare.add_budgets() = request.budget();
  compare.set_genetic_search_evaluations(200);
  for (int p = v1::POLICY_IDEAL; p <= v1::POLICY_OPTIMUM; ++p) {
    SCOPED_TRACE(v1::Policy_Name(static_cast<v1::Policy>(p)));
    request.set_policy(static_cast<v1::Policy>(p));
    compare.add_policies(static_cast<v1::Policy>(p));
    v1::PlanResponse response;
    grpc::ClientContext context;
    const grpc::Status status = stub_->Plan(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.report().outcome(), v1::PLAN_OUTCOME_PLANNED);
    EXPECT_EQ(response.report().metrics().iteration_ns(),
              response.report().metrics().ideal_ns());
  }
  v1::CompareResponse compared;
  grpc::ClientContext context;
  const grpc::Status status = stub_->Compare(&context, compare, &compared);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(compared.comparison().entries_size(), 11);
}

// Ideal is the unlimited-memory reference. Asked for a plan within a budget,
// it answers PLANNED only when its all-keep plan fits; otherwise NO PLAN
// FOUND (other plans fit there: nothing is proven), and INFEASIBLE only
// below the proven floor.
TEST_F(ServiceTest, IdealPlansOnlyWithinTheBudget) {
  v1::PlanRequest request = PlanRequest(0.5);
  request.set_policy(v1::POLICY_IDEAL);
  v1::PlanResponse half;
  grpc::ClientContext c1;
  ASSERT_TRUE(stub_->Plan(&c1, request, &half).ok());
  EXPECT_EQ(half.report().outcome(), v1::PLAN_OUTCOME_NO_PLAN_FOUND);
  EXPECT_GE(half.report().metrics().budget_bytes(),
            half.report().proven_floor_bytes());
  EXPECT_TRUE(absl::StrContains(half.report().reason(), "all-keep peak"))
      << half.report().reason();

  request.mutable_budget()->set_fraction_of_peak(1.0);
  v1::PlanResponse whole;
  grpc::ClientContext c2;
  ASSERT_TRUE(stub_->Plan(&c2, request, &whole).ok());
  EXPECT_EQ(whole.report().outcome(), v1::PLAN_OUTCOME_PLANNED);
  EXPECT_LE(whole.report().metrics().peak_resident_bytes(),
            whole.report().metrics().budget_bytes());
  EXPECT_EQ(whole.report().metrics().iteration_ns(),
            whole.report().metrics().ideal_ns());
}

// The exact optimum through the service: at most 16 tensors.
TEST_F(ServiceTest, PlansTheExactOptimumOfASmallTrace) {
  const SmallTrace small = RandomSmallTrace(9);
  v1::PlanRequest request;
  *request.mutable_trace() = TraceSpecToProto(small.trace);
  *request.mutable_hardware() = HardwareToProto(small.hardware);
  request.mutable_budget()->set_fraction_of_peak(1.0);
  request.set_policy(v1::POLICY_OPTIMUM);
  v1::PlanResponse optimum, slackswap;
  grpc::ClientContext c1, c2;
  ASSERT_TRUE(stub_->Plan(&c1, request, &optimum).ok());
  EXPECT_EQ(optimum.report().outcome(), v1::PLAN_OUTCOME_PLANNED);
  request.set_policy(v1::POLICY_SLACKSWAP);
  ASSERT_TRUE(stub_->Plan(&c2, request, &slackswap).ok());
  EXPECT_LE(optimum.report().metrics().iteration_ns(),
            slackswap.report().metrics().iteration_ns());

  v1::PlanRequest large = PlanRequest(0.5);
  large.set_policy(v1::POLICY_OPTIMUM);
  v1::PlanResponse refused;
  grpc::ClientContext c3;
  const grpc::Status status = stub_->Plan(&c3, large, &refused);
  ExpectInvalidField(status, "trace.tensors");
}

// An infeasible answer names the proven floor and the smallest budget at
// which SlackSwap plans; the frontier starts there.
TEST_F(ServiceTest, InfeasibleAnswersAndTheFrontierStartAtTheFloor) {
  v1::PlanRequest request = PlanRequest(0.5);
  request.mutable_budget()->set_bytes(1000);
  v1::PlanResponse below;
  grpc::ClientContext c1;
  ASSERT_TRUE(stub_->Plan(&c1, request, &below).ok());
  const v1::PlanningReport& r = below.report();
  ASSERT_EQ(r.outcome(), v1::PLAN_OUTCOME_INFEASIBLE);
  EXPECT_GT(r.proven_floor_bytes(), 1000);
  EXPECT_GE(r.smallest_planned_budget_bytes(), r.proven_floor_bytes());
  EXPECT_TRUE(absl::StrContains(r.reason(), "no plan fits below"))
      << r.reason();
  // At the smallest budget it names, SlackSwap plans.
  request.mutable_budget()->set_bytes(r.smallest_planned_budget_bytes());
  v1::PlanResponse at;
  grpc::ClientContext c2;
  ASSERT_TRUE(stub_->Plan(&c2, request, &at).ok());
  EXPECT_EQ(at.report().outcome(), v1::PLAN_OUTCOME_PLANNED);
  EXPECT_EQ(at.report().proven_floor_bytes(), r.proven_floor_bytes());

  v1::FrontierRequest frontier;
  *frontier.mutable_trace() = request.trace();
  *frontier.mutable_hardware() = request.hardware();
  v1::FrontierResponse curve;
  grpc::ClientContext c3;
  ASSERT_TRUE(stub_->Frontier(&c3, frontier, &curve).ok());
  EXPECT_EQ(curve.proven_floor_bytes(), r.proven_floor_bytes());
  ASSERT_GT(curve.points_size(), 0);
  EXPECT_EQ(curve.points(0).outcome(), v1::PLAN_OUTCOME_PLANNED);
  EXPECT_LT(curve.points(0).budget_bytes(),
            curve.all_keep_peak_bytes() / 10 + curve.proven_floor_bytes());
  for (const v1::FrontierPoint& p : curve.points()) {
    EXPECT_GE(p.budget_bytes(), curve.proven_floor_bytes());
  }
}

TEST_F(ServiceTest, CompareAndFrontier) {
  const v1::PlanRequest base = PlanRequest(0.5);
  v1::CompareRequest compare;
  *compare.mutable_trace() = base.trace();
  *compare.mutable_hardware() = base.hardware();
  compare.add_budgets()->set_fraction_of_peak(0.6);
  compare.add_budgets()->set_fraction_of_peak(0.8);
  compare.add_budgets()->set_unlimited(true);
  compare.add_policies(v1::POLICY_SLACKSWAP);
  compare.add_policies(v1::POLICY_CHECKPOINTING);
  v1::CompareResponse compared;
  grpc::ClientContext cc;
  ASSERT_TRUE(stub_->Compare(&cc, compare, &compared).ok());
  ASSERT_EQ(compared.comparison().entries_size(), 6);
  EXPECT_EQ(compared.comparison().entries(1).policy(),
            v1::POLICY_CHECKPOINTING);
  // A limited budget is a fraction of the peak; an unlimited one says so
  // instead of a fraction near 10^8.
  const v1::ComparisonEntry& limited = compared.comparison().entries(2);
  EXPECT_FALSE(limited.budget_unlimited());
  EXPECT_NEAR(limited.budget_fraction_of_peak(), 0.8, 1e-6);
  const v1::ComparisonEntry& unlimited = compared.comparison().entries(4);
  EXPECT_TRUE(unlimited.budget_unlimited());
  EXPECT_EQ(unlimited.budget_fraction_of_peak(), 0);
  EXPECT_EQ(unlimited.budget_bytes(), std::numeric_limits<int64_t>::max());

  v1::FrontierRequest frontier;
  *frontier.mutable_trace() = base.trace();
  *frontier.mutable_hardware() = base.hardware();
  frontier.set_target_throughput_ratio(0.97);
  v1::FrontierResponse curve;
  grpc::ClientContext cf;
  ASSERT_TRUE(stub_->Frontier(&cf, frontier, &curve).ok());
  // The default fractions 10%, 15%, ..., 100% from the proven floor on, and
  // first the smallest budget SlackSwap meets.
  int expected = 1;
  for (int i = 2; i <= 20; ++i) {
    const int64_t b = static_cast<int64_t>(std::floor(
        0.05 * i * static_cast<double>(curve.all_keep_peak_bytes())));
    if (b >= curve.proven_floor_bytes() &&
        b != curve.points(0).budget_bytes()) {
      ++expected;
    }
  }
  EXPECT_EQ(curve.points_size(), expected);
  for (int i = 1; i < curve.points_size(); ++i) {
    EXPECT_LT(curve.points(i - 1).budget_bytes(),
              curve.points(i).budget_bytes());
  }
  ASSERT_TRUE(curve.target_reached());
  const v1::FrontierPoint& smallest = curve.smallest_budget();
  EXPECT_GE(smallest.throughput_ratio(), 0.97);
  // Nothing on the curve below the smallest budget reaches the target.
  for (const v1::FrontierPoint& p : curve.points()) {
    if (p.budget_bytes() < smallest.budget_bytes()) {
      EXPECT_TRUE(p.outcome() != v1::PLAN_OUTCOME_PLANNED ||
                  p.throughput_ratio() < 0.97);
    }
  }
}

TEST_F(ServiceTest, DeadlinesStopLongWork) {
  const v1::PlanRequest base = PlanRequest(0.5);
  v1::CompareRequest compare;
  *compare.mutable_trace() = base.trace();
  *compare.mutable_hardware() = base.hardware();
  // Twenty genetic searches of 100,000 plans: tens of seconds of work.
  for (int i = 0; i < 20; ++i)
    compare.add_budgets()->set_fraction_of_peak(0.3 + 0.03 * i);
  compare.add_policies(v1::POLICY_GENETIC_SEARCH);
  compare.set_genetic_search_evaluations(100000);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(200));
  v1::CompareResponse response;
  const grpc::Status status = stub_->Compare(&context, compare, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server stops the abandoned work between generations: the call leaves
  // the server long before the searches could have finished.
  for (int i = 0; i < 100 && server_->inflight() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(server_->inflight(), 0);
}

// A client that sets no deadline still gets one: the server's own bound.

}  // namespace
}  // namespace slackswap
