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

// A 92-tensor random DAG behind an uplink shared by two GPUs, 10% of the way
// from its floor to its all-keep peak (docs/results.md section 15's
// "uplink" kind, from a held-out seed): the local search from the passes'
// plan stops in a local optimum with long prefetch and memory waits.
TEST(AnytimeSearchTest, ASecondStartLeavesTheFirstLocalOptimum) {
  MediumTraceOptions medium;
  medium.shape = MediumShape::kDag;
  const MediumTrace m = RandomMediumTrace(1601, medium);
  const Trace trace = *ValidateTrace(m.trace);
  Hardware hardware = m.hardware;
  hardware.gpus_per_uplink = 2;
  hardware.uplink_d2h_bytes_per_second = hardware.d2h_bytes_per_second;
  hardware.uplink_h2d_bytes_per_second = hardware.h2d_bytes_per_second;
  const int64_t floor = ComputeProvenFloor(trace).bytes;
  const int64_t budget = floor + (AllKeepPeakBytes(trace) - floor) / 10;

  PlannerOptions passes;
  passes.search_time_ms = 0;
  const PlanningResult start = *PlanSlackSwap(trace, hardware, budget, passes);
  AnytimeOptions options;
  options.max_replays = AnytimeReplays(trace, PlannerOptions());
  ASSERT_GT(options.max_replays, 0);
  const auto search = [&](bool second_start, int64_t& replays) {
    options.second_start = second_start;
    Plan plan = start.plan;
    SimulationResult replay = start.replay;
    replays =
        SearchAnytime(trace, hardware, budget, options, plan, replay).replays;
    EXPECT_TRUE(replay.feasible);
    // The plan replays as the search says.
    SimulationOptions sim;
    sim.budget_bytes = budget;
    const SimulationResult check = *Simulate(trace, hardware, plan, sim);
    EXPECT_TRUE(check.feasible);
    EXPECT_EQ(check.iteration_ns, replay.iteration_ns);
    return replay.iteration_ns;
  };
  int64_t replays_one = 0, replays_two = 0;
  const int64_t one = search(false, replays_one);
  const int64_t two = search(true, replays_two);
  // Faster by more than 1%, within the same budget.
  EXPECT_LT(two, one - one / 100) << one << " -> " << two;
  EXPECT_LE(replays_one, options.max_replays);
  EXPECT_LE(replays_two, options.max_replays);
}

}  // namespace
}  // namespace slackswap
