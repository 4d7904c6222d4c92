// The searches on several threads (base/workers.h): the improvement step and
// the anytime search give the same plan at the same cost on any number of
// threads, so every replica plans the same whatever its cores.
#include <vector>

#include "base/workers.h"
#include "gtest/gtest.h"
#include "planner/anytime.h"
#include "planner/lower_bound.h"
#include "planner/polish.h"
#include "planner/slackswap.h"
#include "simulator/event_model.h"
#include "simulator/medium_traces.h"
#include "simulator/small_traces.h"
#include "simulator/trace_validation.h"
#include "tests/planner/medium_cases.h"

namespace slackswap {
namespace {

using Case = ::slackswap::testing::MediumCase;

// Medium traces of each shape near their floor (2% and 10% of the way to
// the all-keep peak), where the passes' plans leave much to improve.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (MediumShape shape :
       {MediumShape::kChain, MediumShape::kBranches, MediumShape::kDag}) {
    for (int64_t percent : {2, 10})
      cases.push_back(testing::MakeMediumCase(shape, 23, 120, percent));
  }
  return cases;
}

void ExpectSamePlan(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.decisions, b.decisions);
  EXPECT_EQ(a.prefetch_issue_op, b.prefetch_issue_op);
}

// The improvement step from `start` with `replays`, on one thread without a
// team and on teams of each of `threads`: the same plan, changes and cost.
// Returns the result on one thread.
PolishResult PolishOnThreads(const Case& c, const PlanningResult& start,
                             int64_t replays, std::vector<int> threads) {
  PolishOptions options;
  options.max_replays = replays;
  Plan alone_plan = start.plan;
  SimulationResult alone_replay = start.replay;
  const PolishResult alone =
      Polish(c.trace, c.hardware, c.budget, options, alone_plan, alone_replay);
  for (int n : threads) {
    Workers workers(n);
    options.workers = &workers;
    Plan plan = start.plan;
    SimulationResult replay = start.replay;
    const PolishResult r =
        Polish(c.trace, c.hardware, c.budget, options, plan, replay);
    ExpectSamePlan(plan, alone_plan);
    EXPECT_EQ(r.changes, alone.changes) << n << " threads";
    EXPECT_EQ(r.replays, alone.replays) << n << " threads";
    EXPECT_EQ(r.converged, alone.converged) << n << " threads";
    EXPECT_EQ(replay.feasible, alone_replay.feasible);
    EXPECT_EQ(replay.iteration_ns, alone_replay.iteration_ns);
    EXPECT_LE(r.replays, replays);
  }
  return alone;
}

TEST(SearchThreadsTest, PolishKeepsTheSameChangesAtTheSameCost) {
  int changes = 0;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.trace.name + " at " + std::to_string(c.budget));
    const PlanningResult start = testing::PassesPlan(c, /*polish=*/false);
    for (int64_t replays : {int64_t{25}, int64_t{400}})
      changes += PolishOnThreads(c, start, replays, {2, 3}).changes;
  }
  EXPECT_GT(changes, 20);  // the cases do improve
}

// Where the budget covers a whole scan (steepest descent) and, on small
// traces, every pair of changes, those scans too replay their candidates
// ahead on the team and keep what one thread would, at the same cost.
TEST(SearchThreadsTest, TheSteepestScanPairsAndTradesAreTheSameOnAnyThreads) {
  std::vector<Case> cases = Cases();
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    SmallTraceOptions small;
    small.min_tensors = 8;
    small.max_tensors = 14;
    const SmallTrace t = RandomSmallTrace(seed, small);
    Case c{*ValidateTrace(t.trace), t.hardware, 0};
    const int64_t floor = ComputeProvenFloor(c.trace).bytes;
    c.budget = floor + (AllKeepPeakBytes(c.trace) - floor) / 10;
    cases.push_back(std::move(c));
  }
  int changes = 0, converged = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.trace.name + " at " + std::to_string(c.budget));
    const PlanningResult start = testing::PassesPlan(c, /*polish=*/false);
    const PolishResult alone = PolishOnThreads(c, start, 3000, {1, 2, 3});
    changes += alone.changes;
    converged += alone.converged;
  }
  EXPECT_GT(changes, 30);
  // A search converges only after a scan of the pairs (where its replays
  // cover them): on the small traces.
  EXPECT_GE(converged, 10);
}

TEST(SearchThreadsTest, TheAnytimeSearchGivesTheSamePlanOnOneThreadOrThree) {
  int improved = 0;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.trace.name + " at " + std::to_string(c.budget));
    const PlanningResult start = testing::PassesPlan(c, /*polish=*/true);
    AnytimeOptions options;
    options.max_replays = 600;
    Plan one_plan = start.plan;
    SimulationResult one_replay = start.replay;
    options.threads = 1;
    const AnytimeResult one = SearchAnytime(c.trace, c.hardware, c.budget,
                                            options, one_plan, one_replay);
    improved += one.improved;
    options.threads = 3;
    Plan plan = start.plan;
    SimulationResult replay = start.replay;
    const AnytimeResult three =
        SearchAnytime(c.trace, c.hardware, c.budget, options, plan, replay);
    ExpectSamePlan(plan, one_plan);
    EXPECT_EQ(three.replays, one.replays);
    EXPECT_EQ(three.improved, one.improved);
    EXPECT_EQ(replay.iteration_ns, one_replay.iteration_ns);
  }
  EXPECT_GE(improved, 3);
}

// The planner itself: the same answer, statistics included, whatever
// PlannerOptions::search_threads says.
TEST(SearchThreadsTest, PlanSlackSwapGivesTheSameAnswerOnAnyThreads) {
  int searched = 0;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.trace.name + " at " + std::to_string(c.budget));
    PlannerOptions options;
    options.search_time_ms = 20;
    options.search_threads = 1;
    const PlanningResult one =
        *PlanSlackSwap(c.trace, c.hardware, c.budget, options);
    searched += one.stats.search_replays > 0;
    for (int threads : {2, 3, 0, 1000}) {  // (out of range: clamped)
      options.search_threads = threads;
      const PlanningResult r =
          *PlanSlackSwap(c.trace, c.hardware, c.budget, options);
      ExpectSamePlan(r.plan, one.plan);
      EXPECT_EQ(r.feasible, one.feasible);
      EXPECT_EQ(r.replay.iteration_ns, one.replay.iteration_ns);
      EXPECT_EQ(r.stats.search_replays, one.stats.search_replays);
      EXPECT_EQ(r.stats.search_improved, one.stats.search_improved);
    }
  }
  EXPECT_GE(searched, 4);
}

}  // namespace
}  // namespace slackswap
