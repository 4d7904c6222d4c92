// Plans at speeds other than the profiled ones (docs/event-model.md,
// "Prefetch admission"): under the any-speed rule a plan that completes at
// the profiled speeds completes within its budget at every speed of every
// op, rebuild and link, and one that does not complete there completes at
// none. The sweep replays random plans of random traces and of generated
// workloads with every duration scaled by its own random factor in [0, 10]
// and each link direction by one in [0.1, 10] or infinite.
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simulator/event_model.h"
#include "simulator/schedule.h"
#include "simulator/small_traces.h"
#include "simulator/speed_scaling.h"
#include "simulator/trace_validation.h"
#include "tests/simulator/random_plans.h"

namespace slackswap {
namespace {

using ::slackswap::testing::AddRandomFixedTransfers;
using ::slackswap::testing::RandomlyScaled;
using ::slackswap::testing::RandomPlan;
using ::slackswap::testing::RandomSpeeds;
using ::slackswap::testing::SmallWorkloads;
using ::slackswap::testing::Workload;

// The workloads of the sweep: random small traces (each with its own link)
// and small generated ones on four GPUs; with a `fixed_seed`, each with
// random fixed transfers drawn from it (AddRandomFixedTransfers).
std::vector<Workload> SweepWorkloads(int random_traces,
                                     uint64_t fixed_seed = 0) {
  std::vector<Workload> out =
      SmallWorkloads(2, {"titan-x", "a100", "h100", "gh200"}, fixed_seed);
  SplitMix64 fixed_rng(fixed_seed + 1);
  for (int seed = 1; seed <= random_traces; ++seed) {
    SmallTrace small =
        RandomSmallTrace(static_cast<uint64_t>(seed), {2, 12, 10});
    if (fixed_seed != 0) AddRandomFixedTransfers(small.trace, fixed_rng);
    out.push_back({absl::StrCat("random-", seed), *ValidateTrace(small.trace),
                   small.hardware});
  }
  return out;
}

struct SweepCounts {
  int plans = 0;
  int completed = 0;
  int scaled_replays = 0;
  // Scaled replays whose outcome differs from the profiled one, or that ran
  // over the budget.
  int outcome_changed = 0;
  int over_budget = 0;
  // Completed scaled replays whose iteration is not the sum of its ops,
  // rebuilds, contention and stalls.
  int unaccounted = 0;
  std::string first_failure;
};

// What the sweep replays under besides the speeds.
struct Variant {
  PrefetchAdmission rule = PrefetchAdmission::kAnySpeed;
  // Two GPUs behind an uplink as fast as one link, HBM contention where the
  // machine allows it, and ranks `skew_ns` apart.
  bool node_physics = false;
  int64_t skew_ns = 0;
  AllocatorKind allocator = AllocatorKind::kNone;
  bool budget_reserved = false;
  // Nonzero: every trace carries random fixed transfers drawn from it.
  uint64_t fixed_seed = 0;
};

// The hardware and physics of a variant (the allocator apart).
Physics WithPhysics(Hardware& hw, const Variant& v) {
  Physics physics;
  if (!v.node_physics) return physics;
  hw.gpus_per_uplink = 2;
  hw.uplink_d2h_bytes_per_second = hw.d2h_bytes_per_second;
  hw.uplink_h2d_bytes_per_second = hw.h2d_bytes_per_second;
  physics.hbm_contention =
      hw.matmul_flops_per_second > 0 &&
      hw.hbm_bytes_per_second / 4 >=
          hw.d2h_bytes_per_second / 2 + hw.h2d_bytes_per_second / 2;
  physics.rank_skew_ns = v.skew_ns;
  return physics;
}

// Replays random plans at the profiled speeds and at `scalings` random
// speeds each.
SweepCounts Sweep(const Variant& variant, int random_traces, int plans_each,
                  int scalings) {
  SweepCounts counts;
  std::mt19937_64 rng(2026);
  for (Workload w : SweepWorkloads(random_traces, variant.fixed_seed)) {
    const Physics physics = WithPhysics(w.hardware, variant);
    if (!CheckPhysics(w.trace, w.hardware, physics).ok()) continue;
    const int64_t peak = AllKeepPeakBytes(w.trace);
    for (int p = 0; p < plans_each; ++p) {
      const bool barriers = p % 5 == 4;
      const Plan plan = RandomPlan(w.trace, barriers, rng);
      const Schedule schedule = DeriveSchedule(w.trace, plan);
      SimulationOptions options;
      options.per_layer_barriers = barriers;
      options.prefetch_admission = variant.rule;
      options.physics = physics;
      options.physics.allocator = variant.allocator;
      // Half the budgets are near what the plan itself holds with memory
      // unlimited (tight: where a prefetch taken early hurts), half a
      // fraction of the all-keep peak.
      int64_t reference = peak;
      double low = 0.45, high = 1.05;
      if (p % 2 == 0) {
        reference =
            SimulateSchedule(w.trace, w.hardware, plan, schedule, options)
                .peak_resident_bytes;
        low = 0.9;
        high = 1.1;
      }
      options.budget_bytes = static_cast<int64_t>(
          static_cast<double>(reference) *
          std::uniform_real_distribution<double>(low, high)(rng));
      options.physics.budget_reserved = variant.budget_reserved;
      const SimulationResult profiled =
          SimulateSchedule(w.trace, w.hardware, plan, schedule, options);
      ++counts.plans;
      if (profiled.feasible) ++counts.completed;
      for (int k = 0; k < scalings; ++k) {
        const RandomSpeeds speeds = RandomlyScaled(w.trace, w.hardware, rng);
        if (!CheckTimeRange(speeds.trace, speeds.hardware).ok() ||
            !CheckPhysics(speeds.trace, speeds.hardware, physics).ok()) {
          continue;
        }
        const SimulationResult r = SimulateSchedule(
            speeds.trace, speeds.hardware, plan, schedule, options);
        ++counts.scaled_replays;
        const bool changed = r.feasible != profiled.feasible;
        const bool over = r.peak_resident_bytes > options.budget_bytes ||
                          (variant.budget_reserved &&
                           r.peak_reserved_bytes > options.budget_bytes);
        const bool unaccounted =
            r.feasible && r.iteration_ns != speeds.trace.ideal_ns +
                                                r.contention_ns +
                                                r.recompute_ns + r.stall_ns();
        counts.outcome_changed += changed;
        counts.over_budget += over;
        counts.unaccounted += unaccounted;
        if ((changed || over || unaccounted) && counts.first_failure.empty()) {
          counts.first_failure = absl::StrCat(
              w.name, " plan ", p, " at ", speeds.description, ": profiled ",
              profiled.feasible ? "completes" : "does not complete",
              ", scaled ", r.feasible ? "completes" : r.infeasibility.reason);
        }
      }
    }
  }
  return counts;
}

// The full sweep's checks: no outcome changes, no budget overrun, every ns
// accounted for, and both outcomes in numbers.
void ExpectTheFullSweepHolds(const SweepCounts& c) {
  EXPECT_EQ(c.outcome_changed, 0) << c.first_failure;
  EXPECT_EQ(c.over_budget, 0) << c.first_failure;
  EXPECT_EQ(c.unaccounted, 0) << c.first_failure;
  // The sweep has both outcomes in numbers.
  EXPECT_GT(c.completed, c.plans / 5);
  EXPECT_LT(c.completed, c.plans * 4 / 5);
  EXPECT_GT(c.scaled_replays, 25000);
  std::cout << c.plans << " plans, " << c.completed << " complete, "
            << c.scaled_replays << " scaled replays\n";
}

TEST(SpeedTest, PlansCompleteWithinTheBudgetAtEverySpeedOrAtNone) {
  const SweepCounts c = Sweep(Variant(), 300, 12, 8);
  ExpectTheFullSweepHolds(c);
}

// The same sweep under the rule the model had before: plans that complete
// at the profiled speeds deadlock at others (the sweep above fails on it).
TEST(SpeedTest, TheFitsNowRuleDeadlocksAtOtherSpeeds) {
  const SweepCounts c = Sweep({PrefetchAdmission::kFitsNow}, 300, 12, 8);
  EXPECT_GT(c.outcome_changed, 0);
  std::cout << c.outcome_changed << " of " << c.scaled_replays
            << " scaled replays change outcome; first: " << c.first_failure
            << "\n";
  EXPECT_EQ(c.over_budget, 0);  // it waits; it never runs over
}

TEST(SpeedTest, NodePhysicsChangeNoOutcome) {
  for (int64_t skew : {int64_t{0}, int64_t{1000}, int64_t{50000}}) {
    Variant v;
    v.node_physics = true;
    v.skew_ns = skew;
    const SweepCounts c = Sweep(v, 60, 6, 4);
    EXPECT_EQ(c.outcome_changed, 0)
        << "skew " << skew << ": " << c.first_failure;
    EXPECT_EQ(c.over_budget, 0) << c.first_failure;
    EXPECT_EQ(c.unaccounted, 0) << c.first_failure;
    std::cout << c.plans << " plans, " << c.completed << " complete, "
              << c.scaled_replays << " scaled replays\n";
  }
}

// The job's own traffic (fixed transfers) on every trace: a parameter fetch
// holding bytes is admitted as a prefetch is, a gradient's source is held as
// a forward copy waiting for its offload, so the theorem still holds.
TEST(SpeedTest, FixedTransfersChangeNoOutcome) {
  Variant v;
  v.fixed_seed = 20260830;
  const SweepCounts c = Sweep(v, 300, 12, 8);
  ExpectTheFullSweepHolds(c);
}

TEST(SpeedTest, FixedTransfersUnderNodePhysicsChangeNoOutcome) {
  for (int64_t skew : {int64_t{0}, int64_t{1000}, int64_t{50000}}) {
    Variant v;
    v.node_physics = true;
    v.skew_ns = skew;
    v.fixed_seed = 20260902 + static_cast<uint64_t>(skew);
    const SweepCounts c = Sweep(v, 60, 6, 4);
    EXPECT_EQ(c.outcome_changed, 0)
        << "skew " << skew << ": " << c.first_failure;
    EXPECT_EQ(c.over_budget, 0) << c.first_failure;
    EXPECT_EQ(c.unaccounted, 0) << c.first_failure;
    std::cout << c.plans << " plans, " << c.completed << " complete, "
              << c.scaled_replays << " scaled replays\n";
  }
}

TEST(SpeedTest, TheAllocatorObservingChangesNoOutcome) {
  for (AllocatorKind kind :
       {AllocatorKind::kCaching, AllocatorKind::kExpandable}) {
    for (bool reserved : {false, true}) {
      Variant v;
      v.allocator = kind;
      v.budget_reserved = reserved;
      const SweepCounts c = Sweep(v, 60, 6, 4);
      std::cout << "reserved " << reserved << ": " << c.outcome_changed
                << " changed, " << c.over_budget << " over; " << c.first_failure
                << "\n";
    }
  }
}

}  // namespace
}  // namespace slackswap
