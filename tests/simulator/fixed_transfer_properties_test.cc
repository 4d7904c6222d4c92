// Properties of the event model over random traces that carry random fixed
// transfers (AddRandomFixedTransfers: the job's own traffic, both
// directions, holding GPU bytes or not) and random plans: the budget holds,
// every completed replay's timeline accounts for its metrics (each fixed
// transfer once, between its after_op and its before_op), replays are
// deterministic, an allocator observing changes no time, and with node
// physics every ns is still accounted for. The speed sweep over the same
// kind of traces is in speed_test.cc.
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simulator/event_model.h"
#include "simulator/schedule.h"
#include "simulator/small_traces.h"
#include "simulator/splitmix.h"
#include "simulator/trace_validation.h"
#include "tests/simulator/fingerprints.h"
#include "tests/simulator/random_plans.h"
#include "tests/simulator/test_traces.h"
#include "tests/simulator/timeline_checks.h"

namespace slackswap {
namespace {

using ::slackswap::testing::AddRandomFixedTransfers;
using ::slackswap::testing::CheckTimeline;
using ::slackswap::testing::Fingerprint;
using ::slackswap::testing::RandomPlan;
using ::slackswap::testing::SmallWorkloads;
using ::slackswap::testing::Workload;

constexpr uint64_t kFixedSeed = 20260830;

// The generated workloads (2 layers, four GPUs) and `random_traces` random
// small traces, each with random fixed transfers; every one validates.
std::vector<Workload> FixedWorkloads(int random_traces) {
  std::vector<Workload> out =
      SmallWorkloads(2, {"titan-x", "a100", "h100", "gh200"}, kFixedSeed);
  SplitMix64 rng(kFixedSeed + 1);
  for (int seed = 1; seed <= random_traces; ++seed) {
    SmallTrace small =
        RandomSmallTrace(static_cast<uint64_t>(seed), {2, 12, 10});
    AddRandomFixedTransfers(small.trace, rng);
    absl::StatusOr<Trace> trace = ValidateTrace(small.trace);
    EXPECT_TRUE(trace.ok()) << "seed " << seed << ": " << trace.status();
    if (!trace.ok()) continue;
    out.push_back(
        {absl::StrCat("fixed-", seed), *std::move(trace), small.hardware});
  }
  return out;
}

// `r` with the allocator's own fields cleared: what must not change when an
// allocator only observes.
SimulationResult WithoutAllocatorFields(SimulationResult r) {
  r.peak_reserved_bytes = 0;
  r.fragmentation_bytes = 0;
  return r;
}

struct Counts {
  int traces_with_fixed = 0;
  int replays = 0;
  int completed = 0;
  int infeasible = 0;
  int fixed_waits = 0;  // completed replays that waited for a fixed transfer
};

// The budget of trial `trial`: (even trials) 50%, 75% and 100% of the
// all-keep peak, (odd trials) 90-110% of what the plan holds with memory
// unlimited.
int64_t TrialBudget(const Workload& w, const Plan& plan, bool barriers,
                    int trial, std::mt19937_64& rng) {
  if (trial % 2 == 0) {
    return static_cast<int64_t>(static_cast<double>(AllKeepPeakBytes(w.trace)) *
                                (0.5 + 0.125 * trial));
  }
  SimulationOptions unlimited;
  unlimited.per_layer_barriers = barriers;
  const int64_t held =
      Simulate(w.trace, w.hardware, plan, unlimited)->peak_resident_bytes;
  return static_cast<int64_t>(
      static_cast<double>(held) *
      std::uniform_real_distribution<double>(0.9, 1.1)(rng));
}

// One random plan of `w` under `options`: within the budget, its timeline
// consistent when it completes, the same on a second replay, and the same
// with an allocator model observing.
void CheckPlan(const Workload& w, const Plan& plan,
               const SimulationOptions& options, Counts& counts) {
  const SimulationResult r = *Simulate(w.trace, w.hardware, plan, options);
  ++counts.replays;
  EXPECT_LE(r.peak_resident_bytes, options.budget_bytes);
  if (r.feasible) {
    ++counts.completed;
    if (r.fixed_transfer_wait_ns > 0) ++counts.fixed_waits;
    CheckTimeline(w.trace, plan, r);
  } else {
    ++counts.infeasible;
    EXPECT_FALSE(r.infeasibility.reason.empty());
    for (const TimelineEvent& e : r.timeline)
      ASSERT_LE(e.resident_bytes, options.budget_bytes);
  }
  const SimulationResult again = *Simulate(w.trace, w.hardware, plan, options);
  EXPECT_EQ(Fingerprint(again), Fingerprint(r)) << "not deterministic";
  for (AllocatorKind kind :
       {AllocatorKind::kCaching, AllocatorKind::kExpandable}) {
    SimulationOptions observed = options;
    observed.physics.allocator = kind;
    observed.physics.budget_reserved = false;
    const SimulationResult o = *Simulate(w.trace, w.hardware, plan, observed);
    EXPECT_EQ(Fingerprint(WithoutAllocatorFields(o)), Fingerprint(r))
        << "the allocator observing changed the replay";
    EXPECT_GE(o.peak_reserved_bytes, o.peak_resident_bytes);
  }
}

TEST(FixedTransferPropertyTest, RandomPlansHoldTheBudgetAndMatchTheirTimeline) {
  std::mt19937_64 rng(20260831);
  Counts counts;
  for (const Workload& w : FixedWorkloads(150)) {
    if (!w.trace.fixed_transfers.empty()) ++counts.traces_with_fixed;
    for (int trial = 0; trial < 6; ++trial) {
      SCOPED_TRACE(absl::StrCat(w.name, " trial ", trial));
      const bool barriers = trial % 3 == 2;
      const Plan plan = RandomPlan(w.trace, barriers, rng);
      SimulationOptions options;
      options.per_layer_barriers = barriers;
      options.record_timeline = true;
      options.budget_bytes = TrialBudget(w, plan, barriers, trial, rng);
      CheckPlan(w, plan, options, counts);
    }
  }
  std::cout << counts.traces_with_fixed << " traces with fixed transfers, "
            << counts.replays << " plans: " << counts.completed << " complete ("
            << counts.fixed_waits << " waiting for fixed transfers), "
            << counts.infeasible << " do not\n";
  // The sweep has both outcomes, and fixed transfers that matter.
  EXPECT_GT(counts.traces_with_fixed, 120);
  EXPECT_GT(counts.completed, counts.replays / 5);
  EXPECT_GT(counts.infeasible, counts.replays / 10);
  EXPECT_GT(counts.fixed_waits, counts.completed / 10);
}

// With ranks on a shared uplink, HBM contention where the machine carries
// it and skewed ranks: the budget holds and the timeline accounts for every
// ns (the ops' extra time as contention).
TEST(FixedTransferPropertyTest, NodePhysicsAccountForEveryNs) {
  std::mt19937_64 rng(20260901);
  int completed = 0, slowed = 0, replays = 0;
  for (const Workload& w : FixedWorkloads(60)) {
    for (int trial = 0; trial < 4; ++trial) {
      SCOPED_TRACE(absl::StrCat(w.name, " trial ", trial));
      const bool barriers = trial == 3;
      const Plan plan = RandomPlan(w.trace, barriers, rng);
      Hardware hw = w.hardware;
      hw.gpus_per_uplink = 2 + trial % 2;
      hw.uplink_d2h_bytes_per_second = hw.d2h_bytes_per_second;
      hw.uplink_h2d_bytes_per_second = hw.h2d_bytes_per_second;
      SimulationOptions options;
      options.per_layer_barriers = barriers;
      options.record_timeline = true;
      options.budget_bytes = TrialBudget(w, plan, barriers, trial, rng);
      options.physics.hbm_contention =
          hw.hbm_bytes_per_second >=
          2 * (hw.d2h_bytes_per_second + hw.h2d_bytes_per_second);
      options.physics.rank_skew_ns = trial >= 2 ? 1000 * trial : 0;
      if (!CheckPhysics(w.trace, hw, options.physics).ok()) continue;
      const SimulationResult r = *Simulate(w.trace, hw, plan, options);
      ++replays;
      EXPECT_LE(r.peak_resident_bytes, options.budget_bytes);
      EXPECT_LE(r.events, MaxReplayEvents(w.trace, hw, options.physics));
      if (!r.feasible) continue;
      EXPECT_GE(r.events, w.trace.num_ops() + 1);
      ++completed;
      if (r.uplink_wait_ns > 0) ++slowed;
      CheckTimeline(w.trace, plan, r);
      const SimulationResult again = *Simulate(w.trace, hw, plan, options);
      EXPECT_EQ(Fingerprint(again), Fingerprint(r)) << "not deterministic";
    }
  }
  std::cout << replays << " replays on a node, " << completed << " complete, "
            << slowed << " slowed on the uplink\n";
  EXPECT_GT(completed, replays / 5);
  EXPECT_GT(slowed, completed / 4);
}

// Every plan completes with memory unlimited (condition S of the theorem,
// docs/event-model.md "Prefetch admission", then holds): `barriers` or not,
// random plans and all-keep. Returns the number of replays.
int CheckAllComplete(bool barriers) {
  std::mt19937_64 rng(20260903);
  int replays = 0;
  for (const Workload& w : FixedWorkloads(150)) {
    for (int k = 0; k < 4; ++k) {
      SCOPED_TRACE(absl::StrCat(w.name, " plan ", k));
      const Plan plan =
          k == 0 ? Plan::AllKeep(w.trace) : RandomPlan(w.trace, barriers, rng);
      SimulationOptions options;
      options.per_layer_barriers = barriers;
      const SimulationResult r = *Simulate(w.trace, w.hardware, plan, options);
      ++replays;
      EXPECT_TRUE(r.feasible) << r.infeasibility.reason;
    }
  }
  return replays;
}

TEST(FixedTransferPropertyTest, EveryPlanCompletesWithUnlimitedMemory) {
  EXPECT_GT(CheckAllComplete(false), 600);
}

// A backward block run's barrier does not wait for a fixed transfer that
// may start only inside the run (nor for what follows it in the FIFO queue):
// those are waited for at their need. Before, all-keep deadlocked at every
// budget: ops 0 (forward), 1 and 2 (backward, one block), tensor t0 (10
// bytes, op 0 -> op 2), an H2D transfer of 10 bytes after op 1, before op
// 2: op 1 waited at the barrier for the transfer, which waited for op 1. Now
// as without barriers: op 0 0..10, op 1 10..20, the transfer 20..30, op 2
// 30..40.
TEST(FixedTransferPropertyTest,
     EveryPlanCompletesWithUnlimitedMemoryAndBarriers) {
  testing::TinyTrace t;
  t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(10, 0, {2});
  t.Fixed(Direction::kH2D, 10, 1, 2);
  const Trace trace = t.Build();
  SimulationOptions options;
  options.per_layer_barriers = true;
  const SimulationResult r = *Simulate(trace, testing::ByteNanosecondLink(),
                                       Plan::AllKeep(trace), options);
  EXPECT_TRUE(r.feasible) << r.infeasibility.reason;
  EXPECT_EQ(r.iteration_ns, 40);
  EXPECT_GT(CheckAllComplete(true), 600);
}

}  // namespace
}  // namespace slackswap
