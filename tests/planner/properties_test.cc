// Properties of the SlackSwap planner over generated traces, budgets from 10%
// to 100% of the all-keep peak, and hardware presets.
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "planner/basic_plans.h"
#include "planner/policies.h"
#include "planner/slackswap.h"
#include "simulator/event_model.h"
#include "tests/simulator/fingerprints.h"
#include "tests/simulator/random_plans.h"

namespace slackswap {
namespace {

using ::slackswap::testing::RandomPlan;
using ::slackswap::testing::SmallWorkloads;
using ::slackswap::testing::Workload;

const std::vector<Workload>& Workloads() {
  static const auto* workloads = new std::vector<Workload>(
      SmallWorkloads(4, {"v100", "a100", "h100", "gh200"}));
  return *workloads;
}

// Every recomputable tensor recomputed; the rest kept.
Plan AllRecomputePlan(const Trace& trace) {
  Plan plan = Plan::AllKeep(trace);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (!trace.tensors[t].recompute_forbidden)
      plan.decisions[t] = Decision::kRecompute;
  }
  return plan;
}

TEST(SlackSwapPropertyTest, PlansFitReplayExactlyAndRespectTheLowerBound) {
  int feasible = 0;
  for (const Workload& w : Workloads()) {
    const int64_t peak = AllKeepPeakBytes(w.trace);
    for (int tenth = 1; tenth <= 10; ++tenth) {
      for (bool barriers : {false, true}) {
        SCOPED_TRACE(w.name + " at " + std::to_string(tenth * 10) + "%" +
                     (barriers ? " with barriers" : ""));
        const int64_t budget = peak * tenth / 10;
        PlannerOptions options;
        options.per_layer_barriers = barriers;
        options.search_time_ms = 10;  // its plans too, in less time
        absl::StatusOr<PlanningResult> r =
            PlanSlackSwap(w.trace, w.hardware, budget, options);
        ASSERT_TRUE(r.ok()) << r.status();
        // Never over budget, feasible or not.
        EXPECT_LE(r->replay.peak_resident_bytes, budget);
        if (!r->feasible) {
          EXPECT_FALSE(r->reason.empty());
          continue;
        }
        ++feasible;
        // Replaying the returned plan reproduces the returned metrics exactly.
        SimulationOptions sim;
        sim.budget_bytes = budget;
        sim.per_layer_barriers = barriers;
        absl::StatusOr<SimulationResult> replay =
            Simulate(w.trace, w.hardware, r->plan, sim);
        ASSERT_TRUE(replay.ok()) << replay.status();
        EXPECT_EQ(testing::Fingerprint(*replay),
                  testing::Fingerprint(r->replay));
        EXPECT_TRUE(r->lower_bound.feasible);
        EXPECT_LE(r->lower_bound.iteration_ns, r->replay.iteration_ns);
        EXPECT_GE(r->lower_bound.iteration_ns, w.trace.ideal_ns);
        if (tenth == 10 && !barriers) {
          for (Decision d : r->plan.decisions) EXPECT_EQ(d, Decision::kKeep);
          EXPECT_EQ(r->replay.iteration_ns, w.trace.ideal_ns);
        }
      }
    }
  }
  EXPECT_GT(feasible, 200);
}

TEST(SlackSwapPropertyTest, LowerBoundHoldsForEveryOtherPlanToo) {
  std::mt19937_64 rng(1130);
  int compared = 0;
  for (const Workload& w : Workloads()) {
    const int64_t peak = AllKeepPeakBytes(w.trace);
    for (int tenth = 1; tenth <= 10; tenth += 3) {
      const int64_t budget = peak * tenth / 10;
      const LowerBound bound = ComputeLowerBound(w.trace, w.hardware, budget);
      SimulationOptions sim;
      sim.budget_bytes = budget;
      std::vector<Plan> plans = {AllRecomputePlan(w.trace),
                                 AllSwapPlan(w.trace), Plan::AllKeep(w.trace)};
      for (int i = 0; i < 20; ++i)
        plans.push_back(RandomPlan(w.trace, false, rng));
      for (const Plan& plan : plans) {
        const SimulationResult r = *Simulate(w.trace, w.hardware, plan, sim);
        if (!r.feasible) continue;
        ++compared;
        // A plan that fits proves the budget feasible, and is no faster than
        // the bound.
        EXPECT_TRUE(bound.feasible) << w.name << ": " << bound.reason;
        EXPECT_LE(bound.iteration_ns, r.iteration_ns)
            << w.name << " budget " << budget;
      }
    }
  }
  EXPECT_GT(compared, 100);
}

TEST(SlackSwapPropertyTest, PlansAreDeterministic) {
  for (const Workload& w : Workloads()) {
    const int64_t budget = AllKeepPeakBytes(w.trace) * 4 / 10;
    const PlanningResult a =
        *PlanSlackSwap(w.trace, w.hardware, budget, PlannerOptions());
    const PlanningResult b =
        *PlanSlackSwap(w.trace, w.hardware, budget, PlannerOptions());
    const auto fingerprint = [](const PlanningResult& r) {
      return absl::StrCat(r.feasible, r.reason, testing::Fingerprint(r.plan),
                          testing::Fingerprint(r.replay),
                          r.lower_bound.iteration_ns, " ",
                          static_cast<int>(r.lower_bound.source), " ",
                          r.stats.repairs, " ", r.stats.repair_iterations, " ",
                          r.stats.polish_replays, " ", r.stats.search_replays);
    };
    EXPECT_EQ(fingerprint(a), fingerprint(b)) << w.name;
  }
}

TEST(SlackSwapPropertyTest, AblationsStillGiveValidPlans) {
  for (const Workload& w : Workloads()) {
    const int64_t budget = AllKeepPeakBytes(w.trace) / 2;
    PlannerOptions production;
    production.ranking = SwapRanking::kProductionOrder;
    PlannerOptions recompute_only;
    recompute_only.link_budget_pass = false;
    for (const PlannerOptions& options : {production, recompute_only}) {
      const PlanningResult r =
          *PlanSlackSwap(w.trace, w.hardware, budget, options);
      EXPECT_LE(r.replay.peak_resident_bytes, budget) << w.name;
      if (!options.link_budget_pass) {
        EXPECT_EQ(r.replay.swapped_bytes, 0) << w.name;
      }
    }
    // The ablation policies measure the passes: no anytime search, however
    // far their plan is from the bound.
    for (Policy p :
         {Policy::kSlackSwapProductionOrder, Policy::kSlackSwapNoLinkBudget,
          Policy::kSlackSwapBarriers}) {
      const PlanningResult r =
          *RunPolicy(p, w.trace, w.hardware, budget, PolicyOptions());
      EXPECT_EQ(r.stats.search_replays, 0) << PolicyName(p) << " " << w.name;
    }
  }
}

}  // namespace
}  // namespace slackswap
