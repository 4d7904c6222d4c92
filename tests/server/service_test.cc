// Every RPC of PlannerService through a real gRPC server (in-process
// channel): plans, replays at other speeds, infeasible budgets, invalid input
// and its field paths, node physics and node plans.
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
  // So is an offload mode outside the enum.
  generate.set_hardware_preset("a100");
  generate.set_offload(static_cast<v1::Offload>(99));
  grpc::ClientContext cg3;
  ExpectInvalidField(stub_->GenerateTrace(&cg3, generate, &generated),
                     "offload");

  v1::SimulateRequest simulate;
  *simulate.mutable_trace() = PlanRequest(0.5).trace();
  *simulate.mutable_hardware() = PlanRequest(0.5).hardware();
  simulate.mutable_budget()->set_unlimited(true);
  v1::SimulateResponse simulated;
  grpc::ClientContext cs;
  const grpc::Status bad_plan = stub_->Simulate(&cs, simulate, &simulated);
  ExpectInvalidField(bad_plan, "plan.tensors");
}

// An offload mode comes back as the trace's fixed transfers (FSDP: two
// parameter fetches and a gradient copy per layer).
TEST_F(ServiceTest, GenerateTraceAddsTheOffloadTraffic) {
  v1::GenerateTraceRequest generate;
  generate.set_workload_preset("gpt2-xl");
  generate.set_hardware_preset("a100");
  generate.set_layers(2);
  generate.set_offload(v1::OFFLOAD_FSDP_CPU);
  v1::GenerateTraceResponse generated;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->GenerateTrace(&context, generate, &generated).ok());
  ASSERT_EQ(generated.trace().fixed_transfers_size(), 6);
  int d2h = 0;
  for (const v1::FixedTransfer& x : generated.trace().fixed_transfers())
    d2h += x.direction() == v1::DIRECTION_D2H;
  EXPECT_EQ(d2h, 2);
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

}  // namespace
}  // namespace slackswap
