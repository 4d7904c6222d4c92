// Every RPC of PlannerService through a real gRPC server (in-process
// channel), including each error class and its field path.
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
#include "tests/server/test_server.h"

namespace slackswap {
namespace {

// A refusal for bad input whose first violation names `field`.
void ExpectInvalidField(const grpc::Status& status, const std::string& field) {
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

  static PlanningServer* server_;
  std::unique_ptr<v1::PlannerService::Stub> stub_;
};

PlanningServer* ServiceTest::server_ = nullptr;

TEST_F(ServiceTest, GenerateTraceReturnsATraceAndItsSummary) {
  const v1::GenerateTraceResponse g = Generated(3);
  EXPECT_GT(g.trace().operators_size(), 50);
  EXPECT_EQ(g.hardware().name(), "a100");
  EXPECT_GT(g.summary().hideable_fraction(), 0);
  EXPECT_TRUE(TraceFromProto(g.trace()).ok());
}

TEST_F(ServiceTest, PlanIsUnderBudgetDeterministicAndReplays) {
  const v1::PlanRequest request = PlanRequest(0.6);
  v1::PlanResponse a, b;
  grpc::ClientContext ca, cb;
  ASSERT_TRUE(stub_->Plan(&ca, request, &a).ok());
  ASSERT_TRUE(stub_->Plan(&cb, request, &b).ok());
  EXPECT_EQ(a.report().outcome(), v1::PLAN_OUTCOME_PLANNED);
  EXPECT_LE(a.report().metrics().peak_resident_bytes(),
            a.report().metrics().budget_bytes());
  EXPECT_EQ(a.report().SerializeAsString(), b.report().SerializeAsString());
  EXPECT_GT(a.planning_time_ns(), 0);

  v1::SimulateRequest simulate;
  *simulate.mutable_trace() = request.trace();
  *simulate.mutable_hardware() = request.hardware();
  *simulate.mutable_budget() = request.budget();
  *simulate.mutable_plan() = a.report().plan();
  simulate.set_include_timeline(true);
  v1::SimulateResponse replay;
  grpc::ClientContext cs;
  ASSERT_TRUE(stub_->Simulate(&cs, simulate, &replay).ok());
  EXPECT_EQ(replay.metrics().SerializeAsString(),
            a.report().metrics().SerializeAsString());
  EXPECT_GT(replay.timeline().events_size(), request.trace().operators_size());
}

// Every completed plan in a Plan or Compare answer carries its replays at
// the four speed scalings: all complete within the budget, and the worst
// figures are those of the five replays.
void ExpectScaledReplays(const v1::Metrics& m, int ops,
                         const std::string& what) {
  if (m.outcome() != v1::SIMULATION_OUTCOME_COMPLETED) {
    EXPECT_EQ(m.scaled_size(), 0) << what;
    return;
  }
  ASSERT_EQ(m.scaled_size(), 4) << what;
  const double kernels[] = {1, 1, 0.8, 1.2};
  const double links[] = {0.5, 2, 1, 1};
  int64_t worst_iteration = m.iteration_ns();
  double worst_ratio = m.throughput_ratio();
  for (int i = 0; i < 4; ++i) {
    const v1::ScaledReplay& s = m.scaled(i);
    EXPECT_EQ(s.kernel_time_factor(), kernels[i]) << what;
    EXPECT_EQ(s.link_speed_factor(), links[i]) << what;
    EXPECT_EQ(s.outcome(), v1::SIMULATION_OUTCOME_COMPLETED)
        << what << " " << i;
    EXPECT_LE(s.peak_resident_bytes(), m.budget_bytes()) << what;
    // Each op's duration rounded to the nearest ns.
    EXPECT_NEAR(static_cast<double>(s.ideal_ns()),
                static_cast<double>(m.ideal_ns()) * kernels[i], 0.5 * ops)
        << what;
    EXPECT_DOUBLE_EQ(s.throughput_ratio(),
                     static_cast<double>(s.ideal_ns()) / s.iteration_ns());
    worst_iteration = std::max(worst_iteration, s.iteration_ns());
    worst_ratio = std::min(worst_ratio, s.throughput_ratio());
  }
  EXPECT_EQ(m.worst_scaled_iteration_ns(), worst_iteration) << what;
  EXPECT_EQ(m.worst_scaled_throughput_ratio(), worst_ratio) << what;
  // Kernels 20% slower take longer than the profiled plan.
  EXPECT_GT(m.worst_scaled_iteration_ns(), m.iteration_ns()) << what;
}

TEST_F(ServiceTest, PlansCarryTheirReplaysAtOtherSpeeds) {
  for (double fraction : {0.4, 0.6, 0.9}) {
    const v1::PlanRequest request = PlanRequest(fraction);
    v1::PlanResponse a;
    grpc::ClientContext ca;
    ASSERT_TRUE(stub_->Plan(&ca, request, &a).ok());
    ExpectScaledReplays(a.report().metrics(), request.trace().operators_size(),
                        absl::StrCat("plan ", fraction));
  }
  const v1::PlanRequest base = PlanRequest(0.5);
  v1::CompareRequest compare;
  *compare.mutable_trace() = base.trace();
  *compare.mutable_hardware() = base.hardware();
  compare.add_budgets()->set_fraction_of_peak(0.3);
  compare.add_budgets()->set_fraction_of_peak(0.6);
  for (v1::Policy p :
       {v1::POLICY_SLACKSWAP, v1::POLICY_VDNN, v1::POLICY_SUPERNEURONS,
        v1::POLICY_SWAPADVISOR, v1::POLICY_CHECKPOINTING}) {
    compare.add_policies(p);
  }
  v1::CompareResponse compared;
  grpc::ClientContext cc;
  ASSERT_TRUE(stub_->Compare(&cc, compare, &compared).ok());
  int completed = 0;
  for (const v1::ComparisonEntry& e : compared.comparison().entries()) {
    ExpectScaledReplays(e.report().metrics(), base.trace().operators_size(),
                        absl::StrCat("compare ", v1::Policy_Name(e.policy())));
    completed += e.report().metrics().scaled_size() > 0;
  }
  EXPECT_GE(completed, 6);
}

TEST_F(ServiceTest, InfeasibleBudgetIsAnOkResponseThatSaysWhy) {
  v1::PlanRequest request = PlanRequest(0.5);
  request.mutable_budget()->set_bytes(1000);
  v1::PlanResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->Plan(&context, request, &response).ok());
  // Proven: the budget is below the floor.
  EXPECT_EQ(response.report().outcome(), v1::PLAN_OUTCOME_INFEASIBLE);
  EXPECT_LT(1000, response.report().proven_floor_bytes());
  EXPECT_TRUE(absl::StrContains(response.report().reason(), "bytes"))
      << response.report().reason();
}

TEST_F(ServiceTest, InvalidInputIsInvalidArgumentWithFieldViolations) {
  v1::PlanRequest request = PlanRequest(0.5);
  request.mutable_trace()->mutable_tensors(3)->set_use_ops(0, -7);
  request.mutable_hardware()->set_d2h_bytes_per_second(0);
  v1::PlanResponse response;
  grpc::ClientContext context;
  const grpc::Status status = stub_->Plan(&context, request, &response);
  ExpectInvalidField(status, "trace.tensors[3].use_ops[0]");

  // Each request kind names its own fields.
  v1::CompareRequest compare;
  *compare.mutable_trace() = PlanRequest(0.5).trace();
  *compare.mutable_hardware() = PlanRequest(0.5).hardware();
  compare.add_budgets()->set_fraction_of_peak(0.5);
  compare.add_budgets()->set_bytes(-4);
  compare.add_policies(v1::POLICY_SLACKSWAP);
  v1::CompareResponse compared;
  grpc::ClientContext cc;
  const grpc::Status bad_budget = stub_->Compare(&cc, compare, &compared);
  ExpectInvalidField(bad_budget, "budgets[1].bytes");

  v1::GenerateTraceRequest generate;
  generate.set_workload_preset("gpt-9");
  generate.set_hardware_preset("a100");
  v1::GenerateTraceResponse generated;
  grpc::ClientContext cg;
  const grpc::Status bad_preset =
      stub_->GenerateTrace(&cg, generate, &generated);
  ExpectInvalidField(bad_preset, "workload_preset");
  // The hardware preset is required too.
  generate.set_workload_preset("gpt2-xl");
  generate.clear_hardware_preset();
  grpc::ClientContext cg2;
  const grpc::Status no_hardware =
      stub_->GenerateTrace(&cg2, generate, &generated);
  ExpectInvalidField(no_hardware, "hardware_preset");

  v1::SimulateRequest simulate;
  *simulate.mutable_trace() = PlanRequest(0.5).trace();
  *simulate.mutable_hardware() = PlanRequest(0.5).hardware();
  simulate.mutable_budget()->set_unlimited(true);
  v1::SimulateResponse simulated;
  grpc::ClientContext cs;
  const grpc::Status bad_plan = stub_->Simulate(&cs, simulate, &simulated);
  ExpectInvalidField(bad_plan, "plan.tensors");
}

TEST_F(ServiceTest, AllocatorPhysicsReportsAndBudgetsReservedBytes) {
  for (v1::AllocatorModel allocator :
       {v1::ALLOCATOR_MODEL_CACHING, v1::ALLOCATOR_MODEL_EXPANDABLE}) {
    v1::PlanRequest request = PlanRequest(0.5);
    request.mutable_physics()->set_allocator(allocator);
    v1::PlanResponse observed;
    grpc::ClientContext co;
    ASSERT_TRUE(stub_->Plan(&co, request, &observed).ok());
    const v1::Metrics& m = observed.report().metrics();
    EXPECT_GE(m.peak_reserved_bytes(), m.peak_resident_bytes());
    EXPECT_EQ(observed.report().planned_budget_bytes(), m.budget_bytes());

    request.mutable_physics()->set_budget_reserved(true);
    v1::PlanResponse budgeted;
    grpc::ClientContext cb;
    ASSERT_TRUE(stub_->Plan(&cb, request, &budgeted).ok());
    const v1::PlanningReport& report = budgeted.report();
    ASSERT_EQ(report.outcome(), v1::PLAN_OUTCOME_PLANNED) << report.reason();
    EXPECT_LE(report.metrics().peak_reserved_bytes(),
              report.metrics().budget_bytes());
    EXPECT_LE(report.planned_budget_bytes(), report.metrics().budget_bytes());
    // Simulate with the same budget and physics reproduces the answer.
    v1::SimulateRequest simulate;
    *simulate.mutable_trace() = request.trace();
    *simulate.mutable_hardware() = request.hardware();
    *simulate.mutable_budget() = request.budget();
    *simulate.mutable_physics() = request.physics();
    *simulate.mutable_plan() = report.plan();
    v1::SimulateResponse replay;
    grpc::ClientContext cs;
    ASSERT_TRUE(stub_->Simulate(&cs, simulate, &replay).ok());
    EXPECT_EQ(replay.metrics().SerializeAsString(),
              report.metrics().SerializeAsString());
  }
  // Without physics the reserved fields stay unset: old answers unchanged.
  v1::PlanResponse plain;
  grpc::ClientContext cp;
  ASSERT_TRUE(stub_->Plan(&cp, PlanRequest(0.5), &plain).ok());
  EXPECT_EQ(plain.report().metrics().peak_reserved_bytes(), 0);
  EXPECT_EQ(plain.report().planned_budget_bytes(), 0);
}

TEST_F(ServiceTest, PlansUnderNodePhysicsAreDeterministicAndReplay) {
  v1::PlanRequest request = PlanRequest(0.4);
  v1::Hardware& hw = *request.mutable_hardware();
  hw.set_gpus_per_uplink(4);
  hw.set_uplink_d2h_bytes_per_second(hw.d2h_bytes_per_second());
  hw.set_uplink_h2d_bytes_per_second(hw.h2d_bytes_per_second());
  request.mutable_physics()->set_hbm_contention(true);
  request.mutable_physics()->set_rank_skew_ns(2'000'000);
  request.mutable_physics()->set_allocator(v1::ALLOCATOR_MODEL_EXPANDABLE);
  v1::PlanResponse a, b;
  grpc::ClientContext ca, cb;
  ASSERT_TRUE(stub_->Plan(&ca, request, &a).ok());
  ASSERT_TRUE(stub_->Plan(&cb, request, &b).ok());
  // Every rank that asks gets the same plan, byte for byte.
  EXPECT_EQ(a.report().SerializeAsString(), b.report().SerializeAsString());
  ASSERT_EQ(a.report().outcome(), v1::PLAN_OUTCOME_PLANNED)
      << a.report().reason();
  EXPECT_GT(a.report().metrics().uplink_wait_ns(), 0);
  v1::SimulateRequest simulate;
  *simulate.mutable_trace() = request.trace();
  *simulate.mutable_hardware() = request.hardware();
  *simulate.mutable_budget() = request.budget();
  *simulate.mutable_physics() = request.physics();
  *simulate.mutable_plan() = a.report().plan();
  v1::SimulateResponse replay;
  grpc::ClientContext cs;
  ASSERT_TRUE(stub_->Simulate(&cs, simulate, &replay).ok());
  EXPECT_EQ(replay.metrics().SerializeAsString(),
            a.report().metrics().SerializeAsString());
  // Contention the hardware cannot carry is named.
  request.mutable_hardware()->set_hbm_bytes_per_second(1);
  v1::PlanResponse refused;
  grpc::ClientContext cr;
  const grpc::Status status = stub_->Plan(&cr, request, &refused);
  ExpectInvalidField(status, "hardware.hbm_bytes_per_second");
}

TEST_F(ServiceTest, BadPhysicsIsNamedByField) {
  v1::PlanRequest request = PlanRequest(0.5);
  request.mutable_physics()->set_budget_reserved(true);
  v1::PlanResponse response;
  grpc::ClientContext c1;
  const grpc::Status no_allocator = stub_->Plan(&c1, request, &response);
  ExpectInvalidField(no_allocator, "physics.budget_reserved");
  request.mutable_physics()->set_allocator(static_cast<v1::AllocatorModel>(42));
  v1::SimulateRequest simulate;
  *simulate.mutable_trace() = request.trace();
  *simulate.mutable_hardware() = request.hardware();
  simulate.mutable_budget()->set_unlimited(true);
  *simulate.mutable_physics() = request.physics();
  v1::SimulateResponse simulated;
  grpc::ClientContext c2;
  const grpc::Status unknown = stub_->Simulate(&c2, simulate, &simulated);
  ExpectInvalidField(unknown, "physics.allocator");
}

TEST_F(ServiceTest, PlanNodePlansJobsTogetherAndNamesBadFields) {
  v1::PlanNodeRequest request;
  const v1::PlanRequest small = PlanRequest(0.5);
  *request.mutable_hardware() = small.hardware();
  request.mutable_hardware()->set_uplink_d2h_bytes_per_second(
      small.hardware().d2h_bytes_per_second());
  request.mutable_hardware()->set_uplink_h2d_bytes_per_second(
      small.hardware().h2d_bytes_per_second());
  for (int i = 0; i < 2; ++i) {
    v1::NodeJob* job = request.add_jobs();
    job->set_name(i == 0 ? "a" : "b");
    *job->mutable_trace() = small.trace();
    job->mutable_budget()->set_fraction_of_peak(0.5 + 0.2 * i);
    job->set_gpus(2);
  }
  v1::PlanNodeResponse response;
  grpc::ClientContext c1;
  ASSERT_TRUE(stub_->PlanNode(&c1, request, &response).ok());
  ASSERT_EQ(response.jobs_size(), 2);
  for (const v1::NodeJobReport& job : response.jobs()) {
    EXPECT_EQ(job.outcome(), v1::PLAN_OUTCOME_PLANNED) << job.reason();
    EXPECT_GE(job.shared_step_ns(), job.report().metrics().ideal_ns());
    EXPECT_GT(job.uplink_share(), 0);
    EXPECT_GT(job.report().plan().tensors_size(), 0);
  }
  EXPECT_EQ(response.jobs(1).name(), "b");
  // Deterministic but for the planning time.
  v1::PlanNodeResponse again;
  grpc::ClientContext c2;
  ASSERT_TRUE(stub_->PlanNode(&c2, request, &again).ok());
  again.set_planning_time_ns(response.planning_time_ns());
  EXPECT_EQ(again.SerializeAsString(), response.SerializeAsString());

  // Bad fields are named.
  auto first_field = [&](const v1::PlanNodeRequest& bad) {
    v1::PlanNodeResponse out;
    grpc::ClientContext c;
    const grpc::Status status = stub_->PlanNode(&c, bad, &out);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    const std::vector<FieldViolation> v = FieldViolationsOf(status);
    return v.empty() ? std::string() : v[0].field;
  };
  v1::PlanNodeRequest bad = request;
  bad.mutable_jobs(1)->set_gpus(65);
  EXPECT_EQ(first_field(bad), "jobs[1].gpus");
  bad = request;
  bad.mutable_jobs(0)->set_gpus(40);
  bad.mutable_jobs(1)->set_gpus(40);
  EXPECT_EQ(first_field(bad), "jobs");
  bad = request;
  bad.mutable_jobs(1)->mutable_trace()->mutable_tensors(0)->set_producer_op(-1);
  EXPECT_EQ(first_field(bad), "jobs[1].trace.tensors[0].producer_op");
  bad = request;
  bad.mutable_jobs(0)->mutable_budget()->set_fraction_of_peak(-1);
  EXPECT_EQ(first_field(bad), "jobs[0].budget.fraction_of_peak");
  bad = request;
  bad.set_steps(1);
  EXPECT_EQ(first_field(bad), "steps");
  bad = request;
  bad.mutable_jobs(0)->set_policy(v1::POLICY_OPTIMUM);
  EXPECT_EQ(first_field(bad), "jobs[0].policy");
  bad.clear_jobs();
  EXPECT_EQ(first_field(bad), "jobs");
}

struct PlanReply {
  grpc::Status status;
  v1::PlanResponse response;
};

// Plan through a generic stub with the request bytes as given.
PlanReply PlanFromBytes(grpc::GenericStub& stub, const std::string& bytes) {
  const RawReply raw = CallWithBytes(stub, "Plan", bytes);
  PlanReply result{raw.status, {}};
  if (raw.status.ok()) EXPECT_TRUE(result.response.ParseFromString(raw.bytes));
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
