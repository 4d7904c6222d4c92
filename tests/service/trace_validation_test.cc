// One test per rejection rule: each asserts the status code and the field
// path of the first violation.
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "absl/strings/match.h"
#include "base/field_violations.h"
#include "gtest/gtest.h"
#include "planner/basic_plans.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/event_model.h"
#include "simulator/trace_limits.h"
#include "simulator/workload.h"
#include "tests/service/tiny_proto_trace.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace {

using ::slackswap::testing::ByteNanosecondLink;
using ::slackswap::testing::PlanOf;
using ::slackswap::testing::TinyProtoTrace;

// A valid two-forward, two-backward trace with two tensors.
TinyProtoTrace Valid() {
  TinyProtoTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(100, 0, {1, 3});
  t.Tensor(50, 1, {2}, 5, {0});
  return t;
}

// Asserts that `status` is `code` and that its first violation is `field`.
void ExpectViolation(
    const absl::Status& status, const std::string& field,
    absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  ASSERT_EQ(status.code(), code) << status;
  const std::vector<FieldViolation> violations = FieldViolationsOf(status);
  ASSERT_FALSE(violations.empty()) << status;
  EXPECT_EQ(violations[0].field, field) << status;
  EXPECT_TRUE(absl::StartsWith(status.message(), field + ": ")) << status;
}

void ExpectTraceViolation(
    const TinyProtoTrace& t, const std::string& field,
    absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  ExpectViolation(TraceFromProto(t.proto).status(), field, code);
}

// Operator and tensor problems come back in one answer: a client fixes them
// all from one round trip.
TEST(TraceValidationTest, ReportsOperatorAndTensorViolationsTogether) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_operators(1)->set_duration_ns(-1);
  t.proto.mutable_operators(2)->set_kind(static_cast<v1::OpKind>(99));
  t.proto.mutable_tensors(1)->set_size_bytes(-5);
  t.proto.mutable_tensors(0)->add_use_ops(7);
  const absl::Status status = TraceFromProto(t.proto).status();
  ExpectViolation(status, "trace.operators[1].duration_ns");
  std::vector<std::string> fields;
  for (const FieldViolation& v : FieldViolationsOf(status))
    fields.push_back(v.field);
  EXPECT_EQ(fields, (std::vector<std::string>{
                        "trace.operators[1].duration_ns",
                        "trace.operators[2].kind",
                        "trace.tensors[0].use_ops[2]",
                        "trace.tensors[1].size_bytes",
                    }));
  EXPECT_TRUE(absl::StrContains(status.message(), "(and 3 more)")) << status;
}

TEST(TraceValidationTest, ValidTraceIsAcceptedWithDerivedFields) {
  absl::StatusOr<Trace> trace = TraceFromProto(Valid().proto);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->num_forward_ops, 2);
  EXPECT_EQ(trace->tensors[0].last_forward_use, 1);
  EXPECT_EQ(trace->tensors[0].first_backward_use, 3);
  EXPECT_EQ(trace->tensors[1].last_forward_use,
            1);  // the producer: no forward reader
  EXPECT_EQ(trace->ideal_ns, 40);
  EXPECT_EQ(trace->total_tensor_bytes, 150);
}

TEST(TraceValidationTest, RejectsAnEmptyTrace) {
  ExpectTraceViolation(TinyProtoTrace(), "trace.operators");
}

TEST(TraceValidationTest, RejectsUnspecifiedPhase) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_operators(1)->set_phase(v1::PHASE_UNSPECIFIED);
  ExpectTraceViolation(t, "trace.operators[1].phase");
}

TEST(TraceValidationTest, RejectsPhasesOutOfOrder) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_operators(2)->set_phase(v1::PHASE_OPTIMIZER);
  ExpectTraceViolation(t, "trace.operators[3].phase");
}

TEST(TraceValidationTest, RejectsUnknownOpKind) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_operators(0)->set_kind(static_cast<v1::OpKind>(99));
  ExpectTraceViolation(t, "trace.operators[0].kind");
}

TEST(TraceValidationTest, RejectsNegativeDuration) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_operators(2)->set_duration_ns(-1);
  ExpectTraceViolation(t, "trace.operators[2].duration_ns");
}

TEST(TraceValidationTest, RejectsNegativeWorkspace) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_operators(0)->set_workspace_bytes(-5);
  ExpectTraceViolation(t, "trace.operators[0].workspace_bytes");
}

TEST(TraceValidationTest, RejectsNegativeBlockIndex) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_operators(0)->set_block_index(-1);
  ExpectTraceViolation(t, "trace.operators[0].block_index");
}

// An unbounded block index made planners allocate one entry per index up to
// it (INT32_MAX: std::bad_alloc killed the server). There cannot be more
// layers than operators.
TEST(TraceValidationTest, RejectsBlockIndexNotBelowTheOperatorCount) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_operators(2)->set_block_index(
      std::numeric_limits<int32_t>::max());
  ExpectTraceViolation(t, "trace.operators[2].block_index");
  TinyProtoTrace u = Valid();
  u.proto.mutable_operators(1)->set_block_index(4);  // 4 operators
  ExpectTraceViolation(u, "trace.operators[1].block_index");
  TinyProtoTrace w = Valid();
  w.proto.mutable_operators(1)->set_block_index(3);
  EXPECT_TRUE(TraceFromProto(w.proto).ok());
}

TEST(TraceValidationTest, RejectsLongNames) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_operators(3)->set_name(std::string(257, 'x'));
  ExpectTraceViolation(t, "trace.operators[3].name");
  TinyProtoTrace u = Valid();
  u.proto.set_name(std::string(1000, 'x'));
  ExpectTraceViolation(u, "trace.name");
}

TEST(TraceValidationTest, RejectsDurationsThatOverflow) {
  TinyProtoTrace t = Valid();
  for (int i = 0; i < 4; ++i)
    t.proto.mutable_operators(i)->set_duration_ns(int64_t{1} << 59);
  ExpectTraceViolation(t, "trace.operators");
  TinyProtoTrace u = Valid();
  u.proto.mutable_operators(0)->set_duration_ns(
      std::numeric_limits<int64_t>::max());
  ExpectTraceViolation(u, "trace.operators[0].duration_ns");
}

TEST(TraceValidationTest, RejectsNegativeSize) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(1)->set_size_bytes(-1);
  ExpectTraceViolation(t, "trace.tensors[1].size_bytes");
}

TEST(TraceValidationTest, RejectsSizesThatOverflow) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(0)->set_size_bytes(
      std::numeric_limits<int64_t>::max());
  ExpectTraceViolation(t, "trace.tensors[0].size_bytes");
  TinyProtoTrace u = Valid();
  u.proto.mutable_tensors(0)->set_size_bytes(int64_t{1} << 60);
  u.proto.mutable_tensors(1)->set_size_bytes(int64_t{1} << 60);
  ExpectTraceViolation(u, "trace.tensors");
}

TEST(TraceValidationTest, RejectsProducerOutOfRange) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(0)->set_producer_op(4);
  ExpectTraceViolation(t, "trace.tensors[0].producer_op");
  t.proto.mutable_tensors(0)->set_producer_op(-1);
  ExpectTraceViolation(t, "trace.tensors[0].producer_op");
}

TEST(TraceValidationTest, RejectsBackwardProducer) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(1)->set_producer_op(2);
  ExpectTraceViolation(t, "trace.tensors[1].producer_op");
}

TEST(TraceValidationTest, RejectsUseOutOfRange) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(0)->set_use_ops(1, 12);
  ExpectTraceViolation(t, "trace.tensors[0].use_ops[1]");
}

TEST(TraceValidationTest, RejectsUseBeforeProducer) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(1)->add_use_ops(0);
  ExpectTraceViolation(t, "trace.tensors[1].use_ops[1]");
  TinyProtoTrace u = Valid();
  u.proto.mutable_tensors(1)->add_use_ops(1);  // the producer itself
  ExpectTraceViolation(u, "trace.tensors[1].use_ops[1]");
}

TEST(TraceValidationTest, RejectsUseByOptimizer) {
  TinyProtoTrace t = Valid();
  v1::Operator* opt = t.proto.add_operators();
  opt->set_phase(v1::PHASE_OPTIMIZER);
  t.proto.mutable_tensors(0)->add_use_ops(4);
  ExpectTraceViolation(t, "trace.tensors[0].use_ops[2]");
}

TEST(TraceValidationTest, RejectsTensorWithoutBackwardUse) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(0)->clear_use_ops();
  t.proto.mutable_tensors(0)->add_use_ops(1);
  ExpectTraceViolation(t, "trace.tensors[0].use_ops");
}

TEST(TraceValidationTest, RejectsRecomputeInputOutOfRange) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(1)->set_recompute_inputs(0, 2);
  ExpectTraceViolation(t, "trace.tensors[1].recompute_inputs[0]");
}

TEST(TraceValidationTest, RejectsSelfRecomputeInput) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(1)->set_recompute_inputs(0, 1);
  ExpectTraceViolation(t, "trace.tensors[1].recompute_inputs[0]");
}

TEST(TraceValidationTest, RejectsNegativeRecomputeDuration) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(1)->set_recompute_duration_ns(-3);
  ExpectTraceViolation(t, "trace.tensors[1].recompute_duration_ns");
}

TEST(TraceValidationTest, RejectsRecomputeCycleNamingATensorOnIt) {
  TinyProtoTrace t;
  t.Fwd(1), t.Bwd(1);
  t.Tensor(1, 0, {1}, 1, {});  // 0: feeds the cycle but is not on it
  t.Tensor(1, 0, {1}, 1, {0, 3});
  t.Tensor(1, 0, {1}, 1, {1});
  t.Tensor(1, 0, {1}, 1, {2});  // 1 -> 3 -> 2 -> 1
  const absl::Status status = TraceFromProto(t.proto).status();
  ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  const std::string field = FieldViolationsOf(status)[0].field;
  EXPECT_TRUE(field == "trace.tensors[1].recompute_inputs" ||
              field == "trace.tensors[2].recompute_inputs" ||
              field == "trace.tensors[3].recompute_inputs")
      << field;
}

TEST(TraceValidationTest, LongRecomputeChainAndLongCycleNeitherRecurseNorHang) {
  constexpr int kLength = 200000;
  TinyProtoTrace chain;
  chain.Fwd(1), chain.Bwd(1);
  for (int i = 0; i < kLength; ++i) {
    v1::Tensor* t = chain.proto.add_tensors();
    t->set_size_bytes(1);
    t->add_use_ops(1);
    if (i > 0) t->add_recompute_inputs(i - 1);
  }
  absl::StatusOr<Trace> trace = TraceFromProto(chain.proto);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->recompute_topological_order.front(), 0);
  EXPECT_EQ(trace->recompute_topological_order.back(), kLength - 1);
  chain.proto.mutable_tensors(0)->add_recompute_inputs(kLength -
                                                       1);  // close the loop
  ExpectViolation(TraceFromProto(chain.proto).status(),
                  "trace.tensors[0].recompute_inputs");
}

TEST(TraceValidationTest, RejectsTooManyRelationsAsResourceExhausted) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(0)->mutable_use_ops()->Resize(
      static_cast<int>(kMaxRelations) + 1, 3);
  ExpectTraceViolation(t, "trace.tensors",
                       absl::StatusCode::kResourceExhausted);
}

TEST(TraceValidationTest, ReportsEveryViolationInThePayload) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_operators(0)->set_duration_ns(-1);
  t.proto.mutable_operators(1)->set_duration_ns(-1);
  t.proto.mutable_operators(2)->set_workspace_bytes(-1);
  const absl::Status status = TraceFromProto(t.proto).status();
  EXPECT_EQ(FieldViolationsOf(status).size(), 3u);
  EXPECT_TRUE(absl::StrContains(status.message(), "(and 2 more)")) << status;
}

TEST(TraceValidationTest, DuplicateUsesAreMergedAndUsesMayComeInAnyOrder) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(0)->clear_use_ops();
  for (int u : {3, 1, 3, 1}) t.proto.mutable_tensors(0)->add_use_ops(u);
  absl::StatusOr<Trace> trace = TraceFromProto(t.proto);
  ASSERT_TRUE(trace.ok());
  EXPECT_EQ(std::vector<int32_t>(trace->uses.Row(0).begin(),
                                 trace->uses.Row(0).end()),
            (std::vector<int32_t>{1, 3}));
}

TEST(HardwareValidationTest, RejectsEachBadField) {
  const v1::Hardware good = HardwareToProto(ByteNanosecondLink());
  ASSERT_TRUE(HardwareFromProto(good).ok());
  struct Case {
    void (*mutate)(v1::Hardware&);
    const char* field;
  };
  const Case cases[] = {
      {[](v1::Hardware& h) { h.set_d2h_bytes_per_second(0); },
       "hardware.d2h_bytes_per_second"},
      {[](v1::Hardware& h) { h.set_h2d_bytes_per_second(-1); },
       "hardware.h2d_bytes_per_second"},
      {[](v1::Hardware& h) { h.set_transfer_latency_ns(-1); },
       "hardware.transfer_latency_ns"},
      {[](v1::Hardware& h) { h.set_gpu_memory_bytes(-1); },
       "hardware.gpu_memory_bytes"},
      {[](v1::Hardware& h) { h.set_host_pinned_memory_bytes(-1); },
       "hardware.host_pinned_memory_bytes"},
      {[](v1::Hardware& h) { h.set_matmul_flops_per_second(-1); },
       "hardware.matmul_flops_per_second"},
      {[](v1::Hardware& h) { h.set_hbm_bytes_per_second(-1); },
       "hardware.hbm_bytes_per_second"},
      {[](v1::Hardware& h) { h.set_name(std::string(300, 'n')); },
       "hardware.name"},
  };
  for (const Case& c : cases) {
    v1::Hardware h = good;
    c.mutate(h);
    ExpectViolation(HardwareFromProto(h).status(), c.field);
  }
}

TEST(BudgetValidationTest, ResolvesEachFormAndRejectsBadOnes) {
  const Trace trace = Valid().Build();  // all-keep peak: 150
  v1::Budget b;
  b.set_fraction_of_peak(0.5);
  EXPECT_EQ(*ResolveBudget(trace, b), 75);
  b.set_bytes(120);
  EXPECT_EQ(*ResolveBudget(trace, b), 120);
  b.set_bytes(0);  // a legal, infeasible budget
  EXPECT_EQ(*ResolveBudget(trace, b), 0);
  b.set_unlimited(true);
  EXPECT_EQ(*ResolveBudget(trace, b), kUnlimitedBytes);
  b.set_fraction_of_peak(1e6);
  EXPECT_EQ(*ResolveBudget(trace, b), 150'000'000);

  ExpectViolation(ResolveBudget(trace, v1::Budget()).status(), "budget");
  b.set_bytes(-1);
  ExpectViolation(ResolveBudget(trace, b).status(), "budget.bytes");
  for (double f : {0.0, -0.5, 1e7, std::nan(""),
                   std::numeric_limits<double>::infinity()}) {
    b.set_fraction_of_peak(f);
    ExpectViolation(ResolveBudget(trace, b).status(),
                    "budget.fraction_of_peak");
  }
  b.set_unlimited(false);
  ExpectViolation(ResolveBudget(trace, b).status(), "budget.unlimited");
}

TEST(PlanValidationTest, RejectsWrongCountAndUnspecifiedDecision) {
  const Trace trace = Valid().Build();
  v1::Plan p;
  p.add_tensors()->set_decision(v1::DECISION_KEEP);
  ExpectViolation(PlanFromProto(trace, p).status(), "plan.tensors");
  p.add_tensors();
  ExpectViolation(PlanFromProto(trace, p).status(), "plan.tensors[1].decision");
}

TEST(PlanValidationTest, RejectsForbiddenDecisions) {
  TinyProtoTrace t = Valid();
  t.proto.mutable_tensors(0)->set_swap_forbidden(true);
  t.proto.mutable_tensors(1)->set_recompute_forbidden(true);
  const Trace trace = t.Build();
  const Hardware hw = ByteNanosecondLink();
  ExpectViolation(ValidatePlan(trace, hw, PlanOf("sk", 2), false),
                  "plan.tensors[0].decision");
  ExpectViolation(ValidatePlan(trace, hw, PlanOf("kr"), false),
                  "plan.tensors[1].decision");
}

TEST(PlanValidationTest, RejectsSwappingBeyondTheHostPinnedCap) {
  const Trace trace = Valid().Build();
  Hardware hw = ByteNanosecondLink();
  hw.host_pinned_memory_bytes = 120;
  EXPECT_TRUE(ValidatePlan(trace, hw, PlanOf("sk", 2), false).ok());
  ExpectViolation(ValidatePlan(trace, hw, PlanOf("ss", 2), false),
                  "plan.tensors");
}

// Hostile input: random corruptions of a valid trace never crash the
// validator, and whatever it accepts simulates without crashing.
TEST(TraceValidationTest, CorruptedTracesAreRejectedOrSimulatedSafely) {
  WorkloadSpec spec = *WorkloadPreset("gpt2-xl");
  spec.layers = 2;
  const Hardware hw = *HardwarePreset("a100");
  const v1::Trace base = TraceSpecToProto(*GenerateTrace(spec, hw));
  std::mt19937_64 rng(99);
  const int64_t values[] = {-1,
                            0,
                            1,
                            7,
                            1 << 20,
                            int64_t{1} << 40,
                            int64_t{1} << 61,
                            std::numeric_limits<int64_t>::max(),
                            std::numeric_limits<int64_t>::min()};
  auto value = [&] { return values[rng() % std::size(values)]; };
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    v1::Trace t = base;
    for (int m = 0; m < 3; ++m) {
      v1::Operator* op = t.mutable_operators(rng() % t.operators_size());
      v1::Tensor* tensor = t.mutable_tensors(rng() % t.tensors_size());
      switch (rng() % 9) {
        case 0:
          op->set_duration_ns(value());
          break;
        case 1:
          op->set_phase(static_cast<v1::Phase>(rng() % 5));
          break;
        case 2:
          op->set_workspace_bytes(value());
          break;
        case 3:
          tensor->set_size_bytes(value());
          break;
        case 4:
          tensor->set_producer_op(static_cast<int32_t>(value()));
          break;
        case 5:
          if (tensor->use_ops_size() > 0) {
            tensor->set_use_ops(rng() % tensor->use_ops_size(),
                                static_cast<int32_t>(rng() % 200));
          }
          break;
        case 6:
          tensor->add_recompute_inputs(
              static_cast<int32_t>(rng() % t.tensors_size()));
          break;
        case 7:
          tensor->set_recompute_duration_ns(value());
          break;
        case 8:
          op->set_block_index(static_cast<int32_t>(value()));
          break;
      }
    }
    absl::StatusOr<Trace> trace = TraceFromProto(t);
    if (!trace.ok()) {
      EXPECT_EQ(trace.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    ++accepted;
    SimulationOptions options;
    options.budget_bytes = AllKeepPeakBytes(*trace) / 2;
    absl::StatusOr<SimulationResult> r =
        Simulate(*trace, hw, AllSwapPlan(*trace), options);
    if (r.ok() && r->feasible) {
      EXPECT_LE(r->peak_resident_bytes, options.budget_bytes);
    }
  }
  EXPECT_GT(accepted, 100);
}

}  // namespace
}  // namespace slackswap
