// The anytime search's exact stage (planner/anytime.h) and the branch and
// bound behind it (planner/exact_search.h): on traces of at most 16 tensors
// the search ends at the exact optimum, or with a proof that no plan fits,
// in a fraction of its budget; where the tree is too large, the stage gives
// up at its limit and keeps its best plan.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "planner/anytime.h"
#include "planner/exact_search.h"
#include "planner/frontier.h"
#include "planner/lower_bound.h"
#include "planner/optimum.h"
#include "planner/policies.h"
#include "planner/replay_cost.h"
#include "planner/slackswap.h"
#include "simulator/caching_allocator.h"
#include "simulator/event_model.h"
#include "simulator/small_traces.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"
#include "tests/planner/preset_traces.h"

namespace slackswap {
namespace {

int64_t Budget(const Trace& trace, int64_t percent) {
  const int64_t floor = ComputeProvenFloor(trace).bytes;
  return floor + (AllKeepPeakBytes(trace) - floor) * percent / 100;
}

// Random small traces (docs/results.md section 15's "small" kind, seeds
// 701-716) at their floor and 2%, 10% and 30% above it: wherever the search
// runs, it ends at the exact optimum, saying so, within a part of its budget
// (it took all of it before the stage: 61,698 replays); where the exact
// optimum finds no plan, it answers INFEASIBLE with the stage's proof.
TEST(ExactStageTest, OnSmallTracesTheSearchEndsAtTheOptimum) {
  int searched = 0, proven = 0, infeasible = 0;
  int64_t least = INT64_MAX, most = 0;  // replays of the searches proven
  for (uint64_t seed = 701; seed <= 716; ++seed) {
    const SmallTrace small = RandomSmallTrace(seed, {4, 16, 10});
    const Trace trace = *ValidateTrace(small.trace);
    for (int64_t percent : {0, 2, 10, 30}) {
      SCOPED_TRACE(absl::StrCat("seed ", seed, " at ", percent, "%"));
      const int64_t budget = Budget(trace, percent);
      const PlanningResult planned =
          *PlanSlackSwap(trace, small.hardware, budget, PlannerOptions());
      const absl::StatusOr<PlanningResult> optimum =
          PlanOptimum(trace, small.hardware, budget, OptimumOptions());
      ASSERT_TRUE(optimum.ok()) << optimum.status();
      if (!optimum->feasible) {
        EXPECT_EQ(planned.Outcome(), PlanOutcome::kInfeasible);
        EXPECT_NE(planned.reason.find("exact stage"), std::string::npos)
            << planned.reason;
        ++infeasible;
        continue;
      }
      ASSERT_TRUE(planned.feasible) << planned.reason;
      const int64_t best = optimum->replay.iteration_ns;
      if (planned.stats.search_replays == 0) {
        // On target: within the gap target of the bound, so of the optimum.
        EXPECT_FALSE(planned.stats.proven_optimal);
        EXPECT_LE(planned.replay.iteration_ns, best + best / 200);
        continue;
      }
      ++searched;
      if (!planned.stats.proven_optimal) continue;  // the stage gave up
      ++proven;
      least = std::min(least, planned.stats.search_replays);
      most = std::max(most, planned.stats.search_replays);
      EXPECT_EQ(planned.replay.iteration_ns, best);
      EXPECT_LT(planned.stats.search_replays,
                AnytimeReplays(trace, PlannerOptions()) / 2);
    }
  }
  std::cout << searched << " searched, " << proven << " proven optimal in "
            << least << " to " << most << " replays\n";
  // Measured: 29 searched, 27 proven (the two left, seed 712 at its floor
  // and 2%, need 104,832 replays: the stage gives up at half the budget).
  EXPECT_GE(searched, 25);
  EXPECT_GE(proven, searched - 2);
  EXPECT_EQ(infeasible, 0);
}

// Where no plan fits a small trace above its proven floor (seed 1 of the
// study's small kind), only an exhaustive search can say so: the search's
// exact stage does, and the answer is INFEASIBLE with its proof.
TEST(ExactStageTest, AboveTheFloorOnlyTheExhaustiveStageProvesNoPlanFits) {
  const SmallTrace small = RandomSmallTrace(1, {4, 16, 10});
  const Trace trace = *ValidateTrace(small.trace);
  const int64_t budget = Budget(trace, 30);
  ASSERT_GT(budget, ComputeProvenFloor(trace).bytes);
  EXPECT_FALSE(
      PlanOptimum(trace, small.hardware, budget, OptimumOptions())->feasible);
  const PlanningResult planned =
      *PlanSlackSwap(trace, small.hardware, budget, PlannerOptions());
  EXPECT_EQ(planned.Outcome(), PlanOutcome::kInfeasible);
  EXPECT_TRUE(planned.proven_infeasible);
  EXPECT_NE(planned.reason.find("searched every decision"), std::string::npos)
      << planned.reason;
  // The service's explanation adds where SlackSwap plans, and the floor
  // (below this budget: the proof is the search's).
  PlanningResult explained = planned;
  ASSERT_TRUE(
      ExplainInfeasible(trace, small.hardware, PlannerOptions(), explained)
          .ok());
  EXPECT_GT(explained.smallest_planned_budget_bytes, budget);
  EXPECT_NE(explained.reason.find("SlackSwap plans from"), std::string::npos)
      << explained.reason;
  EXPECT_EQ(explained.reason.find("no plan fits below"), std::string::npos)
      << explained.reason;
  // Without the search, no proof: no plan found.
  PlannerOptions passes;
  passes.search_time_ms = 0;
  EXPECT_EQ(PlanSlackSwap(trace, small.hardware, budget, passes)->Outcome(),
            PlanOutcome::kNoPlanFound);
}

// Under a budget on the caching allocator's reserved bytes the planner plans
// for smaller resident budgets until the reserved peak fits: where it finds
// no plan, an exact stage's proof at a smaller resident budget proves
// nothing about this one. INFEASIBLE only where no plan fits the budget as a
// resident one either (the reserved bytes are never fewer).
TEST(ExactStageTest, UnderAReservedBudgetOnlyAProofAtThatBudgetCounts) {
  int infeasible = 0, cells = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const SmallTrace small = RandomSmallTrace(seed, {4, 16, 10});
    const Trace trace = *ValidateTrace(small.trace);
    for (int64_t percent : {0, 10, 30}) {
      SCOPED_TRACE(absl::StrCat("seed ", seed, " at ", percent, "%"));
      const int64_t budget = Budget(trace, percent);
      PolicyOptions options;
      options.physics.allocator = AllocatorKind::kCaching;
      options.physics.budget_reserved = true;
      const PlanningResult planned = *RunPolicyWithinBudget(
          Policy::kSlackSwap, trace, small.hardware, budget, options);
      ++cells;
      if (planned.Outcome() != PlanOutcome::kInfeasible) continue;
      ++infeasible;
      EXPECT_FALSE(PlanOptimum(trace, small.hardware, budget, OptimumOptions())
                       ->feasible);
    }
  }
  std::cout << cells << " cells, " << infeasible << " INFEASIBLE\n";
  EXPECT_GT(infeasible, 0);
}

// A one-layer GPT-2 XL (6 sequences of 4,096 tokens, flash attention) on the
// A100 at 10% above its floor, 13 tensors, where the gap target is below the
// optimum: without its exact stage the search spends its whole budget
// (before the stage and the room trades it ended there 0.94% above the
// optimum, which differs from its plan in 8 of 13 decisions); with the
// stage it ends at the optimum, proven, in a few thousand replays.
// (Section 15's preset cell of seed 713.)
TEST(ExactStageTest, EndsAtTheOptimumInAFractionOfTheBudget) {
  const Hardware a100 = *HardwarePreset("a100");
  const Trace trace = testing::OneLayerPreset("gpt2-xl", 6, 4096, a100);
  ASSERT_EQ(trace.num_tensors(), 13);
  const int64_t budget = Budget(trace, 10);
  const int64_t best =
      PlanOptimum(trace, a100, budget, OptimumOptions())->replay.iteration_ns;
  PlannerOptions passes;
  passes.search_time_ms = 0;
  const PlanningResult start = *PlanSlackSwap(trace, a100, budget, passes);
  AnytimeOptions options;
  options.max_replays = AnytimeReplays(trace, PlannerOptions());
  // (The gap target's: below the optimum here, never met.)
  options.target_ns =
      start.lower_bound.iteration_ns + start.lower_bound.iteration_ns / 200;
  ASSERT_LT(options.target_ns, best);
  for (bool exact : {false, true}) {
    SCOPED_TRACE(exact ? "with the stage" : "without");
    options.exact_stage = exact;
    Plan plan = start.plan;
    SimulationResult replay = start.replay;
    const AnytimeResult r =
        SearchAnytime(trace, a100, budget, options, plan, replay);
    ASSERT_TRUE(replay.feasible);
    EXPECT_GE(replay.iteration_ns, best);
    EXPECT_EQ(r.exhaustive, exact);
    if (exact) {
      EXPECT_EQ(replay.iteration_ns, best);
      EXPECT_LT(r.replays, options.max_replays / 10);
    } else {
      EXPECT_GT(r.replays, options.max_replays * 9 / 10);
    }
  }
}

// The branch and bound past its limit (seed 712 of the small kind at its
// floor: 104,832 replays to finish) gives up and keeps its best plan, never
// slower than the incumbent; without the limit it finishes, no slower.
TEST(ExactSearchTest, GivesUpPastItsLimitKeepingItsBestPlan) {
  const SmallTrace small = RandomSmallTrace(712, {4, 16, 10});
  const Trace trace = *ValidateTrace(small.trace);
  const int64_t budget = Budget(trace, 0);
  PlannerOptions passes;
  passes.search_time_ms = 0;
  const PlanningResult start =
      *PlanSlackSwap(trace, small.hardware, budget, passes);
  ASSERT_TRUE(start.feasible);
  ExactSearchOptions limited;
  limited.max_cost_millis = 2000 * kReplayMillis;
  const ExactSearchResult cut = *SearchExact(
      trace, small.hardware, budget, limited, &start.plan, &start.replay);
  EXPECT_FALSE(cut.finished);
  ASSERT_TRUE(cut.found);
  EXPECT_LE(cut.replay.iteration_ns, start.replay.iteration_ns);
  EXPECT_GT(cut.cost_millis, limited.max_cost_millis);
  EXPECT_LE(cut.cost_millis, limited.max_cost_millis +
                                 MaxReplayMillis(trace, small.hardware, {}));
  const ExactSearchResult all =
      *SearchExact(trace, small.hardware, budget, ExactSearchOptions(),
                   &start.plan, &start.replay);
  EXPECT_TRUE(all.finished);
  EXPECT_GT(all.replays, cut.replays);
  EXPECT_LE(all.replay.iteration_ns, cut.replay.iteration_ns);
  // The replay it gives is its plan's.
  SimulationOptions sim;
  sim.budget_bytes = budget;
  EXPECT_EQ(Simulate(trace, small.hardware, all.best, sim)->iteration_ns,
            all.replay.iteration_ns);
}

}  // namespace
}  // namespace slackswap
