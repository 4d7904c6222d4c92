// The SlackSwap planner on small traces whose best plan is known by hand.
#include "planner/slackswap.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "simulator/event_model.h"
#include "simulator/small_traces.h"
#include "simulator/trace_validation.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace {

using ::slackswap::testing::ByteNanosecondLink;
using ::slackswap::testing::TinyTrace;

PlanningResult PlanOrDie(const Trace& trace, int64_t budget,
                         const PlannerOptions& options = PlannerOptions(),
                         const Hardware& hw = ByteNanosecondLink()) {
  absl::StatusOr<PlanningResult> result =
      PlanSlackSwap(trace, hw, budget, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : PlanningResult();
}

TEST(SlackSwapTest, OneSwapThatFitsTheLinkIsHiddenCompletely) {
  // A (100 bytes, dear to rebuild) is produced first; op 1 gives its 100 ns
  // offload 1000 ns, and the backward pass has 2000 ns before A is needed.
  TinyTrace t;
  t.Fwd(10), t.Fwd(1000), t.Fwd(10), t.Bwd(1000), t.Bwd(1000), t.Bwd(10);
  const int a = t.Tensor(100, 0, {5}, /*recompute_ns=*/500);
  const int b = t.Tensor(10, 2, {3});
  const Trace trace = t.Build();
  // All keep peaks at 110 (op 2); the budget of 100 needs A gone by then.
  const PlanningResult r = PlanOrDie(trace, 100);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(r.plan.decisions[a], Decision::kSwap);
  EXPECT_EQ(r.plan.decisions[b], Decision::kKeep);
  EXPECT_EQ(r.replay.iteration_ns, trace.ideal_ns);
  EXPECT_EQ(r.lower_bound.iteration_ns, trace.ideal_ns);
  EXPECT_LE(r.replay.peak_resident_bytes, 100);
}

TEST(SlackSwapTest, ATensorThatCannotBeRecomputedIsSwapped) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(200), t.Fwd(10), t.Fwd(150), t.Bwd(500), t.Bwd(10),
      t.Bwd(10);
  const int data = t.Tensor(100, 0, {6});  // e.g. the input batch
  t.spec.tensors[data].recompute_forbidden = true;
  const int later = t.Tensor(100, 2, {5}, 1);
  const Trace trace = t.Build();
  // At op 2 both cannot be resident under 120 bytes; the data cannot be
  // rebuilt, so it must be offloaded (10..110, before op 2 starts at 210).
  // Nor can both be resident at op 5, which reads `later`: the data's
  // prefetch (100 ns) can only start when op 5 has freed it, a stall of at
  // most 100 ns that no plan avoids.
  const PlanningResult r = PlanOrDie(trace, 120);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(r.plan.decisions[data], Decision::kSwap);
  EXPECT_LE(r.replay.prefetch_wait_ns, 100);
  EXPECT_LE(r.replay.peak_resident_bytes, 120);
  EXPECT_GE(r.replay.iteration_ns, r.lower_bound.iteration_ns);
  (void)later;
}

TEST(SlackSwapTest, CheapElementwiseBytesAreRecomputedBeforeMatmulOutputs) {
  TinyTrace t;
  t.Fwd(100), t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10), t.Bwd(100);
  const int matmul_out = t.Tensor(100, 0, {1, 5}, /*recompute_ns=*/100);
  const int elementwise_out =
      t.Tensor(100, 1, {4}, /*recompute_ns=*/5, {matmul_out});
  t.Tensor(100, 2, {3});
  const Trace trace = t.Build();
  PlannerOptions recompute_only;
  recompute_only.link_budget_pass = false;
  // All three are live at op 2 (300 bytes); 250 needs one of the first two
  // dropped, and the elementwise output costs 20x less per byte.
  const PlanningResult r = PlanOrDie(trace, 250, recompute_only);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(r.plan.decisions[elementwise_out], Decision::kRecompute);
  EXPECT_EQ(r.plan.decisions[matmul_out], Decision::kKeep);
  EXPECT_EQ(r.replay.recompute_ns, 5);
  EXPECT_EQ(r.replay.swapped_bytes, 0);
}

TEST(SlackSwapTest, RecomputesAcrossABlockBoundaryBeforeAWholeBlock) {
  // Block 1 makes a (kept: may not be recomputed) and c (its output, read by
  // block 2); block 2 makes d (cheap to rebuild from c), e and f. At op 5
  // the excess is 70: d goes first (cheapest per byte); then c is the only
  // tensor left to drop, but its rebuilt dependent d sits in another block,
  // so no tensor is eligible within its block. A rebuild chain across the
  // boundary (c, then d) is short, so c is recomputed on its own instead of
  // its whole block.
  TinyTrace t;
  t.Fwd(10, 0), t.Fwd(10, 1), t.Fwd(10, 1), t.Fwd(10, 2), t.Fwd(10, 2),
      t.Fwd(10, 2);
  t.Bwd(10, 2), t.Bwd(10, 2), t.Bwd(10, 2), t.Bwd(10, 1), t.Bwd(10, 1),
      t.Bwd(10, 0);
  const int in = t.Tensor(10, 0, {1, 11});
  const int a = t.Tensor(20, 1, {2, 10}, 20, {in});
  const int c = t.Tensor(20, 2, {3, 9}, 20, {a});
  const int d = t.Tensor(60, 3, {4, 8}, 6, {c});
  t.Tensor(50, 4, {5, 7}, 50, {d});
  t.Tensor(50, 5, {6}, 50, {});
  t.spec.tensors[in].recompute_forbidden = true;
  t.spec.tensors[a].recompute_forbidden = true;
  const Trace trace = t.Build();
  PlannerOptions recompute_only;
  recompute_only.link_budget_pass = false;
  recompute_only.polish_work = 0;  // the passes alone
  const PlanningResult r = PlanOrDie(trace, 140, recompute_only);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(r.stats.blocks_recomputed, 0);
  EXPECT_EQ(r.plan.decisions[d], Decision::kRecompute);
  EXPECT_EQ(r.plan.decisions[c], Decision::kRecompute);
  EXPECT_EQ(r.plan.decisions[a], Decision::kKeep);
  EXPECT_LE(r.replay.peak_resident_bytes, 140);
}

TEST(SlackSwapTest, FullBudgetGivesTheAllKeepIdealPlan) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(100, 0, {1, 3}, 5);
  t.Tensor(50, 1, {2}, 5, {0});
  const Trace trace = t.Build();
  const PlanningResult r = PlanOrDie(trace, AllKeepPeakBytes(trace));
  ASSERT_TRUE(r.feasible);
  for (Decision d : r.plan.decisions) EXPECT_EQ(d, Decision::kKeep);
  EXPECT_EQ(r.replay.iteration_ns, trace.ideal_ns);
  EXPECT_DOUBLE_EQ(r.GapToLowerBound(), 0);
}

TEST(SlackSwapTest, BudgetBelowOneOpsWorkingSetIsInfeasibleWithItsReason) {
  TinyTrace t;
  t.Fwd(10, 0, /*workspace_bytes=*/500), t.Bwd(10);
  t.Tensor(100, 0, {1}, 5);
  const PlanningResult r = PlanOrDie(t.Build(), 400);
  EXPECT_FALSE(r.feasible);
  EXPECT_TRUE(absl::StrContains(r.reason, "op 0 needs 600 bytes")) << r.reason;
  EXPECT_FALSE(r.lower_bound.feasible);
  // The outcome says so too (the report's, tests/service/wire_convert_test),
  // and the result carries no over-budget plan.
  EXPECT_LE(r.replay.peak_resident_bytes, 400);
  EXPECT_EQ(r.Outcome(), PlanOutcome::kInfeasible);
}

// INFEASIBLE needs a proof (the lower bound's floor, or an exhaustive
// search); a policy that finds no plan above the floor says NO PLAN FOUND.
TEST(PlanOutcomeTest, InfeasibleOnlyWithAProof) {
  PlanningResult r;
  EXPECT_EQ(r.Outcome(), PlanOutcome::kPlanned);
  r.feasible = false;
  EXPECT_EQ(r.Outcome(), PlanOutcome::kNoPlanFound);
  r.proven_infeasible = true;  // the exact optimum searched every plan
  EXPECT_EQ(r.Outcome(), PlanOutcome::kInfeasible);
  r.proven_infeasible = false;
  r.lower_bound.feasible = false;  // below the proven floor
  EXPECT_EQ(r.Outcome(), PlanOutcome::kInfeasible);
}

TEST(SlackSwapTest, RepairIterationsCountRepairsNotReplays) {
  // The all-keep budget: the plan validates at once, so no round repairs
  // anything. Neither that replay nor the improvement step's count.
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(100, 0, {1, 3}, 5);
  t.Tensor(50, 1, {2}, 5, {0});
  const Trace trace = t.Build();
  const PlanningResult r = PlanOrDie(trace, AllKeepPeakBytes(trace));
  EXPECT_EQ(r.stats.repair_iterations, 0);
  EXPECT_EQ(r.stats.repairs, 0);
  EXPECT_GT(r.stats.polish_replays, 0);
  // A budget the bound proves infeasible: no round runs.
  const PlanningResult none = PlanOrDie(trace, 10);
  EXPECT_FALSE(none.feasible);
  EXPECT_EQ(none.stats.repair_iterations, 0);
  // Each counted round made at least one repair.
  int repaired = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const SmallTrace small = RandomSmallTrace(seed);
    const Trace random = *ValidateTrace(small.trace);
    const PlanningResult p = PlanOrDie(random, AllKeepPeakBytes(random) / 2);
    EXPECT_LE(p.stats.repair_iterations, p.stats.repairs) << seed;
    EXPECT_EQ(p.stats.repair_iterations == 0, p.stats.repairs == 0) << seed;
    if (p.stats.repair_iterations > 0) ++repaired;
  }
  EXPECT_GT(repaired, 0);  // some plans needed repair
  // Never more rounds than asked for.
  PlannerOptions one;
  one.max_repair_iterations = 1;
  EXPECT_LE(PlanOrDie(trace, AllKeepPeakBytes(trace) - 1, one)
                .stats.repair_iterations,
            1);
}

TEST(SlackSwapTest, HostPinnedCapBoundsSwappedBytes) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(1000), t.Fwd(10), t.Bwd(1000), t.Bwd(1000), t.Bwd(10);
  t.Tensor(100, 0, {5}, 500);
  t.Tensor(10, 2, {3});
  const Trace trace = t.Build();
  Hardware hw = ByteNanosecondLink();
  EXPECT_EQ(PlanOrDie(trace, 100, PlannerOptions(), hw).replay.swapped_bytes,
            100);
  hw.host_pinned_memory_bytes = 50;  // too small to hold the tensor
  const PlanningResult capped = PlanOrDie(trace, 100, PlannerOptions(), hw);
  ASSERT_TRUE(capped.feasible) << capped.reason;
  EXPECT_EQ(capped.replay.swapped_bytes, 0);
  EXPECT_EQ(capped.replay.recomputed_bytes, 100);
}

}  // namespace
}  // namespace slackswap
