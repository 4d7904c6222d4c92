// What one hostile request must not do to a planner: take time that grows
// quadratically with the trace, or keep running after its caller gave up.
#include <atomic>
#include <string>
#include <vector>

#include "base/stop.h"
#include "gtest/gtest.h"
#include "planner/checkpointing.h"
#include "planner/genetic_search.h"
#include "planner/link_budget_pass.h"
#include "planner/lower_bound.h"
#include "planner/lp_bound.h"
#include "planner/plan_draft.h"
#include "planner/policies.h"
#include "planner/slackswap.h"
#include "planner/superneurons.h"
#include "planner/swapadvisor.h"
#include "planner/vdnn.h"
#include "simulator/event_model.h"
#include "simulator/schedule.h"
#include "simulator/small_traces.h"
#include "simulator/trace_validation.h"
#include "tests/planner/shaped_traces.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace {

Trace Shaped(const std::string& shape, int n) {
  absl::StatusOr<Trace> trace = ValidateTrace(testing::ShapedTrace(shape, n));
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *std::move(trace) : Trace();
}

using testing::SlowLink;

int64_t DraftWork(const Trace& trace) {
  const int64_t budget = AllKeepPeakBytes(trace) / 10;
  absl::StatusOr<PlanningResult> r =
      PlanSlackSwap(trace, SlowLink(), budget, PlannerOptions());
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->stats.draft_lifetime_updates : 0;
}

// Planning a 5,000-tensor chain took 1.3 s and a 20,000-tensor one 29 s:
// every recompute mark walked the whole chain below it. The work is counted,
// not timed: four times the tensors may cost at most about four times the
// lifetime updates (a quadratic planner costs sixteen).
TEST(PlannerScalingTest, WorkGrowsNearLinearlyOnLongChains) {
  for (const std::string shape : {"chain", "chain-blocks", "star", "dag"}) {
    SCOPED_TRACE(shape);
    const int64_t small = DraftWork(Shaped(shape, 2000));
    const int64_t large = DraftWork(Shaped(shape, 8000));
    EXPECT_GT(small, 0);
    EXPECT_LE(large, 5 * small) << small << " -> " << large;
    // And a small constant per tensor.
    EXPECT_LE(large, 100 * 8000) << large;
  }
}

TEST(PlannerScalingTest, RecomputedChainsStayShortAndPlansStayValid) {
  const Trace trace = Shaped("chain", 3000);
  const int64_t budget = AllKeepPeakBytes(trace) / 10;
  absl::StatusOr<PlanningResult> r =
      PlanSlackSwap(trace, SlowLink(), budget, PlannerOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->feasible) << r->reason;
  EXPECT_LE(r->replay.peak_resident_bytes, budget);
  // No run of consecutive recomputed tensors (one rebuild chain) is longer
  // than the pass allows.
  int run = 0, longest = 0;
  for (Decision d : r->plan.decisions) {
    run = d == Decision::kRecompute ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  EXPECT_GT(longest, 1);
  EXPECT_LE(longest, 64);
  // The replay agrees with the plan: Simulate reproduces it.
  SimulationOptions sim;
  sim.budget_bytes = budget;
  absl::StatusOr<SimulationResult> again =
      Simulate(trace, SlowLink(), r->plan, sim);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->iteration_ns, r->replay.iteration_ns);
}

// A stop function that says stop from its `after`-th call on, and counts.
struct CountingStop {
  explicit CountingStop(int stop_at) : after(stop_at) {}
  StopFunction Function() {
    return [this] { return ++calls >= after; };
  }
  const int after;
  std::atomic<int> calls{0};
};

// Every policy asks its stop function inside the work and answers CANCELLED
// once it says stop: a call's deadline, its cancellation and the server's
// drain end the work, not only the wait for it.
TEST(PlannerStopTest, EveryPolicyStopsInsideTheWork) {
  const Trace trace = Shaped("dag", 3000);
  const int64_t budget = AllKeepPeakBytes(trace) / 10;
  for (Policy policy : AllPolicies()) {
    if (policy == Policy::kIdeal) continue;  // one replay: nothing to stop
    // The exact search takes small traces only; its own test below.
    if (policy == Policy::kOptimum) continue;
    SCOPED_TRACE(PolicyName(policy));
    // Stops at once.
    PolicyOptions options;
    options.genetic_search.max_evaluations = 400;
    options.swapadvisor.max_evaluations = 400;
    options.should_stop = [] { return true; };
    absl::StatusOr<PlanningResult> r =
        RunPolicy(policy, trace, SlowLink(), budget, options);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
    // Stops when asked the second time: the policy asked again during its
    // work, and no more than a few times after it said stop.
    CountingStop second(2);
    options.should_stop = second.Function();
    r = RunPolicy(policy, trace, SlowLink(), budget, options);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
    EXPECT_GE(second.calls.load(), 2);
    EXPECT_LE(second.calls.load(), 4);
  }
}

TEST(PolicyTimeRangeTest, EveryPolicyRefusesTimesThatWouldOverflow) {
  // A link so slow that the offload of 2^59 bytes would overflow the event
  // model's clock: every policy answers INVALID_ARGUMENT naming the field.
  testing::TinyTrace t;
  t.Fwd(10), t.Bwd(10);
  t.Tensor(int64_t{1} << 59, 0, {1});
  const Trace trace = t.Build();
  Hardware slow = testing::ByteNanosecondLink();
  slow.d2h_bytes_per_second = 1;
  for (Policy policy : AllPolicies()) {
    const absl::StatusOr<PlanningResult> r =
        RunPolicy(policy, trace, slow, int64_t{1} << 60, PolicyOptions());
    ASSERT_FALSE(r.ok()) << PolicyName(policy);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind("hardware.d2h_bytes_per_second", 0),
              0u)
        << PolicyName(policy) << ": " << r.status();
  }
}

TEST(PlannerStopTest, TheExactSearchStops) {
  // Twelve tensors at 80% of the peak: a search of millions of replays.
  const SmallTrace small = RandomSmallTrace(1, {12, 12, 20});
  const Trace trace = *ValidateTrace(small.trace);
  PolicyOptions options;
  CountingStop second(2);
  options.should_stop = second.Function();
  const absl::StatusOr<PlanningResult> r =
      RunPolicy(Policy::kOptimum, trace, small.hardware,
                AllKeepPeakBytes(trace) * 8 / 10, options);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_GE(second.calls.load(), 2);
}

// The linear program of a long chain would hold 32 ops x 40,000 removable
// tensors x 2 entries, 2.5 million nonzeros: no bound rather than seconds of
// Clp and hundreds of megabytes. A short chain's program is solved.
TEST(LinearProgramLimitTest, NoBoundPastTheNonzeroLimit) {
  const Trace large = Shaped("chain", 40000);
  const LinearProgramBound refused =
      ComputeLinearProgramBound(large, SlowLink(), AllKeepPeakBytes(large) / 2);
  EXPECT_FALSE(refused.solved);
  const Trace small = Shaped("chain", 200);
  const LinearProgramBound solved =
      ComputeLinearProgramBound(small, SlowLink(), AllKeepPeakBytes(small) / 2);
  EXPECT_TRUE(solved.solved);
  EXPECT_GE(solved.iteration_ns, small.ideal_ns);
}

// Clp polls the thread's stop every 64 iterations: a solve that says stop
// gives no bound; one that never does is the same solve.
TEST(LinearProgramStopTest, TheSolvePollsTheThreadsStop) {
  const Trace trace = Shaped("chain", 2000);
  const int64_t budget = AllKeepPeakBytes(trace) / 2;
  const LinearProgramBound plain =
      ComputeLinearProgramBound(trace, SlowLink(), budget);
  ASSERT_TRUE(plain.solved);
  CountingStop never(1 << 30);
  const StopFunction never_stop = never.Function();
  {
    ScopedStop scope(&never_stop);
    const LinearProgramBound polled =
        ComputeLinearProgramBound(trace, SlowLink(), budget);
    EXPECT_TRUE(polled.solved);
    EXPECT_EQ(polled.iteration_ns, plain.iteration_ns);
  }
  EXPECT_GT(never.calls.load(), 0);
  CountingStop first(1);
  const StopFunction stop = first.Function();
  ScopedStop scope(&stop);
  EXPECT_FALSE(ComputeLinearProgramBound(trace, SlowLink(), budget).solved);
  EXPECT_EQ(first.calls.load(), 1);
}

// The fast bound polls the thread's stop before each op's knapsack (on a
// 10,000-tensor trace under the sanitizers they took over a second after a
// call's deadline): stopped at once, it is the ideal time, still a bound;
// never stopped, the same bound as without a stop function.
TEST(LowerBoundStopTest, TheKnapsacksPollTheThreadsStop) {
  const Trace trace = Shaped("chain", 2000);
  const int64_t budget = AllKeepPeakBytes(trace) / 2;
  const LowerBound plain = ComputeLowerBound(trace, SlowLink(), budget);
  ASSERT_TRUE(plain.feasible);
  ASSERT_GT(plain.iteration_ns, trace.ideal_ns);
  CountingStop never(1 << 30);
  const StopFunction never_stop = never.Function();
  {
    ScopedStop scope(&never_stop);
    const LowerBound polled = ComputeLowerBound(trace, SlowLink(), budget);
    EXPECT_EQ(polled.iteration_ns, plain.iteration_ns);
    EXPECT_EQ(polled.binding_op, plain.binding_op);
  }
  EXPECT_GT(never.calls.load(), 1);
  CountingStop first(1);
  const StopFunction stop = first.Function();
  ScopedStop scope(&stop);
  const LowerBound stopped = ComputeLowerBound(trace, SlowLink(), budget);
  EXPECT_TRUE(stopped.feasible);
  EXPECT_EQ(stopped.iteration_ns, trace.ideal_ns);
  EXPECT_EQ(first.calls.load(), 1);
}

// The link-budget pass polls the thread's stop before every
// kSelectStopPollCandidates candidates (its loop over 10,000 tensors ran on
// after a call's deadline): stopped at once, it admits nothing; never
// stopped, it polls again further on (the chain has thousands of
// candidates) and admits what it admits without a stop function.
TEST(SelectSwapsStopTest, TheLinkBudgetPassPollsTheThreadsStop) {
  const Trace trace = Shaped("chain", 4000);
  Hardware fast = SlowLink();
  fast.d2h_bytes_per_second *= 1000;
  fast.h2d_bytes_per_second *= 1000;
  const IdealTimeline timeline(trace);
  const int64_t budget = AllKeepPeakBytes(trace) / 2;
  const std::vector<int32_t> plain =
      SelectSwaps(trace, fast, timeline, budget, PlannerOptions());
  ASSERT_FALSE(plain.empty());
  CountingStop never(1 << 30);
  const StopFunction never_stop = never.Function();
  {
    ScopedStop scope(&never_stop);
    EXPECT_EQ(SelectSwaps(trace, fast, timeline, budget, PlannerOptions()),
              plain);
  }
  EXPECT_GT(never.calls.load(), 1);
  CountingStop first(1);
  const StopFunction stop = first.Function();
  ScopedStop scope(&stop);
  EXPECT_TRUE(
      SelectSwaps(trace, fast, timeline, budget, PlannerOptions()).empty());
  EXPECT_EQ(first.calls.load(), 1);
}

// 64 skewed ranks replay as one loop: it polls the thread's stop inside,
// every kReplayStopPollEvents events, and ends every rank stopped.
TEST(ReplayStopTest, SkewedRanksStopInsideOneReplay) {
  const Trace trace = Shaped("chain", 300);
  Hardware hardware = SlowLink();
  hardware.gpus_per_uplink = 64;
  hardware.uplink_d2h_bytes_per_second = hardware.d2h_bytes_per_second;
  hardware.uplink_h2d_bytes_per_second = hardware.h2d_bytes_per_second;
  SimulationOptions skewed;
  skewed.physics.rank_skew_ns = 1000;
  Plan plan = Plan::AllKeep(trace);
  for (size_t t = 0; t < plan.decisions.size(); t += 2)
    plan.decisions[t] = Decision::kSwap;
  const Schedule schedule = DeriveSchedule(trace, plan);
  const SimulationResult full =
      SimulateSchedule(trace, hardware, plan, schedule, skewed);
  ASSERT_TRUE(full.feasible) << full.infeasibility.reason;
  CountingStop never(1 << 30);
  const StopFunction never_stop = never.Function();
  {
    ScopedStop scope(&never_stop);
    const SimulationResult polled =
        SimulateSchedule(trace, hardware, plan, schedule, skewed);
    EXPECT_EQ(polled.iteration_ns, full.iteration_ns);
    EXPECT_FALSE(polled.stopped);
  }
  // The loop runs through many thousands of events: it asked many times.
  EXPECT_GT(never.calls.load(), 10);
  CountingStop third(3);
  const StopFunction stop = third.Function();
  ScopedStop scope(&stop);
  const SimulationResult stopped =
      SimulateSchedule(trace, hardware, plan, schedule, skewed);
  EXPECT_FALSE(stopped.feasible);
  EXPECT_TRUE(stopped.stopped);
  EXPECT_EQ(third.calls.load(), 3);
  EXPECT_LT(stopped.iteration_ns, full.iteration_ns);
}

TEST(PlannerStopTest, AStopFunctionThatNeverSaysStopChangesNothing) {
  const Trace trace = Shaped("chain", 500);
  const int64_t budget = AllKeepPeakBytes(trace) / 4;
  PlannerOptions plain, polled;
  CountingStop never(1 << 30);
  polled.should_stop = never.Function();
  absl::StatusOr<PlanningResult> a =
      PlanSlackSwap(trace, SlowLink(), budget, plain);
  absl::StatusOr<PlanningResult> b =
      PlanSlackSwap(trace, SlowLink(), budget, polled);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GT(never.calls.load(), 0);
  EXPECT_EQ(a->plan.decisions, b->plan.decisions);
  EXPECT_EQ(a->plan.prefetch_issue_op, b->plan.prefetch_issue_op);
  EXPECT_EQ(a->replay.iteration_ns, b->replay.iteration_ns);
}

}  // namespace
}  // namespace slackswap
