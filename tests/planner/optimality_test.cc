// The exact optimum (planner/optimum.h) on hand-worked traces (the repro
// cases' proven optima: tests/service/optimality_cases_test.cc), and every
// policy and the lower bound against the optimum on random small traces
// (simulator/small_traces.h): bound <= optimum <= every plan, and SlackSwap
// infeasible only where the optimum is.
#include "planner/optimality.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "planner/lower_bound.h"
#include "planner/lp_bound.h"
#include "planner/optimum.h"
#include "simulator/event_model.h"
#include "simulator/small_traces.h"
#include "simulator/trace_spec.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace {

TEST(OptimumTest, HandWorkedTrace) {
  // Tensor 0 (100 bytes, cheap to rebuild) waits from op 0 to op 3; the
  // link is too slow to hide its swap (1,000 ns). At a budget of 100 bytes
  // it must be gone while op 1 allocates tensor 1: recomputing it (10 ns)
  // beats waiting for its offload, and keeping it does not fit.
  testing::TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(100, 0, {3}, 10);
  t.Tensor(20, 1, {2}, 1000);
  const Trace trace = t.Build();
  Hardware slow = testing::ByteNanosecondLink();
  slow.d2h_bytes_per_second = slow.h2d_bytes_per_second = 100'000'000;
  const absl::StatusOr<PlanningResult> r =
      PlanOptimum(trace, slow, 100, OptimumOptions());
  ASSERT_TRUE(r.ok() && r->feasible);
  EXPECT_EQ(r->plan.decisions[0], Decision::kRecompute);
  EXPECT_EQ(r->replay.iteration_ns, 50);
  // At 99 bytes nothing fits: op 0 allocates tensor 0's 100 bytes.
  const absl::StatusOr<PlanningResult> none =
      PlanOptimum(trace, slow, 99, OptimumOptions());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->feasible);
  EXPECT_NE(none->reason.find("exhaustive"), std::string::npos);
}

// Op 1 holds 10 bytes too many. Tensor 0 (100 bytes, 100 ns to rebuild) is
// the cheaper per byte, tensor 1 (10 bytes, 30 ns) the cheaper whole; the
// link (0.1 byte/ns) would take 90 ns of stall for 10 bytes. Dropping a
// tenth of tensor 0 (9 ns after the byte the link moves for free) is not a
// plan: the bound counts whole rebuilds and meets the optimum, 40 + 30 ns.
TEST(LowerBoundTest, CountsWholeRebuilds) {
  testing::TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(100, 0, {3}, 100);
  t.Tensor(10, 0, {3}, 30);
  t.Tensor(50, 1, {2}, 1000);
  const Trace trace = t.Build();
  Hardware slow = testing::ByteNanosecondLink();
  slow.d2h_bytes_per_second = slow.h2d_bytes_per_second = 100'000'000;
  const LowerBound bound = ComputeLowerBound(trace, slow, 150);
  ASSERT_TRUE(bound.feasible);
  EXPECT_EQ(bound.iteration_ns, 70);
  const absl::StatusOr<PlanningResult> optimum =
      PlanOptimum(trace, slow, 150, OptimumOptions());
  ASSERT_TRUE(optimum.ok() && optimum->feasible);
  EXPECT_EQ(optimum->replay.iteration_ns, 70);
  EXPECT_EQ(optimum->plan.decisions[1], Decision::kRecompute);
}

// Backward op 2's workspace leaves 50 bytes too many; tensor 0 (100 bytes, 2 ns
// a byte to rebuild) could leave. Rebuilding it runs after op 2, so it gives
// the link no time before op 2: the cheapest cover is 25 bytes over the link by
// op 2's start (0.5 byte/ns) and 25 rebuilt (50 ns), or a stall that costs as
// much; 60 + 50 ns. (Counting the rebuild as link time gave 60 + 25.)
TEST(LowerBoundTest, RebuildsAfterABackwardOpGiveItsLinkNoTime) {
  testing::TinyTrace t;
  t.Fwd(10), t.Fwd(40), t.Bwd(10, 0, /*workspace_bytes=*/100), t.Bwd(0);
  t.Tensor(100, 0, {3}, 200);
  const Trace trace = t.Build();
  Hardware link = testing::ByteNanosecondLink();
  link.d2h_bytes_per_second = link.h2d_bytes_per_second = 500'000'000;
  const LowerBound bound = ComputeLowerBound(trace, link, 150);
  ASSERT_TRUE(bound.feasible);
  EXPECT_EQ(bound.iteration_ns, 110);
  EXPECT_EQ(bound.binding_op, 2);
  const absl::StatusOr<PlanningResult> optimum =
      PlanOptimum(trace, link, 150, OptimumOptions());
  ASSERT_TRUE(optimum.ok() && optimum->feasible);
  EXPECT_GE(optimum->replay.iteration_ns, bound.iteration_ns);
}

TEST(OptimumTest, RefusesLargeTraces) {
  const SmallTrace small = RandomSmallTrace(7, {20, 20, 10});
  const Trace trace = *ValidateTrace(small.trace);
  EXPECT_EQ(PlanOptimum(trace, small.hardware, 1 << 30, OptimumOptions())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// The optimum with each decision vector's swaps at the earliest alone
// (OptimumOptions::earliest_issue, where EarliestIssueIsBest holds) is the
// optimum over every issue point: the same iteration time and outcome on
// random small traces from their floor to a third of the way to their peak,
// and optima whose swaps the full search issued later (ties: the shortcut
// is not vacuous).
TEST(OptimumTest, SwapsAtTheEarliestGiveTheSameOptimum) {
  int compared = 0, issued_later = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const SmallTrace small = RandomSmallTrace(seed, {2, 8, 10});
    const Trace trace = *ValidateTrace(small.trace);
    const int64_t floor = ComputeProvenFloor(trace).bytes;
    const int64_t peak = AllKeepPeakBytes(trace);
    for (int64_t budget :
         {floor, floor + (peak - floor) / 10, floor + (peak - floor) / 3}) {
      SCOPED_TRACE(absl::StrCat("seed ", seed, " budget ", budget));
      OptimumOptions options;
      const PlanningResult earliest =
          *PlanOptimum(trace, small.hardware, budget, options);
      options.earliest_issue = false;
      const PlanningResult every =
          *PlanOptimum(trace, small.hardware, budget, options);
      ASSERT_EQ(earliest.feasible, every.feasible);
      if (!every.feasible) continue;
      ++compared;
      EXPECT_EQ(earliest.replay.iteration_ns, every.replay.iteration_ns);
      issued_later += every.plan.prefetch_issue_op !=
                      IssuedAtEarliest(trace, every.plan).prefetch_issue_op;
    }
  }
  EXPECT_GE(compared, 60);
  EXPECT_GE(issued_later, 1);
}

TEST(SmallTracesTest, AreValidAndDeterministic) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const SmallTrace a = RandomSmallTrace(seed);
    const absl::StatusOr<Trace> trace = ValidateTrace(a.trace);
    ASSERT_TRUE(trace.ok()) << seed << ": " << trace.status();
    testing::ExpectSameTrace(*trace,
                             *ValidateTrace(RandomSmallTrace(seed).trace));
    EXPECT_EQ(SerializedBytes(a.trace),
              SerializedBytes(RandomSmallTrace(seed).trace));
  }
}

// Every policy against the optimum on random small traces, at budgets from
// one byte below the memory floor to the all-keep peak.
TEST(OptimalityTest, BoundOptimumAndPlansAreOrdered) {
  PolicyOptions options;
  options.genetic_search.max_evaluations = 400;
  options.swapadvisor.max_evaluations = 200;
  options.slackswap.search_time_ms = 20;
  const std::vector<Policy> policies = {
      Policy::kSlackSwap, Policy::kVdnn, Policy::kSuperNeurons,
      Policy::kCheckpointing, Policy::kGeneticSearch};
  const absl::StatusOr<OptimalityStudy> study =
      RunOptimalityStudy(1, 120, policies, options);
  ASSERT_TRUE(study.ok()) << study.status();
  int slackswap_infeasible = 0, optimum_feasible = 0;
  std::vector<double> gaps;
  for (const OptimalityCase& c : study->cases) {
    SCOPED_TRACE(absl::StrCat("seed ", c.seed, " at ", c.label, " (",
                              c.budget_bytes, " bytes)"));
    if (c.label == "floor-1") {
      EXPECT_FALSE(c.optimum.feasible);
    }
    if (!c.optimum.feasible) {
      for (const PlanningResult& r : c.plans) EXPECT_FALSE(r.feasible);
      continue;
    }
    ++optimum_feasible;
    const int64_t best = c.optimum.replay.iteration_ns;
    EXPECT_LE(c.optimum.replay.peak_resident_bytes, c.budget_bytes);
    // The bound never calls a budget with a plan infeasible, and never
    // exceeds the optimum.
    EXPECT_TRUE(c.optimum.lower_bound.feasible) << c.optimum.lower_bound.reason;
    EXPECT_LE(c.optimum.lower_bound.iteration_ns, best);
    for (size_t i = 0; i < c.plans.size(); ++i) {
      const PlanningResult& r = c.plans[i];
      if (r.feasible) {
        EXPECT_GE(r.replay.iteration_ns, best) << PolicyName(policies[i]);
      }
    }
    const PlanningResult& slackswap = c.plans[0];
    if (!slackswap.feasible) {
      ++slackswap_infeasible;
    } else {
      gaps.push_back(static_cast<double>(slackswap.replay.iteration_ns) /
                         static_cast<double>(best) -
                     1);
    }
  }
  std::sort(gaps.begin(), gaps.end());
  auto at = [&](double q) {
    return gaps.empty() ? 0.0
                        : gaps[std::min(gaps.size() - 1,
                                        static_cast<size_t>(q * gaps.size()))];
  };
  std::printf(
      "%zu cases, %d with a plan; SlackSwap infeasible in %d of them; gap to "
      "the optimum: median %.2f%%, p90 %.2f%%, p99 %.2f%%, worst %.2f%%\n",
      study->cases.size(), optimum_feasible, slackswap_infeasible,
      100 * at(0.5), 100 * at(0.9), 100 * at(0.99),
      100 * (gaps.empty() ? 0 : gaps.back()));
  EXPECT_EQ(slackswap_infeasible, 0);
}

// The linear program's bound: valid (never above the optimum) on small
// traces, solved on every preset, and reported with its source when asked.
TEST(LinearProgramBoundTest, IsAValidBoundAndSolvesThePresets) {
  int tighter = 0, cases = 0;
  const absl::StatusOr<OptimalityStudy> study =
      RunOptimalityStudy(300, 40, {}, PolicyOptions());
  ASSERT_TRUE(study.ok()) << study.status();
  for (const OptimalityCase& c : study->cases) {
    if (!c.optimum.feasible) continue;
    const SmallTrace small = RandomSmallTrace(c.seed);
    const Trace trace = *ValidateTrace(small.trace);
    ++cases;
    const LinearProgramBound lp =
        ComputeLinearProgramBound(trace, small.hardware, c.budget_bytes);
    ASSERT_TRUE(lp.solved) << "seed " << c.seed;
    EXPECT_LE(lp.iteration_ns, c.optimum.replay.iteration_ns)
        << "seed " << c.seed << " at " << c.label;
    EXPECT_GE(lp.iteration_ns, trace.ideal_ns);
    const LowerBound both =
        ComputeLowerBound(trace, small.hardware, c.budget_bytes, true);
    EXPECT_GE(both.iteration_ns, lp.iteration_ns);
    EXPECT_GE(
        both.iteration_ns,
        ComputeLowerBound(trace, small.hardware, c.budget_bytes).iteration_ns);
    if (both.source == BoundSource::kLinearProgram) ++tighter;
  }
  EXPECT_GT(cases, 40);
  std::printf("%d cases; the linear program is tighter in %d\n", cases,
              tighter);
  for (const char* preset : {"gpt2-xl", "bert-large", "vgg16"}) {
    WorkloadSpec spec = *WorkloadPreset(preset);
    if (spec.layers > 4) spec.layers = 4;
    const Hardware hw = *HardwarePreset("a100");
    const Trace trace = *ValidateTrace(*GenerateTrace(spec, hw));
    const int64_t budget = AllKeepPeakBytes(trace) * 7 / 10;
    const LinearProgramBound lp = ComputeLinearProgramBound(trace, hw, budget);
    EXPECT_TRUE(lp.solved) << preset;
    EXPECT_GT(lp.rows, 0) << preset;
    PlannerOptions options;
    options.linear_program_bound = true;
    const absl::StatusOr<PlanningResult> r =
        PlanSlackSwap(trace, hw, budget, options);
    ASSERT_TRUE(r.ok());
    if (r->feasible) {
      EXPECT_LE(r->lower_bound.iteration_ns, r->replay.iteration_ns);
    }
  }
}

// The proven floor is the bound's exact threshold: infeasible one byte
// below, not proven infeasible at it.
TEST(ProvenFloorTest, IsTheBoundsThreshold) {
  for (uint64_t seed = 1; seed < 60; ++seed) {
    const SmallTrace small = RandomSmallTrace(seed);
    const Trace trace = *ValidateTrace(small.trace);
    const ProvenFloor floor = ComputeProvenFloor(trace);
    EXPECT_TRUE(ComputeLowerBound(trace, small.hardware, floor.bytes).feasible)
        << seed;
    EXPECT_FALSE(
        ComputeLowerBound(trace, small.hardware, floor.bytes - 1).feasible)
        << seed;
    EXPECT_GE(floor.op, 0);
  }
}

}  // namespace
}  // namespace slackswap
