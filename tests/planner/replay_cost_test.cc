// What the searches charge for a replay (planner/replay_cost.h), and the
// genetic search's cut-off children: the same search for less work.
#include "planner/replay_cost.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"
#include "planner/basic_plans.h"
#include "planner/genetic.h"
#include "planner/lower_bound.h"
#include "planner/polish.h"
#include "planner/slackswap.h"
#include "simulator/event_model.h"
#include "simulator/medium_traces.h"
#include "simulator/trace_validation.h"
#include "tests/planner/medium_cases.h"

namespace slackswap {
namespace {

using Case = ::slackswap::testing::MediumCase;

// Medium traces 10% of the way from their floor to their all-keep peak,
// where plans stall and most children lose to the pool.
std::vector<Case> MediumCases() {
  return {testing::MakeMediumCase(MediumShape::kChain, 11, 80, 10),
          testing::MakeMediumCase(MediumShape::kDag, 11, 80, 10)};
}

// The genetic searches' seeds: SlackSwap's plan and the all-keep plan.
std::vector<Plan> SlackSwapAndAllKeep(const Case& c) {
  return {PlanSlackSwap(c.trace, c.hardware, c.budget, PlannerOptions())->plan,
          Plan::AllKeep(c.trace)};
}

// The work of a replay of `c` that went through `events` events.
int64_t Work(const Case& c, int64_t events) {
  return ReplayElements(c.trace) + kEventElements * events;
}

TEST(ReplayCostTest, AReplayCostsItsElementsAndItsEvents) {
  int stalling = 0;
  for (const Case& c : MediumCases()) {
    SCOPED_TRACE(c.trace.name);
    EXPECT_EQ(ReplayElements(c.trace),
              c.trace.num_ops() + c.trace.num_tensors() +
                  static_cast<int64_t>(c.trace.uses.items.size()) +
                  static_cast<int64_t>(c.trace.recompute_inputs.items.size()) +
                  kReplayOverheadElements);
    const int64_t nominal = NominalReplayWork(c.trace);
    EXPECT_EQ(nominal,
              ReplayElements(c.trace) +
                  kEventElements * (c.trace.num_ops() + c.trace.num_tensors() +
                                    c.trace.num_fixed_transfers()));
    SimulationOptions sim;
    sim.budget_bytes = c.budget;
    // All kept, without a budget: its start and one event per step.
    SimulationOptions unlimited;
    const SimulationResult keep =
        *Simulate(c.trace, c.hardware, Plan::AllKeep(c.trace), unlimited);
    ASSERT_TRUE(keep.feasible);
    EXPECT_EQ(keep.events, c.trace.num_ops() + 1);
    EXPECT_EQ(ReplayCostMillis(c.trace, keep),
              kReplayMillis * Work(c, c.trace.num_ops() + 1) / nominal);

    const Plan plan =
        PlanSlackSwap(c.trace, c.hardware, c.budget, PlannerOptions())->plan;
    const SimulationResult full = *Simulate(c.trace, c.hardware, plan, sim);
    ASSERT_TRUE(full.feasible);
    // Its rebuilds and copies add events beyond the operators'.
    EXPECT_GT(full.events, c.trace.num_ops() + 1);
    EXPECT_EQ(Simulate(c.trace, c.hardware, plan, sim)->events, full.events);
    const int64_t full_cost = ReplayCostMillis(c.trace, full);
    EXPECT_EQ(full_cost, kReplayMillis * Work(c, full.events) / nominal);
    EXPECT_GT(full_cost, ReplayCostMillis(c.trace, keep));
    // The plan stalls: cutoffs between its steps' time and its iteration
    // stop it part-way, later ones after more events and at a higher cost.
    const int64_t steps = c.trace.ideal_ns + full.recompute_ns;
    if (steps == full.iteration_ns) continue;
    ++stalling;
    int64_t first_events = 0, last_events = 0, last_cost = 0;
    for (int64_t cutoff : {int64_t{1}, steps + (full.iteration_ns - steps) / 10,
                           steps + (full.iteration_ns - steps) / 2,
                           steps + (full.iteration_ns - steps) * 9 / 10,
                           full.iteration_ns - 1}) {
      sim.cutoff_ns = cutoff;
      const SimulationResult cut = *Simulate(c.trace, c.hardware, plan, sim);
      ASSERT_TRUE(cut.cut_off) << cutoff;
      ASSERT_GE(cut.events, last_events) << cutoff;
      if (first_events == 0) first_events = cut.events;
      EXPECT_LT(cut.events, full.events) << cutoff;
      const int64_t cost = ReplayCostMillis(c.trace, cut);
      EXPECT_EQ(cost, std::max<int64_t>(
                          kReplayMillis * Work(c, cut.events) / nominal, 1));
      EXPECT_GE(cost, last_cost) << cutoff;
      EXPECT_LT(cost, full_cost) << cutoff;
      last_events = cut.events;
      last_cost = cost;
    }
    // The first cutoff stops it at its start; the late ones after many
    // events.
    EXPECT_EQ(first_events, 1);
    EXPECT_GT(last_events, 2);
    // A candidate turned away before its replay (no event) costs the
    // overhead alone; a replay stopped without a place, a nominal replay.
    SimulationResult turned_away;
    turned_away.feasible = false;
    turned_away.cut_off = true;
    turned_away.infeasibility.op = 0;
    EXPECT_EQ(ReplayCostMillis(c.trace, turned_away),
              std::max<int64_t>(
                  kReplayMillis * kReplayOverheadElements / nominal, 1));
    SimulationResult stopped;
    stopped.feasible = false;
    stopped.stopped = true;
    EXPECT_EQ(ReplayCostMillis(c.trace, stopped), kReplayMillis);
  }
  EXPECT_GE(stalling, 1);
}

TEST(GeneticCutoffTest, CuttingChildrenOffChangesNothingButTheWork) {
  int64_t cut = 0;
  for (const Case& c : MediumCases()) {
    SCOPED_TRACE(c.trace.name);
    const std::vector<Plan> seeds = SlackSwapAndAllKeep(c);
    GeneticOptions options;
    options.max_evaluations = 1500;
    options.seed = 3;
    const GeneticResult with =
        RunGenetic(c.trace, c.hardware, c.budget, seeds, options);
    options.cut_off_children = false;
    const GeneticResult without =
        RunGenetic(c.trace, c.hardware, c.budget, seeds, options);
    EXPECT_EQ(with.best.decisions, without.best.decisions);
    EXPECT_EQ(with.best.prefetch_issue_op, without.best.prefetch_issue_op);
    EXPECT_EQ(with.replay.iteration_ns, without.replay.iteration_ns);
    EXPECT_EQ(with.evaluations, without.evaluations);
    EXPECT_EQ(without.replays_cut, 0);
    cut += with.replays_cut;
  }
  EXPECT_GT(cut, 0);
}

TEST(GeneticCutoffTest, ChargingCutReplaysBuysMoreOfThem) {
  for (const Case& c : MediumCases()) {
    SCOPED_TRACE(c.trace.name);
    const std::vector<Plan> seeds = {
        PlanSlackSwap(c.trace, c.hardware, c.budget, PlannerOptions())->plan};
    GeneticOptions options;
    options.max_evaluations = 1500;
    options.charge_partial_replays = true;
    const GeneticResult charged =
        RunGenetic(c.trace, c.hardware, c.budget, seeds, options);
    EXPECT_LE(charged.evaluations, options.max_evaluations);
    EXPECT_GT(charged.replays_run, options.max_evaluations);
    // Deterministic: the budget cuts the same sequence at the same point.
    const GeneticResult again =
        RunGenetic(c.trace, c.hardware, c.budget, seeds, options);
    EXPECT_EQ(charged.replays_run, again.replays_run);
    EXPECT_EQ(charged.best.decisions, again.best.decisions);
    // Never worse than the same search counting every replay as one.
    options.charge_partial_replays = false;
    const GeneticResult counted =
        RunGenetic(c.trace, c.hardware, c.budget, seeds, options);
    EXPECT_EQ(counted.replays_run, options.max_evaluations);
    ASSERT_TRUE(counted.replay.feasible);
    EXPECT_LE(charged.replay.iteration_ns, counted.replay.iteration_ns);
  }
}

TEST(PolishCostTest, StaysWithinItsBudgetInChargedReplays) {
  for (const Case& c : MediumCases()) {
    SCOPED_TRACE(c.trace.name);
    const PlanningResult start = testing::PassesPlan(c, /*polish=*/false);
    for (int64_t budget : {int64_t{10}, int64_t{200}}) {
      PolishOptions options;
      options.max_replays = budget;
      Plan plan = start.plan;
      SimulationResult replay = start.replay;
      const PolishResult r =
          Polish(c.trace, c.hardware, c.budget, options, plan, replay);
      EXPECT_LE(r.replays, budget);
      EXPECT_GT(r.replays, 0);
      // The plan it returns replays as it says.
      SimulationOptions sim;
      sim.budget_bytes = c.budget;
      const SimulationResult check = *Simulate(c.trace, c.hardware, plan, sim);
      EXPECT_EQ(check.feasible, replay.feasible);
      if (check.feasible) {
        EXPECT_EQ(check.iteration_ns, replay.iteration_ns);
      }
    }
  }
}

// With earliest_issue (the anytime search's rounds) every plan's swaps are
// at the earliest points of their windows; children that repeat a plan the
// pool or their generation holds are bred again, so the search replays
// fewer repeats; and it is deterministic.
TEST(GeneticEarliestTest, SwapsAtTheEarliestAndRepeatsBredAgain) {
  for (const Case& c : MediumCases()) {
    SCOPED_TRACE(c.trace.name);
    const std::vector<Plan> seeds = SlackSwapAndAllKeep(c);
    GeneticOptions options;
    options.max_evaluations = 1500;
    options.charge_partial_replays = true;
    options.earliest_issue = true;
    const GeneticResult with =
        RunGenetic(c.trace, c.hardware, c.budget, seeds, options);
    ASSERT_TRUE(with.replay.feasible);
    EXPECT_EQ(with.best.prefetch_issue_op,
              IssuedAtEarliest(c.trace, with.best).prefetch_issue_op);
    EXPECT_GT(with.bred_again, 0);
    const GeneticResult again =
        RunGenetic(c.trace, c.hardware, c.budget, seeds, options);
    EXPECT_EQ(with.best.decisions, again.best.decisions);
    EXPECT_EQ(with.replays_run, again.replays_run);
    EXPECT_EQ(with.bred_again, again.bred_again);
    // The genetic policy's default: issue points as drawn, no breeding again.
    options.earliest_issue = false;
    const GeneticResult drawn =
        RunGenetic(c.trace, c.hardware, c.budget, seeds, options);
    EXPECT_EQ(drawn.bred_again, 0);
  }
}

}  // namespace
}  // namespace slackswap
