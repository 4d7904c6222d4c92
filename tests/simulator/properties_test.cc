// Properties of the event model over many generated traces and random plans.
#include <algorithm>
#include <random>

#include "gtest/gtest.h"
#include "planner/basic_plans.h"
#include "simulator/event_model.h"
#include "simulator/node_model.h"
#include "simulator/replay.h"
#include "simulator/schedule.h"
#include "simulator/small_traces.h"
#include "simulator/trace_spec.h"
#include "simulator/workload.h"
#include "tests/simulator/fingerprints.h"
#include "tests/simulator/random_plans.h"
#include "tests/simulator/timeline_checks.h"

namespace slackswap {
namespace {

using ::slackswap::testing::RandomPlan;
using ::slackswap::testing::SharedUplink;
using ::slackswap::testing::SmallWorkloads;
using ::slackswap::testing::Workload;

std::vector<Workload> Workloads() {
  return SmallWorkloads(3, {"titan-x", "a100", "h100", "gh200"});
}

// Trial `trial` of a sweep over random plans: a budget from 40% of the
// all-keep peak up, per-layer barriers every fourth trial (as the plan is
// drawn with them).
SimulationOptions SweepOptions(int64_t peak, int trial) {
  SimulationOptions options;
  options.budget_bytes = static_cast<int64_t>(peak * (0.4 + 0.05 * trial));
  options.per_layer_barriers = trial % 4 == 3;
  return options;
}

// HBM contention where the hardware can carry it (HBM at least twice the
// links).
bool ContentionFits(const Hardware& hw) {
  return hw.hbm_bytes_per_second >=
         2 * (hw.d2h_bytes_per_second + hw.h2d_bytes_per_second);
}

TEST(EventModelPropertyTest, RandomPlansRespectTheBudgetAndMatchTheirTimeline) {
  std::mt19937_64 rng(20261130);
  int feasible = 0, infeasible = 0;
  for (const Workload& w : Workloads()) {
    const int64_t peak = AllKeepPeakBytes(w.trace);
    for (int trial = 0; trial < 30; ++trial) {
      const bool barriers = trial % 3 == 2;
      const Plan plan = RandomPlan(w.trace, barriers, rng);
      SimulationOptions options;
      options.budget_bytes = static_cast<int64_t>(peak * (0.1 + 0.04 * trial));
      options.per_layer_barriers = barriers;
      options.record_timeline = true;
      absl::StatusOr<SimulationResult> r =
          Simulate(w.trace, w.hardware, plan, options);
      ASSERT_TRUE(r.ok()) << w.name << ": " << r.status();
      // Its events: its start at least, at most MaxReplayEvents; a replay
      // that completes ends every step.
      EXPECT_GE(r->events, 1);
      EXPECT_LE(r->events,
                MaxReplayEvents(w.trace, w.hardware, options.physics));
      if (r->feasible) {
        EXPECT_GE(r->events, w.trace.num_ops() + 1);
      }
      if (!r->feasible) {
        ++infeasible;
        EXPECT_FALSE(r->infeasibility.reason.empty());
        EXPECT_LE(r->peak_resident_bytes, options.budget_bytes);
        continue;
      }
      ++feasible;
      SCOPED_TRACE(w.name + " trial " + std::to_string(trial));
      testing::CheckTimeline(w.trace, plan, *r);
    }
  }
  // The sweep must exercise both outcomes, or it proves little.
  EXPECT_GT(feasible, 50);
  EXPECT_GT(infeasible, 5);
}

// The allocator model observes: with it on, every random plan replays to the
// same times and resident bytes, reserving at least what is resident; under
// a reserved budget a feasible replay never reserves more than the budget.
TEST(EventModelPropertyTest, TheAllocatorObservesAndItsBudgetHolds) {
  std::mt19937_64 rng(20261201);
  int reserved_feasible = 0, reserved_infeasible = 0;
  for (const Workload& w : Workloads()) {
    const int64_t peak = AllKeepPeakBytes(w.trace);
    for (int trial = 0; trial < 20; ++trial) {
      const Plan plan = RandomPlan(w.trace, false, rng);
      SimulationOptions options;
      options.budget_bytes = static_cast<int64_t>(peak * (0.3 + 0.05 * trial));
      const SimulationResult plain =
          *Simulate(w.trace, w.hardware, plan, options);
      for (AllocatorKind kind :
           {AllocatorKind::kCaching, AllocatorKind::kExpandable}) {
        SCOPED_TRACE(w.name + " trial " + std::to_string(trial));
        options.physics.allocator = kind;
        options.physics.budget_reserved = false;
        const SimulationResult observed =
            *Simulate(w.trace, w.hardware, plan, options);
        EXPECT_EQ(observed.feasible, plain.feasible);
        EXPECT_EQ(observed.iteration_ns, plain.iteration_ns);
        EXPECT_EQ(observed.memory_wait_ns, plain.memory_wait_ns);
        EXPECT_EQ(observed.peak_resident_bytes, plain.peak_resident_bytes);
        EXPECT_GE(observed.peak_reserved_bytes, observed.peak_resident_bytes);
        EXPECT_GE(observed.fragmentation_bytes, 0);
        EXPECT_LE(observed.fragmentation_bytes, observed.peak_reserved_bytes);
        options.physics.budget_reserved = true;
        const SimulationResult budgeted =
            *Simulate(w.trace, w.hardware, plan, options);
        EXPECT_LE(budgeted.peak_reserved_bytes, options.budget_bytes);
        EXPECT_LE(budgeted.peak_resident_bytes, options.budget_bytes);
        ++(budgeted.feasible ? reserved_feasible : reserved_infeasible);
      }
    }
  }
  EXPECT_GT(reserved_feasible, 20);
  EXPECT_GT(reserved_infeasible, 5);
}

// The node model's exact rates: an uplink no transfer is slowed by, or ranks
// that each get their own link's rate, replay every random plan exactly as
// one GPU alone; with real sharing and contention the stall identity still
// holds, with the ops' extra time counted as contention.
TEST(EventModelPropertyTest, NodePhysicsIsExactAndAccountsForEveryNs) {
  std::mt19937_64 rng(20261202);
  int slowed = 0;
  for (const Workload& w : Workloads()) {
    const int64_t peak = AllKeepPeakBytes(w.trace);
    for (int trial = 0; trial < 12; ++trial) {
      SCOPED_TRACE(w.name + " trial " + std::to_string(trial));
      const Plan plan = RandomPlan(w.trace, trial % 4 == 3, rng);
      SimulationOptions options = SweepOptions(peak, trial);
      const SimulationResult alone =
          *Simulate(w.trace, w.hardware, plan, options);
      const int ranks = 1 + trial % 4;
      Hardware wide = w.hardware;
      wide.gpus_per_uplink = ranks;
      wide.uplink_d2h_bytes_per_second =
          w.hardware.d2h_bytes_per_second * ranks;
      wide.uplink_h2d_bytes_per_second =
          w.hardware.h2d_bytes_per_second * ranks;
      const SimulationResult same = *Simulate(w.trace, wide, plan, options);
      EXPECT_EQ(testing::Fingerprint(same), testing::Fingerprint(alone));
      // Shared for real, skewed, contended.
      const Hardware shared = SharedUplink(w.hardware, 2 + trial % 3);
      SimulationOptions on_node = options;
      on_node.physics.hbm_contention = ContentionFits(shared);
      on_node.physics.rank_skew_ns = (trial % 2) * 1'000'000;
      const SimulationResult r = *Simulate(w.trace, shared, plan, on_node);
      EXPECT_LE(r.peak_resident_bytes, options.budget_bytes);
      EXPECT_LE(r.events, MaxReplayEvents(w.trace, shared, on_node.physics));
      EXPECT_EQ(same.events, alone.events);
      EXPECT_GE(r.contention_ns, 0);
      EXPECT_GE(r.uplink_wait_ns, 0);
      if (!r.feasible) continue;
      EXPECT_EQ(r.iteration_ns, w.trace.ideal_ns + r.contention_ns +
                                    r.recompute_ns + r.stall_ns());
      if (r.uplink_wait_ns > 0 && r.contention_ns > 0) ++slowed;
    }
  }
  EXPECT_GT(slowed, 5);
}

// Ranks in lockstep are replayed once, each copy at its share of the uplink
// and its end known when it starts; the loop that shares the uplink among
// replays (what skewed ranks and jobs on one node use) must agree with it to
// the byte, timeline and slowdowns included.
TEST(EventModelPropertyTest, LockstepRanksReplayAsTheSharedUplinkLoopDoes) {
  std::mt19937_64 rng(20261203);
  int slowed = 0, contended = 0;
  for (const Workload& w : Workloads()) {
    const int64_t peak = AllKeepPeakBytes(w.trace);
    for (int trial = 0; trial < 12; ++trial) {
      SCOPED_TRACE(w.name + " trial " + std::to_string(trial));
      const Plan plan = RandomPlan(w.trace, trial % 4 == 3, rng);
      SimulationOptions options = SweepOptions(peak, trial);
      options.record_timeline = true;
      Hardware hw = SharedUplink(w.hardware, 2 + trial % 3);
      hw.uplink_h2d_bytes_per_second = hw.h2d_bytes_per_second * 3 / 2;
      options.physics.hbm_contention = ContentionFits(hw) && trial % 2 == 0;
      const SimulationResult lockstep = *Simulate(w.trace, hw, plan, options);

      const Schedule schedule = DeriveSchedule(w.trace, plan);
      std::vector<internal::Member> members(1);
      members[0].replay = std::make_unique<internal::Replay>(
          w.trace, hw, plan, schedule, options, internal::Rates::kShared);
      members[0].hardware = &hw;
      members[0].multiplicity = hw.gpus_per_uplink;
      SimulationResult shared;
      internal::RunShared(
          members, hw,
          [&](size_t, int64_t, SimulationResult r) { shared = std::move(r); });
      EXPECT_EQ(testing::Fingerprint(lockstep), testing::Fingerprint(shared));
      EXPECT_EQ(testing::Fingerprint(lockstep), testing::Fingerprint(shared));
      if (lockstep.uplink_wait_ns > 0) ++slowed;
      if (lockstep.contention_ns > 0) ++contended;
    }
  }
  // The cases exercise both: copies slowed by their twins, ops by copies.
  EXPECT_GT(slowed, 10);
  EXPECT_GT(contended, 5);
}

// The cutoff stops only replays that cannot finish under it, and changes
// nothing else: past the iteration it is the full replay byte for byte.
TEST(EventModelPropertyTest, ACutoffStopsOnlyWhatCannotFinishUnderIt) {
  std::mt19937_64 rng(20261204);
  int cut = 0, cut_at_start = 0;
  for (const Workload& w : Workloads()) {
    const int64_t peak = AllKeepPeakBytes(w.trace);
    for (int trial = 0; trial < 12; ++trial) {
      SCOPED_TRACE(w.name + " trial " + std::to_string(trial));
      const Plan plan = RandomPlan(w.trace, trial % 4 == 3, rng);
      SimulationOptions options = SweepOptions(peak, trial);
      // Odd trials: ranks in lockstep, contended.
      const Hardware hw =
          trial % 2 == 1 ? SharedUplink(w.hardware, 2) : w.hardware;
      const SimulationResult full = *Simulate(w.trace, hw, plan, options);
      EXPECT_FALSE(full.cut_off);
      int64_t steps_ns = w.trace.ideal_ns;
      for (int32_t t = 0; t < w.trace.num_tensors(); ++t) {
        if (plan.decisions[t] == Decision::kRecompute)
          steps_ns += w.trace.tensors[t].recompute_ns;
      }
      if (!full.feasible) {
        // Stuck: stopped where it got stuck, or before.
        options.cutoff_ns = full.iteration_ns + 1;
        const SimulationResult r = *Simulate(w.trace, hw, plan, options);
        EXPECT_FALSE(r.feasible);
        EXPECT_LE(r.iteration_ns, full.iteration_ns);
        if (!r.cut_off) {
          EXPECT_EQ(testing::Fingerprint(r), testing::Fingerprint(full));
        }
        continue;
      }
      // Above the iteration: no effect.
      options.cutoff_ns = full.iteration_ns + 1;
      const SimulationResult above = *Simulate(w.trace, hw, plan, options);
      EXPECT_EQ(testing::Fingerprint(above), testing::Fingerprint(full));
      // At or below the iteration: stopped, or finished no sooner.
      for (int64_t cutoff : {full.iteration_ns, full.iteration_ns - 1,
                             (steps_ns + full.iteration_ns) / 2, steps_ns}) {
        options.cutoff_ns = cutoff;
        const SimulationResult r = *Simulate(w.trace, hw, plan, options);
        if (r.cut_off) {
          ++cut;
          EXPECT_FALSE(r.feasible);
          EXPECT_LE(r.iteration_ns, full.iteration_ns);
          if (cutoff == steps_ns) {
            EXPECT_EQ(r.iteration_ns, 0);
            ++cut_at_start;
          }
        } else {
          EXPECT_EQ(testing::Fingerprint(r), testing::Fingerprint(full));
          EXPECT_TRUE(!r.feasible || r.iteration_ns >= cutoff);
          EXPECT_GT(cutoff, steps_ns);
        }
      }
    }
  }
  EXPECT_GT(cut, 50);
  EXPECT_GT(cut_at_start, 10);
}

// The cutoff counts the H2D stream's work too: where the prefetches alone
// take longer than the cutoff, the replay stops before its first step, though
// its steps alone would fit (a slow link, one GPU or two in lockstep).
TEST(EventModelPropertyTest, ACutoffBelowThePrefetchesTimeStopsAtOnce) {
  int cut = 0;
  for (const Workload& w : Workloads()) {
    const Plan plan = AllSwapPlan(w.trace);
    int64_t swapped = 0;
    for (int32_t t = 0; t < w.trace.num_tensors(); ++t) {
      if (plan.decisions[t] == Decision::kSwap)
        swapped += w.trace.tensors[t].size_bytes;
    }
    if (swapped == 0) continue;
    // A link that moves the swapped bytes in three ideal iterations.
    Hardware slow = w.hardware;
    slow.h2d_bytes_per_second = slow.d2h_bytes_per_second = std::max<int64_t>(
        1, static_cast<int64_t>(static_cast<double>(swapped) * 1e9 /
                                (3.0 * static_cast<double>(w.trace.ideal_ns))));
    for (const Hardware& hw : {slow, SharedUplink(slow, 2)}) {
      SCOPED_TRACE(w.name + " ranks " + std::to_string(hw.gpus_per_uplink));
      SimulationOptions options;
      options.budget_bytes = AllKeepPeakBytes(w.trace);
      const SimulationResult full = *Simulate(w.trace, hw, plan, options);
      ASSERT_TRUE(full.feasible) << full.infeasibility.reason;
      // Its steps alone (no rebuilds) take the ideal iteration.
      options.cutoff_ns = 2 * w.trace.ideal_ns;
      ASSERT_GE(full.iteration_ns, options.cutoff_ns);
      const SimulationResult r = *Simulate(w.trace, hw, plan, options);
      EXPECT_TRUE(r.cut_off);
      EXPECT_EQ(r.iteration_ns, 0);
      EXPECT_EQ(r.infeasibility.op, 0);
      cut += r.cut_off;
      // Just above the iteration it runs to the end, unchanged.
      options.cutoff_ns = full.iteration_ns + 1;
      EXPECT_EQ(testing::Fingerprint(*Simulate(w.trace, hw, plan, options)),
                testing::Fingerprint(full));
    }
  }
  EXPECT_GE(cut, 6);
}

// The reversed relations (op -> tensors it reads, input -> tensors rebuilt
// from it) list every pair of the forward ones once, ascending, on generated
// and random traces.
TEST(EventModelPropertyTest, ReversedRelationsMatchTheForwardOnes) {
  auto check = [](const Trace& trace) {
    std::vector<std::vector<int32_t>> reads(trace.num_ops());
    std::vector<std::vector<int32_t>> dependents(trace.num_tensors());
    for (int32_t t = 0; t < trace.num_tensors(); ++t) {
      for (int32_t op : trace.uses.Row(t)) reads[op].push_back(t);
      for (int32_t input : trace.recompute_inputs.Row(t))
        dependents[input].push_back(t);
    }
    for (int32_t op = 0; op < trace.num_ops(); ++op) {
      const auto row = trace.reads.Row(op);
      EXPECT_EQ(std::vector<int32_t>(row.begin(), row.end()), reads[op]);
    }
    for (int32_t t = 0; t < trace.num_tensors(); ++t) {
      const auto row = trace.recompute_dependents.Row(t);
      EXPECT_EQ(std::vector<int32_t>(row.begin(), row.end()), dependents[t]);
    }
  };
  for (const Workload& w : Workloads()) check(w.trace);
  int edges = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const absl::StatusOr<Trace> trace =
        ValidateTrace(RandomSmallTrace(seed, {2, 12, 10}).trace);
    ASSERT_TRUE(trace.ok()) << trace.status();
    check(*trace);
    edges += static_cast<int>(trace->recompute_inputs.items.size());
  }
  EXPECT_GT(edges, 200);
}

TEST(EventModelPropertyTest, AllKeepWithUnlimitedMemoryIsTheSumOfDurations) {
  for (const Workload& w : Workloads()) {
    absl::StatusOr<SimulationResult> r =
        Simulate(w.trace, w.hardware, IdealPlan(w.trace), SimulationOptions());
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->iteration_ns, w.trace.ideal_ns) << w.name;
    EXPECT_DOUBLE_EQ(r->throughput_ratio, 1.0);
    EXPECT_EQ(r->stall_ns(), 0);
    EXPECT_EQ(r->peak_resident_bytes, AllKeepPeakBytes(w.trace));
  }
}

TEST(EventModelPropertyTest, SimulationIsDeterministic) {
  std::mt19937_64 rng(7);
  for (const Workload& w : Workloads()) {
    const Plan plan = RandomPlan(w.trace, false, rng);
    SimulationOptions options;
    options.budget_bytes = AllKeepPeakBytes(w.trace) / 2;
    options.record_timeline = true;
    const SimulationResult a = *Simulate(w.trace, w.hardware, plan, options);
    const SimulationResult b = *Simulate(w.trace, w.hardware, plan, options);
    EXPECT_EQ(testing::Fingerprint(a), testing::Fingerprint(b));
    EXPECT_EQ(testing::Fingerprint(a), testing::Fingerprint(b));
  }
}

// Every field of a schedule, for comparing two.
std::vector<std::vector<int32_t>> Fields(const Schedule& s) {
  return {s.need_op,
          s.offload_order,
          s.prefetch_order,
          s.prefetch_rank,
          s.rebuilds.begin,
          s.rebuilds.items,
          {s.num_steps},
          s.release_after_step.begin,
          s.release_after_step.items,
          s.forward_release_after_op.begin,
          s.forward_release_after_op.items,
          s.prefetches_needed,
          s.fixed_h2d_needed,
          s.fixed_d2h_needed,
          s.fixed_sources.begin,
          s.fixed_sources.items};
}

// The local search (polish.h) reuses one schedule for every candidate with
// the plan's decisions, and hands DeriveSchedule the needs it worked out: a
// schedule must depend on the decisions alone, and deriving into a reused
// Schedule, with the needs given or not, must give a fresh one's fields.
TEST(EventModelPropertyTest, AScheduleFollowsFromTheDecisionsAlone) {
  std::mt19937_64 rng(20261205);
  std::vector<Workload> workloads = Workloads();
  for (Workload& w : SmallWorkloads(2, {"a100", "v100"}, 20261205))
    workloads.push_back(std::move(w));
  Schedule reused;
  int with_fixed = 0, rebuilt = 0;
  for (const Workload& w : workloads) {
    for (int trial = 0; trial < 8; ++trial) {
      SCOPED_TRACE(w.name + " trial " + std::to_string(trial));
      const Plan plan = RandomPlan(w.trace, trial % 2 == 1, rng);
      const std::vector<std::vector<int32_t>> fresh =
          Fields(DeriveSchedule(w.trace, plan));
      // Over the last trial's schedule, with the needs given.
      std::vector<int32_t> need = DeriveNeeds(w.trace, plan.decisions);
      DeriveSchedule(w.trace, plan, reused, need);
      EXPECT_EQ(Fields(reused), fresh);
      // The same decisions, other issue points.
      Plan moved = plan;
      std::uniform_int_distribution<int32_t> op(0, w.trace.num_ops() - 1);
      for (int32_t& issue : moved.prefetch_issue_op) issue = op(rng);
      DeriveSchedule(w.trace, moved, reused);
      EXPECT_EQ(Fields(reused), fresh);
      with_fixed += w.trace.num_fixed_transfers() > 0;
      rebuilt += !reused.rebuilds.items.empty();
    }
  }
  // Both kinds of trace and plans that rebuild.
  EXPECT_GT(with_fixed, 10);
  EXPECT_GT(rebuilt, 50);
}

TEST(EventModelPropertyTest, AllSwapWithAFullBudgetNeverWaitsForMemory) {
  for (const Workload& w : Workloads()) {
    SimulationOptions options;
    options.budget_bytes = AllKeepPeakBytes(w.trace);
    const SimulationResult r =
        *Simulate(w.trace, w.hardware, AllSwapPlan(w.trace), options);
    ASSERT_TRUE(r.feasible) << w.name << ": " << r.infeasibility.reason;
    EXPECT_EQ(r.memory_wait_ns, 0) << w.name;
    EXPECT_GE(r.iteration_ns, w.trace.ideal_ns);
  }
}

}  // namespace
}  // namespace slackswap
