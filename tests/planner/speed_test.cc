// Every policy's plans hold at other speeds (docs/event-model.md, "Prefetch
// admission"): a plan any policy returns as feasible, replayed with every op
// and rebuild duration and each link scaled at random, completes within its
// budget. On the presets (two layers, four GPUs, three budgets), on random
// small traces (with the exact optimum), for SlackSwap at the budgets a
// frontier plans at, and for the jobs of a node plan replayed together.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "planner/lower_bound.h"
#include "planner/node_planner.h"
#include "planner/policies.h"
#include "simulator/event_model.h"
#include "simulator/node_model.h"
#include "simulator/schedule.h"
#include "simulator/small_traces.h"
#include "simulator/trace_validation.h"
#include "tests/simulator/random_plans.h"

namespace slackswap {
namespace {

using ::slackswap::testing::RandomlyScaled;
using ::slackswap::testing::RandomSpeeds;
using ::slackswap::testing::SmallWorkloads;
using ::slackswap::testing::Workload;

PolicyOptions QuickOptions() {
  PolicyOptions options;
  options.genetic_search.max_evaluations = 400;
  options.swapadvisor.max_evaluations = 400;
  options.slackswap.search_time_ms = 10;
  return options;
}

// Replays `result`'s plan at `scalings` random speeds; every replay must
// complete within `budget`. Returns the number of replays.
int CheckAtRandomSpeeds(const Trace& trace, const Hardware& hardware,
                        int64_t budget, const PlanningResult& result,
                        int scalings, std::mt19937_64& rng,
                        const std::string& what) {
  const Schedule schedule = DeriveSchedule(trace, result.plan);
  SimulationOptions options;
  options.budget_bytes = budget;
  options.per_layer_barriers = result.per_layer_barriers;
  int replays = 0;
  for (int k = 0; k < scalings; ++k) {
    const RandomSpeeds speeds = RandomlyScaled(trace, hardware, rng);
    if (!CheckTimeRange(speeds.trace, speeds.hardware).ok()) continue;
    const SimulationResult r = SimulateSchedule(speeds.trace, speeds.hardware,
                                                result.plan, schedule, options);
    EXPECT_TRUE(r.feasible) << what << " at " << speeds.description << ": "
                            << r.infeasibility.reason;
    EXPECT_LE(r.peak_resident_bytes, budget) << what;
    ++replays;
  }
  return replays;
}

TEST(PlansAtOtherSpeedsTest, EveryPolicysPlansOnThePresets) {
  std::mt19937_64 rng(26);
  const PolicyOptions options = QuickOptions();
  int plans = 0, replays = 0;
  for (const Workload& w :
       SmallWorkloads(2, {"titan-x", "a100", "h100", "gh200"})) {
    const int64_t peak = AllKeepPeakBytes(w.trace);
    for (double fraction : {0.3, 0.5, 0.7}) {
      const int64_t budget = static_cast<int64_t>(peak * fraction);
      for (Policy policy : AllPolicies()) {
        if (policy == Policy::kOptimum) continue;  // small traces only, below
        absl::StatusOr<PlanningResult> result =
            RunPolicyWithinBudget(policy, w.trace, w.hardware, budget, options);
        ASSERT_TRUE(result.ok()) << result.status();
        if (!result->feasible) continue;
        ++plans;
        replays += CheckAtRandomSpeeds(
            w.trace, w.hardware, budget, *result, 6, rng,
            absl::StrCat(PolicyName(policy), " on ", w.name, " at ", fraction));
      }
    }
  }
  EXPECT_GT(plans, 150);
  EXPECT_GT(replays, 900);
}

TEST(PlansAtOtherSpeedsTest, EveryPolicysPlansOnRandomSmallTraces) {
  std::mt19937_64 rng(27);
  const PolicyOptions options = QuickOptions();
  int plans = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const SmallTrace small = RandomSmallTrace(seed, {2, 9, 8});
    const Trace trace = *ValidateTrace(small.trace);
    // Between the proven floor and the all-keep peak: 10% and 50% of the way.
    const int64_t peak = AllKeepPeakBytes(trace);
    const int64_t floor = ComputeProvenFloor(trace).bytes;
    for (double fraction : {0.1, 0.5}) {
      const int64_t budget =
          floor + static_cast<int64_t>((peak - floor) * fraction);
      for (Policy policy : AllPolicies()) {
        absl::StatusOr<PlanningResult> result = RunPolicyWithinBudget(
            policy, trace, small.hardware, budget, options);
        ASSERT_TRUE(result.ok()) << result.status();
        if (!result->feasible) continue;
        ++plans;
        CheckAtRandomSpeeds(trace, small.hardware, budget, *result, 6, rng,
                            absl::StrCat(PolicyName(policy), " on seed ", seed,
                                         " at ", fraction));
      }
    }
  }
  EXPECT_GT(plans, 400);
}

// The budgets a frontier plans at (Frontier answers are SlackSwap's plans at
// each budget): from 10% of the peak up, in steps of 2%.
TEST(PlansAtOtherSpeedsTest, SlackSwapAcrossTheFrontier) {
  std::mt19937_64 rng(28);
  int plans = 0;
  for (const Workload& w : SmallWorkloads(2, {"a100", "h100"})) {
    const int64_t peak = AllKeepPeakBytes(w.trace);
    for (int percent = 10; percent <= 100; percent += 2) {
      const int64_t budget = peak * percent / 100;
      absl::StatusOr<PlanningResult> result =
          PlanSlackSwap(w.trace, w.hardware, budget, QuickOptions().slackswap);
      ASSERT_TRUE(result.ok()) << result.status();
      if (!result->feasible) continue;
      ++plans;
      CheckAtRandomSpeeds(
          w.trace, w.hardware, budget, *result, 3, rng,
          absl::StrCat("slackswap on ", w.name, " at ", percent, "%"));
    }
  }
  EXPECT_GT(plans, 100);
}

// A node plan's jobs, replayed together on the node at random speeds: every
// job's steps complete within its budget.
TEST(PlansAtOtherSpeedsTest, TheJobsOfANodePlan) {
  std::mt19937_64 rng(29);
  const std::vector<Workload> workloads = SmallWorkloads(2, {"a100"});
  Hardware node = workloads[0].hardware;
  node.uplink_d2h_bytes_per_second = node.d2h_bytes_per_second;
  node.uplink_h2d_bytes_per_second = node.h2d_bytes_per_second;
  int replays = 0;
  for (size_t a = 0; a + 1 < workloads.size(); ++a) {
    const Workload& x = workloads[a];
    const Workload& y = workloads[a + 1];
    // Budgets 30% and 60% of the way from each trace's floor to its peak.
    auto budget = [](const Trace& t, double fraction) {
      const int64_t floor = ComputeProvenFloor(t).bytes;
      return floor +
             static_cast<int64_t>((AllKeepPeakBytes(t) - floor) * fraction);
    };
    std::vector<NodePlanJob> jobs(2);
    jobs[0] = {&x.trace, budget(x.trace, 0.3), 1, Policy::kSlackSwap};
    jobs[1] = {&y.trace, budget(y.trace, 0.6), 2, Policy::kSlackSwap};
    absl::StatusOr<NodePlan> plan = PlanNode(jobs, node, QuickOptions(), 3);
    ASSERT_TRUE(plan.ok()) << plan.status();
    if (!plan->jobs[0].feasible || !plan->jobs[1].feasible) continue;
    for (int k = 0; k < 4; ++k) {
      const RandomSpeeds sx = RandomlyScaled(x.trace, node, rng);
      const RandomSpeeds sy = RandomlyScaled(y.trace, node, rng);
      // One node: the machine at the first job's link speeds.
      const Hardware& scaled_node = sx.hardware;
      if (!CheckPhysics(sx.trace, scaled_node, Physics(), 3).ok() ||
          !CheckPhysics(sy.trace, scaled_node, Physics(), 3).ok()) {
        continue;
      }
      const Plan& px = plan->jobs[0].planned.plan;
      const Plan& py = plan->jobs[1].planned.plan;
      const Schedule schedule_x = DeriveSchedule(sx.trace, px);
      const Schedule schedule_y = DeriveSchedule(sy.trace, py);
      std::vector<NodeJob> node_jobs(2);
      node_jobs[0] = {&sx.trace, &px, &schedule_x, {}, jobs[0].gpus};
      node_jobs[0].options.budget_bytes = jobs[0].budget_bytes;
      node_jobs[1] = {&sy.trace, &py, &schedule_y, {}, jobs[1].gpus};
      node_jobs[1].options.budget_bytes = jobs[1].budget_bytes;
      const std::vector<NodeJobSteps> steps =
          SimulateNode(node_jobs, scaled_node, 3);
      for (size_t j = 0; j < steps.size(); ++j) {
        EXPECT_TRUE(steps[j].feasible)
            << x.name << " beside " << y.name << ", job " << j << " at "
            << sx.description << ": " << steps[j].last.infeasibility.reason;
        EXPECT_LE(steps[j].last.peak_resident_bytes,
                  node_jobs[j].options.budget_bytes);
      }
      ++replays;
    }
  }
  EXPECT_GT(replays, 4);
}

}  // namespace
}  // namespace slackswap
