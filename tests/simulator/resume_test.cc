// Replays resumed from another plan's saved states (resume_points.h): a
// plan with a few tensors changed, replayed from the states its base plan's
// replay recorded, gives the result it gives replayed from the start, bit
// for bit: every metric, the cutoff's verdict, the events, the issue_waited
// marks and the states it records in turn. Over generated and random
// traces, random plans and budgets, each GPU's own link and a shared uplink
// in lockstep (with HBM contention now and then), with and without a cutoff
// at the base plan's time; and where a replay may not resume (barriers,
// fixed transfers, an allocator model), it starts at the start.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simulator/event_model.h"
#include "simulator/plan.h"
#include "simulator/schedule.h"
#include "tests/simulator/random_plans.h"

namespace slackswap {
namespace {

using ::slackswap::testing::MixedWorkloads;
using ::slackswap::testing::RandomPlan;
using ::slackswap::testing::SharedUplink;
using ::slackswap::testing::Workload;

constexpr uint64_t kSeed = 20261206;
constexpr int kTrials = 12;
constexpr int kCandidates = 12;

// Generated workloads (2 layers, two GPUs), random small traces (a third
// of them with fixed transfers) and medium chains, branched blocks and DAGs
// of 20 to 150 tensors.
std::vector<Workload> Workloads() {
  return MixedWorkloads(kSeed, {"a100", "h100"}, 24, 3, 9, 150);
}

// `plan` with 1 to 3 tensors given another decision, or one swap another
// issue point; every swap's issue point then back in its window. Empty
// where the draw changed nothing or made no valid plan.
std::optional<Plan> Changed(const Trace& trace, const Hardware& hw,
                            const Plan& plan, bool barriers,
                            std::mt19937_64& rng) {
  Plan next = plan;
  const int32_t n = trace.num_tensors();
  std::uniform_int_distribution<int32_t> tensor(0, n - 1);
  if (rng() % 4 == 0) {
    const int32_t t = tensor(rng);
    if (next.decisions[t] != Decision::kSwap) return std::nullopt;
    next.prefetch_issue_op[t] += rng() % 2 == 0 ? -1 : 1;
  } else {
    const int changes = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < changes; ++i) {
      const int32_t t = tensor(rng);
      next.decisions[t] = static_cast<Decision>(rng() % 3);
    }
  }
  const std::vector<int32_t> need = DeriveNeeds(trace, next.decisions);
  const std::vector<int32_t> run_start = BlockRunStarts(trace);
  for (int32_t t = 0; t < n; ++t) {
    if (next.decisions[t] != Decision::kSwap) {
      next.prefetch_issue_op[t] = 0;
      continue;
    }
    const int32_t earliest = trace.tensors[t].last_forward_use + 1;
    const int32_t latest = barriers ? run_start[need[t]] : need[t];
    next.prefetch_issue_op[t] =
        std::clamp(next.prefetch_issue_op[t], earliest, latest);
  }
  if (next.decisions == plan.decisions &&
      next.prefetch_issue_op == plan.prefetch_issue_op) {
    return std::nullopt;
  }
  if (!ValidatePlan(trace, hw, next, barriers).ok()) return std::nullopt;
  return next;
}

struct Counts {
  int candidates = 0;
  int resumed = 0;
  int64_t events = 0;
  int64_t skipped = 0;
  int cut_off = 0;
};

void ExpectSameReplay(const SimulationResult& a, const SimulationResult& b) {
  EXPECT_EQ(a.feasible, b.feasible);
  EXPECT_EQ(a.cut_off, b.cut_off);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.iteration_ns, b.iteration_ns);
  EXPECT_EQ(a.throughput_ratio, b.throughput_ratio);
  EXPECT_EQ(a.prefetch_wait_ns, b.prefetch_wait_ns);
  EXPECT_EQ(a.memory_wait_ns, b.memory_wait_ns);
  EXPECT_EQ(a.barrier_wait_ns, b.barrier_wait_ns);
  EXPECT_EQ(a.fixed_transfer_wait_ns, b.fixed_transfer_wait_ns);
  EXPECT_EQ(a.recompute_ns, b.recompute_ns);
  EXPECT_EQ(a.swapped_bytes, b.swapped_bytes);
  EXPECT_EQ(a.recomputed_bytes, b.recomputed_bytes);
  EXPECT_EQ(a.kept_bytes, b.kept_bytes);
  EXPECT_EQ(a.peak_resident_bytes, b.peak_resident_bytes);
  EXPECT_EQ(a.peak_reserved_bytes, b.peak_reserved_bytes);
  EXPECT_EQ(a.contention_ns, b.contention_ns);
  EXPECT_EQ(a.uplink_wait_ns, b.uplink_wait_ns);
  EXPECT_EQ(a.d2h_busy_ns, b.d2h_busy_ns);
  EXPECT_EQ(a.h2d_busy_ns, b.h2d_busy_ns);
  EXPECT_EQ(a.forward_end_ns, b.forward_end_ns);
  EXPECT_EQ(a.last_offload_lag_ns, b.last_offload_lag_ns);
  EXPECT_EQ(a.held_prefetch_op, b.held_prefetch_op);
  EXPECT_EQ(a.held_prefetch_excess_bytes, b.held_prefetch_excess_bytes);
  EXPECT_EQ(a.infeasibility.op, b.infeasibility.op);
  EXPECT_EQ(a.infeasibility.reason, b.infeasibility.reason);
  // The states it records in turn, for the candidates after it.
  ASSERT_EQ(a.resume_points.size(), b.resume_points.size());
  for (size_t i = 0; i < a.resume_points.size(); ++i) {
    const ReplayState& x = a.resume_points[i];
    const ReplayState& y = b.resume_points[i];
    EXPECT_EQ(x.now, y.now);
    EXPECT_EQ(x.events, y.events);
    EXPECT_EQ(x.ops_done, y.ops_done);
    EXPECT_EQ(x.resident, y.resident);
    EXPECT_EQ(x.peak_resident_bytes, y.peak_resident_bytes);
    EXPECT_EQ(x.memory_wait_ns, y.memory_wait_ns);
    EXPECT_EQ(x.compute_busy, y.compute_busy);
    EXPECT_EQ(x.stage, y.stage);
    EXPECT_EQ(x.started_ns, y.started_ns);
    EXPECT_EQ(x.next_offload, y.next_offload);
    EXPECT_EQ(x.most_ahead_ns, y.most_ahead_ns);
    EXPECT_EQ(x.last_check_ns, y.last_check_ns);
  }
}

// Replays `candidate` from the start and resumed from `base` (recorded),
// under `options` and, where the base completes, with a cutoff at its
// time; the two must agree.
void Compare(const Workload& w, const Hardware& hw, const Plan& plan,
             const Schedule& schedule, const SimulationResult& base,
             const Plan& candidate, SimulationOptions options, bool cutoff,
             Counts& counts) {
  if (cutoff && base.feasible) options.cutoff_ns = base.iteration_ns;
  const Schedule derived = DeriveSchedule(w.trace, candidate);
  std::vector<uint8_t> marks_plain(w.trace.tensors.size(), 0);
  std::vector<uint8_t> marks_resumed(w.trace.tensors.size(), 0);
  options.issue_waited = &marks_plain;
  const SimulationResult plain =
      SimulateSchedule(w.trace, hw, candidate, derived, options);
  const ResumeBase from{&plan, &schedule, &base.resume_points};
  options.issue_waited = &marks_resumed;
  options.resume_from = &from;
  const SimulationResult resumed =
      SimulateSchedule(w.trace, hw, candidate, derived, options);
  EXPECT_EQ(plain.resumed_events, 0);
  ExpectSameReplay(plain, resumed);
  EXPECT_EQ(marks_plain, marks_resumed);
  ++counts.candidates;
  counts.events += plain.events;
  counts.cut_off += plain.cut_off;
  if (resumed.resumed_events > 0) {
    ++counts.resumed;
    counts.skipped += resumed.resumed_events;
  }
}

TEST(ResumeTest, AResumedReplayIsTheReplayFromTheStart) {
  std::mt19937_64 rng(kSeed);
  Counts counts;
  for (const Workload& w : Workloads()) {
    for (int trial = 0; trial < kTrials; ++trial) {
      SCOPED_TRACE(absl::StrCat(w.name, " trial ", trial));
      Hardware hw = w.hardware;
      SimulationOptions options;
      if (trial % 3 == 1) {
        hw = SharedUplink(hw, 2);  // ranks in lockstep
        options.physics.hbm_contention = trial % 2 == 1 &&
                                         hw.matmul_flops_per_second > 0 &&
                                         hw.hbm_bytes_per_second > 0;
      }
      if (!CheckPhysics(w.trace, hw, options.physics).ok()) continue;
      options.budget_bytes =
          static_cast<int64_t>(static_cast<double>(AllKeepPeakBytes(w.trace)) *
                               (0.3 + 0.7 * trial / kTrials));
      const Plan plan = RandomPlan(w.trace, false, rng);
      const Schedule schedule = DeriveSchedule(w.trace, plan);
      SimulationOptions recording = options;
      recording.record_resume_points = true;
      const SimulationResult base =
          SimulateSchedule(w.trace, hw, plan, schedule, recording);
      EXPECT_LE(base.resume_points.size(), static_cast<size_t>(kResumePoints));
      for (int c = 0; c < kCandidates; ++c) {
        const std::optional<Plan> candidate =
            Changed(w.trace, hw, plan, false, rng);
        if (!candidate) continue;
        Compare(w, hw, plan, schedule, base, *candidate, recording, c % 2 == 0,
                counts);
      }
    }
  }
  std::cout << counts.candidates << " candidates, " << counts.resumed
            << " resumed, " << counts.cut_off << " cut off; " << counts.skipped
            << " of " << counts.events << " events not run\n";
  // Not vacuous: most candidates resume, and skip much of their replays.
  EXPECT_GE(counts.candidates, 2000);
  EXPECT_GE(counts.resumed, counts.candidates / 2);
  EXPECT_GE(counts.skipped, counts.events / 10);
  EXPECT_GE(counts.cut_off, 100);
}

TEST(ResumeTest, WhatMayNotResumeStartsAtTheStart) {
  // Barriers, fixed transfers and an allocator model: nothing recorded,
  // nothing resumed, and the result the same.
  std::mt19937_64 rng(kSeed + 1);
  int compared = 0;
  for (const Workload& w : Workloads()) {
    for (int trial = 0; trial < 3; ++trial) {
      SCOPED_TRACE(absl::StrCat(w.name, " trial ", trial));
      SimulationOptions options;
      options.budget_bytes = AllKeepPeakBytes(w.trace) / 2;
      const bool barriers = trial == 0;
      options.per_layer_barriers = barriers;
      if (trial == 1) options.physics.allocator = AllocatorKind::kCaching;
      if (trial == 2 && w.trace.fixed_transfers.empty()) continue;
      const Plan plan = RandomPlan(w.trace, barriers, rng);
      const Schedule schedule = DeriveSchedule(w.trace, plan);
      options.record_resume_points = true;
      const SimulationResult base =
          SimulateSchedule(w.trace, w.hardware, plan, schedule, options);
      EXPECT_TRUE(base.resume_points.empty());
      // Points from a replay that may record, offered all the same.
      SimulationOptions free = options;
      free.per_layer_barriers = false;
      free.physics.allocator = AllocatorKind::kNone;
      const Plan unbarred = barriers ? RandomPlan(w.trace, false, rng) : plan;
      const Schedule unbarred_schedule = DeriveSchedule(w.trace, unbarred);
      const SimulationResult recorded = SimulateSchedule(
          w.trace, w.hardware, unbarred, unbarred_schedule, free);
      const std::optional<Plan> candidate =
          Changed(w.trace, w.hardware, plan, barriers, rng);
      if (!candidate) continue;
      const Schedule derived = DeriveSchedule(w.trace, *candidate);
      const SimulationResult plain =
          SimulateSchedule(w.trace, w.hardware, *candidate, derived, options);
      const ResumeBase from{&unbarred, &unbarred_schedule,
                            &recorded.resume_points};
      options.resume_from = &from;
      const SimulationResult resumed =
          SimulateSchedule(w.trace, w.hardware, *candidate, derived, options);
      EXPECT_EQ(resumed.resumed_events, 0);
      ExpectSameReplay(plain, resumed);
      ++compared;
    }
  }
  EXPECT_GE(compared, 50);
}

}  // namespace
}  // namespace slackswap
