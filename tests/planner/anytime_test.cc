// The anytime search (planner/anytime.h) beyond its first local optimum.
#include "planner/anytime.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "planner/lower_bound.h"
#include "planner/slackswap.h"
#include "simulator/event_model.h"
#include "simulator/medium_traces.h"
#include "simulator/trace_validation.h"

namespace slackswap {
namespace {

// A random DAG (docs/results.md section 15's "uplink" kind, from a held-out
// seed) behind an uplink shared by two GPUs, `percent` of the way from its
// floor to its all-keep peak.
struct UplinkCase {
  Trace trace;
  Hardware hardware;
  int64_t budget = 0;
};

UplinkCase UplinkDag(uint64_t seed, int64_t percent) {
  MediumTraceOptions medium;
  medium.shape = MediumShape::kDag;
  const MediumTrace m = RandomMediumTrace(seed, medium);
  UplinkCase c;
  c.trace = *ValidateTrace(m.trace);
  c.hardware = m.hardware;
  c.hardware.gpus_per_uplink = 2;
  c.hardware.uplink_d2h_bytes_per_second = c.hardware.d2h_bytes_per_second;
  c.hardware.uplink_h2d_bytes_per_second = c.hardware.h2d_bytes_per_second;
  const int64_t floor = ComputeProvenFloor(c.trace).bytes;
  c.budget = floor + (AllKeepPeakBytes(c.trace) - floor) * percent / 100;
  return c;
}

// The anytime search from the passes' plan with the default budget: its
// plan's iteration time (checked by a replay of its own; the search within
// its budget).
int64_t Search(const UplinkCase& c, const AnytimeOptions& defaults) {
  PlannerOptions passes;
  passes.search_time_ms = 0;
  const PlanningResult start =
      *PlanSlackSwap(c.trace, c.hardware, c.budget, passes);
  AnytimeOptions options = defaults;
  options.max_replays = AnytimeReplays(c.trace, PlannerOptions());
  EXPECT_GT(options.max_replays, 0);
  Plan plan = start.plan;
  SimulationResult replay = start.replay;
  const int64_t replays =
      SearchAnytime(c.trace, c.hardware, c.budget, options, plan, replay)
          .replays;
  EXPECT_TRUE(replay.feasible);
  EXPECT_LE(replays, options.max_replays);
  SimulationOptions sim;
  sim.budget_bytes = c.budget;
  const SimulationResult check = *Simulate(c.trace, c.hardware, plan, sim);
  EXPECT_TRUE(check.feasible);
  EXPECT_EQ(check.iteration_ns, replay.iteration_ns);
  return replay.iteration_ns;
}

// The search's plan without and with one of its stages (`stage`), all else
// as in `options`: the iteration times.
struct WithoutAndWith {
  int64_t without = 0;
  int64_t with = 0;
};
WithoutAndWith Stage(const UplinkCase& c, AnytimeOptions options,
                     bool AnytimeOptions::*stage) {
  WithoutAndWith r;
  options.*stage = false;
  r.without = Search(c, options);
  options.*stage = true;
  r.with = Search(c, options);
  return r;
}

// At 10% on seed 1601 the local search from the passes' plan stops in a
// local optimum with long prefetch and memory waits; the second start
// leaves it: faster by more than 1%, within the same budget.
TEST(AnytimeSearchTest, ASecondStartLeavesTheFirstLocalOptimum) {
  AnytimeOptions options;
  // (The case is one for the local search's fixed order of moves.)
  options.adaptive_order = false;
  const auto [one, two] =
      Stage(UplinkDag(1601, 10), options, &AnytimeOptions::second_start);
  EXPECT_LT(two, one - one / 100) << one << " -> " << two;
}

// At its floor on seed 2409 neither the passes' plan nor the plan that
// frees everything completes. Without the genetic round first, the local
// search spends a quarter of the budget making the plan complete, change by
// change, and the rest converges from a worse start: slower by more than 5%.
// (Seed 2404 showed it until the kicks ran right after the local search:
// they now make up for the worse start there. Over seeds 2400-2450 at their
// floor the round runs first on 13, and gains on 10 of them.)
TEST(AnytimeSearchTest, WhereNoStartCompletesAGeneticRoundRunsFirst) {
  const UplinkCase c = UplinkDag(2409, 0);
  PlannerOptions passes;
  passes.search_time_ms = 0;
  ASSERT_FALSE(PlanSlackSwap(c.trace, c.hardware, c.budget, passes)->feasible);
  const auto [without, with] =
      Stage(c, AnytimeOptions(), &AnytimeOptions::genetic_first);
  EXPECT_LT(with, without - without * 5 / 100) << without << " -> " << with;
}

// At 2% on seed 1241, with the moves in their fixed order the local search
// ends at a plan the genetic rounds and kicks do not improve much. With the
// kinds of move kept most often tried first it takes another path: faster
// by more than 2%. (Seed 1203 at 10% showed it until the local search
// stopped replaying moves that replay as the plan: the fixed order wasted
// fewer replays, and the gain there fell to 1%. Over seeds 1200-1249 at 2%
// and 10% the two orders are even on average; section 15 of
// docs/results.md measures the whole search.)
TEST(AnytimeSearchTest, TheMovesKeptMostOftenAreTriedFirst) {
  const auto [fixed, adaptive] = Stage(UplinkDag(1241, 2), AnytimeOptions(),
                                       &AnytimeOptions::adaptive_order);
  EXPECT_LT(adaptive, fixed - fixed * 2 / 100) << fixed << " -> " << adaptive;
}

// At 2% on seed 1226 genetic rounds from the local search's optimum find
// little. Kicks instead (a few tensors near one changed at once, then the
// local search near them) leave the local optimum: faster by more than 3%.
TEST(AnytimeSearchTest, KicksLeaveTheGeneticRoundsLocalOptimum) {
  const auto [rounds, kicks] =
      Stage(UplinkDag(1226, 2), AnytimeOptions(), &AnytimeOptions::kicks);
  EXPECT_LT(kicks, rounds - rounds * 3 / 100) << rounds << " -> " << kicks;
}

}  // namespace
}  // namespace slackswap
