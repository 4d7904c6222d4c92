// The anytime search (planner/anytime.h) beyond its first local optimum.
#include "planner/anytime.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "planner/lower_bound.h"
#include "planner/optimum.h"
#include "planner/replay_cost.h"
#include "planner/slackswap.h"
#include "simulator/event_model.h"
#include "simulator/medium_traces.h"
#include "simulator/small_traces.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"
#include "tests/planner/preset_traces.h"

namespace slackswap {
namespace {

// A random DAG (docs/results.md section 15's "dag" kind, from a held-out
// seed) on its GPU's own link, `percent` of the way from its floor to its
// all-keep peak.
struct UplinkCase {
  Trace trace;
  Hardware hardware;
  int64_t budget = 0;
};

UplinkCase Dag(uint64_t seed, int64_t percent) {
  MediumTraceOptions medium;
  medium.shape = MediumShape::kDag;
  const MediumTrace m = RandomMediumTrace(seed, medium);
  UplinkCase c;
  c.trace = *ValidateTrace(m.trace);
  c.hardware = m.hardware;
  const int64_t floor = ComputeProvenFloor(c.trace).bytes;
  c.budget = floor + (AllKeepPeakBytes(c.trace) - floor) * percent / 100;
  return c;
}

// The same DAG behind an uplink shared by two GPUs (section 15's "uplink"
// kind), at the same budget.
UplinkCase UplinkDag(uint64_t seed, int64_t percent) {
  UplinkCase c = Dag(seed, percent);
  c.hardware.gpus_per_uplink = 2;
  c.hardware.uplink_d2h_bytes_per_second = c.hardware.d2h_bytes_per_second;
  c.hardware.uplink_h2d_bytes_per_second = c.hardware.h2d_bytes_per_second;
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

// At 2% on seed 1257 the local search from the passes' plan stops in a
// local optimum; the second start leaves it: faster by more than 1%, within
// the same budget. (Seed 1601 at 10% showed it until the search issued its
// swaps at the earliest: docs/planner.md, "Issue points at the earliest".)
TEST(AnytimeSearchTest, ASecondStartLeavesTheFirstLocalOptimum) {
  AnytimeOptions options;
  // (The case is one for the local search's fixed order of moves.)
  options.adaptive_order = false;
  const auto [one, two] =
      Stage(UplinkDag(1257, 2), options, &AnytimeOptions::second_start);
  EXPECT_LT(two, one - one / 100) << one << " -> " << two;
}

// Step 1's local search from the passes' plan spends at most a quarter of
// the budget: 3/16, and where that ends short of a local optimum with a plan
// that completes, on to a quarter; the second start, the genetic rounds and
// the kicks spend the rest. Until stop 57 it went on to a local optimum or
// the end of the budget: on the held-out study's sets 2701-3801 the sum of
// losses fell from 211.2 to 147.9 with this step 1, the trades after a kick
// and two rounds on traces of at most 100 tensors (docs/planner.md, "Stop
// 57"). On seeds 1210-1219 at the floor, 2% and 10%, several cells reach
// the quarter (10 of the 30 with stop 59's larger limit, among them seed
// 1219 at all three) and every one spends its budget. (On seeds 1200-1209,
// used until stop 58, the larger 3/16 of stop 59's budget ends at a local
// optimum more often: 2 cells go on.)
TEST(AnytimeSearchTest, StepOneSpendsAtMostAQuarterOfTheBudget) {
  int32_t went_on = 0;
  for (uint64_t seed = 1210; seed < 1220; ++seed) {
    for (const int64_t percent : {0, 2, 10}) {
      const UplinkCase c = UplinkDag(seed, percent);
      PlannerOptions passes;
      passes.search_time_ms = 0;
      const PlanningResult start =
          *PlanSlackSwap(c.trace, c.hardware, c.budget, passes);
      AnytimeOptions options;
      options.max_replays = AnytimeReplays(c.trace, PlannerOptions());
      Plan plan = start.plan;
      SimulationResult replay = start.replay;
      const AnytimeResult r =
          SearchAnytime(c.trace, c.hardware, c.budget, options, plan, replay);
      SCOPED_TRACE(::testing::Message() << seed << " at " << percent << "%");
      EXPECT_LE(r.step_one_replays, options.max_replays / 4);
      EXPECT_GE(r.replays, options.max_replays - options.max_replays / 100);
      went_on += r.step_one_replays > options.max_replays * 3 / 16;
    }
  }
  EXPECT_GE(went_on, 3);
}

// After a kick that changes the plan, the trades over the whole plan: its
// local search moved the tensors near it alone, and the change may open a
// trade elsewhere. At its floor on seed 1203 they make the plan faster by
// more than 2% (5.46%); over seeds 1200-1259 at the floor, 2% and 10% they
// make 26 plans faster and 6 slower, 10.5% net, with stop 59's larger limit
// (16 and 10, 6.8% net, with stop 58's; 17 and 6, 4.7% net, at stop 57;
// seed 1258 at its floor, 4.43% faster,
// showed it until the pair scan took a quarter of what is left).
TEST(AnytimeSearchTest, TradesAfterAKickFindWhatItOpened) {
  const auto [without, with] =
      Stage(UplinkDag(1203, 0), AnytimeOptions(), &AnytimeOptions::kick_trades);
  EXPECT_LT(with, without - without * 2 / 100) << without << " -> " << with;
}

// At its floor, section 15's DAG of seed 9014 (254 tensors) has no plan that
// completes after step 1, whose local search stopped at its share, not at a
// local optimum. A genetic round then found none either, and the local
// search after it completed the plan only as the budget ran out (1.15 s;
// the reference's genetic search, from that plan, 0.78 s). Going on with
// the local search instead, the plan completes early enough to improve:
// faster by more than 20% (33.2%: 0.77 s at stop 58; 22.3% with stop 59's
// larger limit, 0.76 s against 0.98 s). Of the 6,140 cells of section 15's
// sets 201, 1501-2601, 8001, 9001 and 10001 it was the only one the change
// moved (docs/planner.md, "Stop 58").
TEST(AnytimeSearchTest, WhereNoPlanCompletesTheLocalSearchGoesOnFirst) {
  const auto [rounds, on] = Stage(Dag(9014, 0), AnytimeOptions(),
                                  &AnytimeOptions::search_until_complete);
  EXPECT_LT(on, rounds - rounds / 5) << rounds << " -> " << on;
}

// At its floor on seed 1223 neither the passes' plan nor the plan that
// frees everything completes. Without the genetic round first, the local
// search spends its budget making the plan complete, change by change, and
// finds none that does; with the round first the search ends with a plan
// that completes. (Seed 2404 showed a plan more than 5% faster with the
// round first until the search issued its swaps at the earliest.)
TEST(AnytimeSearchTest, WhereNoStartCompletesAGeneticRoundRunsFirst) {
  const UplinkCase c = UplinkDag(1223, 0);
  PlannerOptions passes;
  passes.search_time_ms = 0;
  const PlanningResult start =
      *PlanSlackSwap(c.trace, c.hardware, c.budget, passes);
  ASSERT_FALSE(start.feasible);
  for (bool first : {false, true}) {
    AnytimeOptions options;
    options.genetic_first = first;
    options.max_replays = AnytimeReplays(c.trace, PlannerOptions());
    Plan plan = start.plan;
    SimulationResult replay = start.replay;
    SearchAnytime(c.trace, c.hardware, c.budget, options, plan, replay);
    EXPECT_EQ(replay.feasible, first) << "genetic round first: " << first;
  }
  // With it, the search's own helper checks the plan by a replay.
  Search(c, AnytimeOptions());
}

// At its floor on seed 1241, with the moves in their fixed order the local
// search ends at a plan the genetic rounds and kicks do not improve much.
// With the kinds of move kept most often tried first it takes another path:
// faster by more than 2% (5.23%). (Seed 1234 at 2% showed it until the
// search's limit rose to 340,000 units a ms, stop 58; seed 1244 at its floor
// until it rose to 295,000, stop 55; seed 1214 at 10% until the searches
// charged each replay its events, stop 52; seeds 1203 at 10% and 1241 at 2%
// before the local search stopped replaying moves that replay as the plan,
// and before it issued its swaps at the earliest. Over seeds 1200-1259 at
// the floor, 2% and 10% the two orders are about even: 55 plans faster, 50
// slower, the gains and losses summing to 5.9% with stop 59's larger limit
// (53 and 52, -14.3%, at stop 58); section 15 of docs/results.md measures the
// whole search.)
TEST(AnytimeSearchTest, TheMovesKeptMostOftenAreTriedFirst) {
  const auto [fixed, adaptive] = Stage(UplinkDag(1241, 0), AnytimeOptions(),
                                       &AnytimeOptions::adaptive_order);
  EXPECT_LT(adaptive, fixed - fixed * 2 / 100) << fixed << " -> " << adaptive;
}

// At its floor on seed 1203 more genetic rounds find little. Kicks instead
// (a few tensors near one changed at once, then the local search near them)
// leave the local optimum: faster by more than 2% (6.32%). Over seeds
// 1200-1259 at the floor, 2% and 10% the kicks make 84 plans faster and 36
// slower, the gains and losses summing to 79.9%, with stop 59's larger limit
// (71 and 35, 56.6%, with stop 58's; 72 and 32, 50.0%, before it; 60 and 11
// before stop 55's; 46 and 5 over seeds
// 1200-1329 at the floor and 2% when they came in). (Seed 1257 at its floor
// showed it until stop 58; seed 1202 at 2% until the searches charged each
// replay its events, stop 52; seed 1258 at its floor until a quarter of the
// kicks exchanged decisions, below; before it, seed 1226 until the search's
// limit rose to 72,000 element-replays a ms. On the held-out study's fast
// set the kicks lowered the sum of losses at 150 ms from 127.5 to 70.2:
// docs/planner.md.)
TEST(AnytimeSearchTest, KicksLeaveTheGeneticRoundsLocalOptimum) {
  const auto [rounds, kicks] =
      Stage(UplinkDag(1203, 0), AnytimeOptions(), &AnytimeOptions::kicks);
  EXPECT_LT(kicks, rounds - rounds * 2 / 100) << rounds << " -> " << kicks;
}

// A quarter of the kicks exchange decisions: a tensor near the one drawn
// takes another decision d, and one within 8 of it that had d takes the
// first one's (the memory one frees, the other spends). At its floor on
// seed 1250 they leave the local optimum where the other kicks end: faster
// by more than 2% (2.47%). Over seeds 1200-1259 at the floor, 2% and 10%
// they make 58 plans faster and 53 slower, 8.6% net, with stop 59's larger
// limit; 57 and 45, 4.2% net, with stop 58's; 56 and 42, 10.9% net, with
// stop 57's shorter step 1 (anytime.cc;
// seed 1221 at 2% showed it until then); 52 and
// 46, 1.1% net, from stop 55's larger limit (46 and 20, 21.4% net, before
// it, when seed 1214 at 10% showed it; 24 and 11, 8.6%, when they came in;
// seed 1257 at its floor showed it until the searches charged each replay
// its events, stop 52); on the held-out study's fast set they lowered the
// mean sum of losses over seven limits from 76.1 to 70.9 (docs/planner.md).
TEST(AnytimeSearchTest, KicksThatExchangeDecisionsLeaveWhereTheOthersEnd) {
  const auto [without, with] = Stage(UplinkDag(1250, 0), AnytimeOptions(),
                                     &AnytimeOptions::exchange_kicks);
  EXPECT_LT(with, without - without * 2 / 100) << without << " -> " << with;
}

// On traces of at most 16 tensors a kick's local search may move every
// tensor, and the kicks wait for a second genetic round: a one-layer
// BERT-Large (batch 5, 4,096 tokens: 13 tensors) on the A100, 30% of the
// way from its floor to its all-keep peak (the held-out study's seed set
// 2601), ended 1.34% above the exact optimum with kicks after the first
// round. The search without its exact stage (which finds the optimum
// first: exact_stage_test.cc) now ends within 0.5% of it.
TEST(AnytimeSearchTest, OnSmallTracesTheKicksWaitForASecondRound) {
  const Hardware a100 = *HardwarePreset("a100");
  const Trace trace = testing::OneLayerPreset("bert-large", 5, 4096, a100);
  ASSERT_EQ(trace.num_tensors(), 13);
  const int64_t floor = ComputeProvenFloor(trace).bytes;
  const int64_t budget = floor + (AllKeepPeakBytes(trace) - floor) * 30 / 100;
  const PlanningResult optimum =
      *PlanOptimum(trace, a100, budget, OptimumOptions());
  ASSERT_TRUE(optimum.feasible);
  // (Without the exact stage, which would find the optimum first.)
  AnytimeOptions options;
  options.exact_stage = false;
  const int64_t planned = Search({trace, a100, budget}, options);
  const int64_t best = optimum.replay.iteration_ns;
  EXPECT_LE(planned, best + best / 200) << planned << " against " << best;
}

// At 2% on seed 1221 the search with every swap issued at the earliest
// (where that is never slower: docs/planner.md, "Issue points at the
// earliest") spends its replays on decisions alone and ends faster by more
// than 5% (7.4% with stop 59's larger limit; 11.8% from stop 55's, 8.6%
// before it) than the search that also moves issue points. Over seeds
// 1200-1259 at the floor, 2% and 10% it made 97 plans faster and 34 slower
// (before stop 55).
// (Seed 1219 showed it until step 2's genetic round took 7/12 of what is
// left and stalled after 30 generations: 4.0% now.)
TEST(AnytimeSearchTest, SwapsIssuedAtTheEarliestLeaveTheReplaysToDecisions) {
  const UplinkCase c = UplinkDag(1221, 2);
  const auto [moving, earliest] =
      Stage(c, AnytimeOptions(), &AnytimeOptions::earliest_issue);
  EXPECT_LT(earliest, moving - moving * 5 / 100)
      << moving << " -> " << earliest;
}

// The kicks run several per thread at once, drawn ahead from the plan as it
// is; those drawn after one that improved it stop as soon as it does (or
// never start) and are drawn again, as are those whose local search would
// get another budget near the end. At 2% on seed 1221, where three kicks
// improve the plan (four before stop 55's larger limit), the same plan and
// charge on one, two or three threads.
// (Seed 1226, where two did, until the default limit went from 150 to
// 160 ms: none does there now.)
TEST(AnytimeSearchTest, KicksGiveTheSamePlanOnAnyThreads) {
  const UplinkCase c = UplinkDag(1221, 2);
  PlannerOptions passes;
  passes.search_time_ms = 0;
  const PlanningResult start =
      *PlanSlackSwap(c.trace, c.hardware, c.budget, passes);
  AnytimeOptions options;
  options.max_replays = AnytimeReplays(c.trace, PlannerOptions());
  std::vector<Plan> plans;
  std::vector<AnytimeResult> results;
  for (int threads : {1, 2, 3}) {
    options.threads = threads;
    Plan plan = start.plan;
    SimulationResult replay = start.replay;
    results.push_back(
        SearchAnytime(c.trace, c.hardware, c.budget, options, plan, replay));
    plans.push_back(plan);
  }
  EXPECT_GE(results[0].kicks_kept, 2);
  for (size_t i = 1; i < plans.size(); ++i) {
    EXPECT_EQ(plans[i].decisions, plans[0].decisions) << i + 1 << " threads";
    EXPECT_EQ(plans[i].prefetch_issue_op, plans[0].prefetch_issue_op);
    EXPECT_EQ(results[i].replays, results[0].replays);
    EXPECT_EQ(results[i].kicks_kept, results[0].kicks_kept);
  }
}

// The search's budget: search_time_ms of kSearchWorkPerMs, in nominal
// replays of the trace, each counted as at least kMinNominalReplayWork. A
// trace of a few tensors is under that floor and gets fewer replays than
// its own nominal replay would give; a medium trace is above it.
TEST(AnytimeSearchTest, TheBudgetCountsATinyTracesReplaysAtTheFloor) {
  const PlannerOptions options;
  const double work = options.search_time_ms * kSearchWorkPerMs;
  const Trace tiny = *ValidateTrace(RandomSmallTrace(7, {4, 6, 10}).trace);
  ASSERT_LT(NominalReplayWork(tiny), kMinNominalReplayWork);
  EXPECT_EQ(AnytimeReplays(tiny, options),
            static_cast<int64_t>(work / kMinNominalReplayWork));
  const UplinkCase medium = UplinkDag(1221, 2);
  ASSERT_GT(NominalReplayWork(medium.trace), kMinNominalReplayWork);
  EXPECT_EQ(AnytimeReplays(medium.trace, options),
            static_cast<int64_t>(work / NominalReplayWork(medium.trace)));
}

}  // namespace
}  // namespace slackswap
