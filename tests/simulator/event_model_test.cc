// Hand-computed traces of a few operators, one per rule of the event model
// (docs/event-model.md). The link moves 1 byte/ns, so every time below can be
// checked with pencil and paper; each test spells its arithmetic out.
#include "simulator/event_model.h"

#include <limits>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "simulator/replay.h"
#include "simulator/schedule.h"
#include "tests/simulator/event_model_helpers.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace {

using ::slackswap::testing::ByteNanosecondLink;
using ::slackswap::testing::Events;
using ::slackswap::testing::PlanOf;
using ::slackswap::testing::Replay;
using ::slackswap::testing::TinyTrace;

TEST(EventModelTest, KeepHoldsTensorsFromProductionToLastBackwardUse) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(20), t.Bwd(20);
  t.Tensor(100, 0, {1, 3});  // A: live 0..end of op 3
  t.Tensor(50, 1, {2});      // B: live from op 1 to end of op 2
  const SimulationResult r = Replay(t.Build(), PlanOf("kk"));
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.iteration_ns, 60);
  EXPECT_EQ(r.ideal_ns, 60);
  EXPECT_DOUBLE_EQ(r.throughput_ratio, 1.0);
  EXPECT_EQ(r.peak_resident_bytes, 150);
  EXPECT_EQ(r.stall_ns(), 0);
  EXPECT_EQ(r.kept_bytes, 150);
  // Resident bytes just after each op started: 100, 150, 150, 100.
  const std::vector<TimelineEvent> ops = Events(r, TimelineKind::kOp);
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].resident_bytes, 100);
  EXPECT_EQ(ops[1].resident_bytes, 150);
  EXPECT_EQ(ops[2].resident_bytes, 150);
  EXPECT_EQ(ops[3].resident_bytes, 100);
}

TEST(EventModelTest, SwapHiddenBehindComputeDoesNotStall) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(100), t.Bwd(100), t.Bwd(10);
  t.Tensor(50, 0, {3});
  // Offload 10..60. Issue at op 2: prefetch 110..160, before op 3 starts at
  // 210.
  const SimulationResult r = Replay(t.Build(), PlanOf("s", 2));
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.iteration_ns, 220);
  EXPECT_EQ(r.prefetch_wait_ns, 0);
  EXPECT_EQ(r.swapped_bytes, 50);
  EXPECT_EQ(r.d2h_busy_ns, 50);
  EXPECT_EQ(r.h2d_busy_ns, 50);
  EXPECT_EQ(r.forward_end_ns, 110);
  EXPECT_EQ(r.last_offload_lag_ns, 60 - 110);
  const std::vector<TimelineEvent> prefetches =
      Events(r, TimelineKind::kPrefetch);
  ASSERT_EQ(prefetches.size(), 1u);
  EXPECT_EQ(prefetches[0].start_ns, 110);
  EXPECT_EQ(prefetches[0].end_ns, 160);
}

TEST(EventModelTest, LatePrefetchStallsTheComputeStream) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(100), t.Bwd(20), t.Bwd(10);
  t.Tensor(50, 0, {3});
  // Prefetch 110..160; op 3 is ready at 130 and waits 30.
  const SimulationResult r = Replay(t.Build(), PlanOf("s", 2));
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.prefetch_wait_ns, 30);
  EXPECT_EQ(r.iteration_ns, 170);
}

TEST(EventModelTest, TransferLatencyIsAddedToEveryCopy) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(100), t.Bwd(20), t.Bwd(10);
  t.Tensor(50, 0, {3});
  // Each copy takes 5 + 50 ns: offload 10..65, prefetch 110..165, op 3
  // waits 35.
  const SimulationResult r = Replay(t.Build(), PlanOf("s", 2), kUnlimitedBytes,
                                    false, ByteNanosecondLink(5));
  EXPECT_EQ(r.d2h_busy_ns, 55);
  EXPECT_EQ(r.prefetch_wait_ns, 35);
}

TEST(EventModelTest, OffloadsRunFifoAndPrefetchesEarliestDeadlineFirst) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Fwd(100), t.Bwd(10), t.Bwd(10);
  const int a = t.Tensor(30, 0, {4});  // needed last
  const int b = t.Tensor(20, 1, {3});  // needed first
  const SimulationResult r = Replay(t.Build(), PlanOf("ss", 3));
  ASSERT_TRUE(r.feasible);
  // D2H in production order: A 10..40, then B 40..60 (B waited for A).
  const std::vector<TimelineEvent> offloads = Events(r, TimelineKind::kOffload);
  ASSERT_EQ(offloads.size(), 2u);
  EXPECT_EQ(offloads[0].index, a);
  EXPECT_EQ(offloads[0].start_ns, 10);
  EXPECT_EQ(offloads[1].index, b);
  EXPECT_EQ(offloads[1].start_ns, 40);
  EXPECT_EQ(offloads[1].end_ns, 60);
  // H2D by deadline: B (need op 3) 120..140, then A (need op 4) 140..170.
  const std::vector<TimelineEvent> prefetches =
      Events(r, TimelineKind::kPrefetch);
  ASSERT_EQ(prefetches.size(), 2u);
  EXPECT_EQ(prefetches[0].index, b);
  EXPECT_EQ(prefetches[0].start_ns, 120);
  EXPECT_EQ(prefetches[1].index, a);
  EXPECT_EQ(prefetches[1].start_ns, 140);
  // Op 3 waits 120..140, op 4 waits 150..170.
  EXPECT_EQ(r.prefetch_wait_ns, 40);
  EXPECT_EQ(r.iteration_ns, 180);
}

TEST(EventModelTest, PrefetchWaitsForItsIssuePoint) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(100), t.Bwd(100), t.Bwd(10);
  t.Tensor(50, 0, {3});
  // Issue at op 3: the prefetch starts only when op 2 ends at 210; 210..260.
  const SimulationResult late = Replay(t.Build(), PlanOf("s", 3));
  EXPECT_EQ(late.prefetch_wait_ns, 50);
  EXPECT_EQ(late.iteration_ns, 270);
  // Issue at op 1 (right after the last forward use): starts when the
  // offload ends at 60.
  const SimulationResult early = Replay(t.Build(), PlanOf("s", 1));
  EXPECT_EQ(Events(early, TimelineKind::kPrefetch)[0].start_ns, 60);
  EXPECT_EQ(early.prefetch_wait_ns, 0);
}

TEST(EventModelTest, IssuePointOutsideItsWindowIsInvalid) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(100), t.Bwd(100), t.Bwd(10);
  t.Tensor(50, 0, {3});
  const Trace trace = t.Build();
  for (int32_t issue : {0, 4, -1}) {
    absl::StatusOr<SimulationResult> r = Simulate(
        trace, ByteNanosecondLink(), PlanOf("s", issue), SimulationOptions());
    ASSERT_FALSE(r.ok()) << "issue " << issue;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(r.status().message(),
                                 "plan.tensors[0].prefetch_issue_op"))
        << r.status();
  }
}

TEST(EventModelTest, ForwardOpWaitsForMemoryFreedByAnOffload) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(60, 0, {3});  // A, swapped
  t.Tensor(60, 1, {2});  // B, kept
  // Budget 100: op 1 needs 60 more while A (60) is resident; A's offload ends
  // at 70 and frees it, so op 1 waits 10..70. Op 2 runs 80..90 and frees B;
  // A's prefetch then fits: 90..150, and op 3 waits 90..150.
  const SimulationResult r = Replay(t.Build(), PlanOf("sk", 2), 100);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.memory_wait_ns, 60);
  EXPECT_EQ(r.prefetch_wait_ns, 60);
  EXPECT_EQ(r.iteration_ns, 160);
  EXPECT_EQ(r.peak_resident_bytes, 60);
}

TEST(EventModelTest, ComputeAllocationsAreServedBeforePrefetches) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(1), t.Bwd(10, 0, 80), t.Bwd(10), t.Bwd(10);
  const int x = t.Tensor(20, 0, {4});  // offload 10..30
  const int y = t.Tensor(60, 1, {5});  // offload 30..90
  // Budget 95. Op 3 needs 80 of workspace from t=21 and gets it when Y's copy
  // is freed at 90. X's prefetch could start at 30 and would fit then, but
  // the compute stream is waiting for memory, so it must not: had it taken
  // 20 bytes, op 3 could never start. X goes 100..120 after op 3 (90..100).
  const SimulationResult r = Replay(t.Build(), PlanOf("ss", 2), 95);
  ASSERT_TRUE(r.feasible) << r.infeasibility.reason;
  EXPECT_EQ(r.memory_wait_ns, 90 - 21);
  const std::vector<TimelineEvent> prefetches =
      Events(r, TimelineKind::kPrefetch);
  ASSERT_EQ(prefetches.size(), 2u);
  EXPECT_EQ(prefetches[0].index, x);
  EXPECT_EQ(prefetches[0].start_ns, 100);
  EXPECT_EQ(prefetches[1].index, y);
  EXPECT_EQ(prefetches[1].start_ns, 120);
  // Op 4 is ready at 100 and waits 100..120 for X; op 5 waits 130..180 for Y.
  EXPECT_EQ(r.prefetch_wait_ns, 20 + 50);
  EXPECT_EQ(r.iteration_ns, 190);
  EXPECT_LE(r.peak_resident_bytes, 95);
}

// Prefetch admission (docs/event-model.md): the counterexample that the rule
// before (a prefetch starts when its tensor fits now) deadlocks at a faster
// link, and the any-speed rule that replaces it.
SimulationResult ReplayAt(const Trace& trace, const Plan& plan, int64_t budget,
                          int64_t link_bytes_per_second,
                          PrefetchAdmission rule) {
  Hardware hw = ByteNanosecondLink();
  hw.d2h_bytes_per_second = hw.h2d_bytes_per_second = link_bytes_per_second;
  return Replay(trace, plan, budget, false, hw, rule);
}

TEST(EventModelTest, AFasterLinkDeadlocksAPrefetchThatFitsNowButNotAnyStep) {
  TinyTrace t;
  t.Fwd(100), t.Fwd(100), t.Bwd(100, 0, 50), t.Bwd(100);
  t.Tensor(10, 0, {2}, 300);  // R: recomputed, rebuilt before op 2 (300 ns)
  t.Tensor(100, 1, {3});      // S: swapped, issue point op 2
  const Trace trace = t.Build();
  const Plan plan = {{Decision::kRecompute, Decision::kSwap}, {0, 2}};
  // Budget 150. Op 0 0..100 (R, dropped at 100), op 1 100..200 (S: 100
  // resident), S's offload from 200, the rebuild of R 200..500 (110
  // resident); op 2 needs 50 more: 160 > 150, so it waits for S's forward
  // copy to go.
  //
  // Profiled link, 0.2 bytes/ns: the offload takes 500 ns, ends at 700 and
  // frees S (10 resident); op 2 runs 700..800; S's prefetch (100 bytes) waits
  // for op 2's 50 and R's 10 to go, 800..1300; op 3 1300..1400. Both rules.
  for (PrefetchAdmission rule :
       {PrefetchAdmission::kFitsNow, PrefetchAdmission::kAnySpeed}) {
    const SimulationResult r = ReplayAt(trace, plan, 150, 200'000'000, rule);
    ASSERT_TRUE(r.feasible) << r.infeasibility.reason;
    EXPECT_EQ(r.iteration_ns, 1400);
    EXPECT_EQ(r.memory_wait_ns, 700 - 500);
  }
  // The link 5x faster, 1 byte/ns: the offload ends at 300, during the
  // rebuild, and frees S (10 resident). The issue point has been reached (ops
  // 0 and 1 have ended) and 10 + 100 fits now, so the old rule starts S's
  // prefetch at 300 (110 resident). Op 2 then needs 110 + 50 > 150 and nothing
  // pending frees memory: deadlock.
  const SimulationResult fits_now =
      ReplayAt(trace, plan, 150, 1'000'000'000, PrefetchAdmission::kFitsNow);
  EXPECT_FALSE(fits_now.feasible);
  EXPECT_EQ(fits_now.infeasibility.op, 2);
  EXPECT_EQ(fits_now.infeasibility.waiting_for, WaitCause::kMemory);
  EXPECT_EQ(fits_now.infeasibility.bytes_resident, 110);
  // The any-speed rule: S's deadline is op 3 (step 4); op 2 (step 3) lies
  // before it and needs R (10) + its 50 + S's 100 = 160 > 150: not at 300.
  // Op 2 runs 500..600 (60 resident); at 600 only R is gone, S's window is
  // empty and it fits: 600..700; op 3 700..800.
  const SimulationResult any_speed =
      ReplayAt(trace, plan, 150, 1'000'000'000, PrefetchAdmission::kAnySpeed);
  ASSERT_TRUE(any_speed.feasible) << any_speed.infeasibility.reason;
  const std::vector<TimelineEvent> prefetches =
      Events(any_speed, TimelineKind::kPrefetch);
  ASSERT_EQ(prefetches.size(), 1u);
  EXPECT_EQ(prefetches[0].start_ns, 600);
  EXPECT_EQ(any_speed.memory_wait_ns, 0);
  EXPECT_EQ(any_speed.iteration_ns, 800);
}

TEST(EventModelTest, AnOffloadNotSeenToEndHoldsBackAPrefetch) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Fwd(10), t.Bwd(200, 0, 20), t.Bwd(10), t.Bwd(10);
  const int p = t.Tensor(10, 0, {4});   // offload 10..20
  const int q = t.Tensor(100, 1, {5});  // offload 20..120
  const Trace trace = t.Build();
  const Plan plan = {{Decision::kSwap, Decision::kSwap}, {1, 4}};
  // Budget 125, 1 byte/ns. At 20 P is offloaded and freed (Q's 100
  // resident), op 2 runs 20..30. P's deadline is op 4; op 3 lies before it
  // and needs its 20 with Q's forward copy still there unless Q's offload has
  // ended, which the rule does not assume before it sees it: 100 + 20 + 10 >
  // 125, P waits. Op 3 starts at 30 (120 resident). At 120 Q's copy goes and
  // op 3 is running: P's window is empty and P fits, 120..130. Q waits for
  // op 3's 20 to go (230) and runs 230..330; op 4 230..240, op 5 330..340.
  const SimulationResult any_speed =
      ReplayAt(trace, plan, 125, 1'000'000'000, PrefetchAdmission::kAnySpeed);
  ASSERT_TRUE(any_speed.feasible) << any_speed.infeasibility.reason;
  std::vector<TimelineEvent> prefetches =
      Events(any_speed, TimelineKind::kPrefetch);
  ASSERT_EQ(prefetches.size(), 2u);
  EXPECT_EQ(prefetches[0].index, p);
  EXPECT_EQ(prefetches[0].start_ns, 120);
  EXPECT_EQ(prefetches[1].index, q);
  EXPECT_EQ(prefetches[1].start_ns, 230);
  EXPECT_EQ(any_speed.memory_wait_ns, 0);
  EXPECT_EQ(any_speed.iteration_ns, 340);
  // The old rule starts P at 20 (110 resident): op 3 then waits for Q's copy
  // to go, 30..120, and runs 120..320; Q 320..420, op 5 420..430.
  const SimulationResult fits_now =
      ReplayAt(trace, plan, 125, 1'000'000'000, PrefetchAdmission::kFitsNow);
  ASSERT_TRUE(fits_now.feasible);
  prefetches = Events(fits_now, TimelineKind::kPrefetch);
  ASSERT_EQ(prefetches.size(), 2u);
  EXPECT_EQ(prefetches[0].start_ns, 20);
  EXPECT_EQ(fits_now.memory_wait_ns, 90);
  EXPECT_EQ(fits_now.iteration_ns, 430);
}

TEST(EventModelTest, RecomputeChainRebuildsInputsFirstBeforeTheNeed) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10), t.Bwd(10);
  const int a = t.Tensor(10, 0, {1, 5});
  const int b = t.Tensor(20, 1, {2, 4}, 5, {a});
  const int c = t.Tensor(30, 2, {3}, 7, {b});
  // Forward peak 60 (A+B+C at op 2); B and C are dropped after op 2.
  // Before op 3: rebuild B (30..35), rebuild C (35..42), then op 3 (42..52),
  // op 4 (52..62), op 5 (62..72).
  const Trace trace = t.Build();
  const SimulationResult r = Replay(trace, PlanOf("krr"));
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.recompute_ns, 12);
  EXPECT_EQ(r.iteration_ns, 72);
  EXPECT_EQ(r.recomputed_bytes, 50);
  EXPECT_EQ(r.peak_resident_bytes, 60);
  const std::vector<TimelineEvent> rebuilds = Events(r, TimelineKind::kRebuild);
  ASSERT_EQ(rebuilds.size(), 2u);
  EXPECT_EQ(rebuilds[0].index, b);
  EXPECT_EQ(rebuilds[0].start_ns, 30);
  EXPECT_EQ(rebuilds[1].index, c);
  EXPECT_EQ(rebuilds[1].start_ns, 35);
  EXPECT_EQ(rebuilds[1].resident_bytes, 60);
  const Schedule s = DeriveSchedule(trace, PlanOf("krr"));
  EXPECT_EQ(s.need_op[b],
            3);  // needed by C's rebuild, before its own use at op 4
  EXPECT_EQ(s.need_op[c], 3);
}

TEST(EventModelTest, RebuildWaitsForASwappedInput) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Fwd(100), t.Bwd(10), t.Bwd(10);
  const int a = t.Tensor(40, 0, {1, 4});       // swapped
  const int b = t.Tensor(10, 1, {3}, 5, {a});  // recomputed from A
  // A is needed by B's rebuild before op 3, not by op 4. Offload 10..50;
  // issue at op 3 means after op 2 ends at 120: prefetch 120..160. The rebuild
  // waits 120..160 (a prefetch wait), runs 160..165, op 3 165..175.
  const Trace trace = t.Build();
  const SimulationResult r = Replay(trace, PlanOf("sr", 3));
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(DeriveSchedule(trace, PlanOf("sr", 3)).need_op[a], 3);
  EXPECT_EQ(r.prefetch_wait_ns, 40);
  EXPECT_EQ(Events(r, TimelineKind::kRebuild)[0].start_ns, 160);
  EXPECT_EQ(r.iteration_ns, 185);
  (void)b;
}

TEST(EventModelTest, WorkspaceIsHeldForTheOpsDuration) {
  TinyTrace t;
  t.Fwd(10, 0, 100), t.Bwd(10);
  t.Tensor(10, 0, {1});
  const Trace trace = t.Build();
  EXPECT_EQ(Replay(trace, PlanOf("k")).peak_resident_bytes, 110);
  const SimulationResult r = Replay(trace, PlanOf("k"), 105);
  ASSERT_FALSE(r.feasible);
  EXPECT_EQ(r.infeasibility.op, 0);
  EXPECT_EQ(r.infeasibility.waiting_for, WaitCause::kMemory);
  EXPECT_EQ(r.infeasibility.bytes_needed, 110);
  EXPECT_EQ(r.infeasibility.bytes_resident, 0);
  EXPECT_DOUBLE_EQ(r.throughput_ratio, 0);
}

TEST(EventModelTest, PerLayerBarriersWaitForOffloadsAndPrefetches) {
  TinyTrace t;
  t.Fwd(10, 0), t.Fwd(10, 1), t.Bwd(10, 1), t.Bwd(10, 0);
  t.Tensor(100, 0, {3});
  const Trace trace = t.Build();
  // Barriers: op 1 waits for the offload (10..110): 100. Prefetch issued at
  // op 2 runs 120..220; the barrier before block 0's backward run (op 3) holds
  // it from 130 to 220: 90.
  const SimulationResult with =
      Replay(trace, PlanOf("s", 2), kUnlimitedBytes, true);
  ASSERT_TRUE(with.feasible);
  EXPECT_EQ(with.barrier_wait_ns, 190);
  EXPECT_EQ(with.prefetch_wait_ns, 0);
  EXPECT_EQ(with.iteration_ns, 230);
  // Without: prefetch 110..210, op 3 waits 30..210.
  const SimulationResult without = Replay(trace, PlanOf("s", 2));
  EXPECT_EQ(without.barrier_wait_ns, 0);
  EXPECT_EQ(without.prefetch_wait_ns, 180);
  EXPECT_EQ(without.iteration_ns, 220);
}

TEST(EventModelTest, BarrierPlanMustIssueBeforeTheBlockStarts) {
  TinyTrace t;
  t.Fwd(10, 0), t.Fwd(10, 1), t.Bwd(10, 0), t.Bwd(10, 0);
  t.Tensor(100, 0, {3});
  SimulationOptions options;
  options.per_layer_barriers = true;
  // Need is op 3, but block 0's backward run starts at op 2.
  absl::StatusOr<SimulationResult> r =
      Simulate(t.Build(), ByteNanosecondLink(), PlanOf("s", 3), options);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StartsWith(r.status().message(),
                               "plan.tensors[0].prefetch_issue_op"));
}

TEST(EventModelTest, PrefetchThatCanNeverFitIsInfeasibleWithItsReason) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(50, 0, {2});  // A, swapped
  t.Tensor(80, 1, {3});  // K, kept until op 3
  const SimulationResult r = Replay(t.Build(), PlanOf("sk", 2), 100);
  ASSERT_FALSE(r.feasible);
  EXPECT_EQ(r.infeasibility.op, 2);
  EXPECT_EQ(r.infeasibility.rebuild_tensor, -1);
  EXPECT_EQ(r.infeasibility.waiting_for, WaitCause::kPrefetch);
  EXPECT_EQ(r.infeasibility.bytes_needed, 50);
  EXPECT_EQ(r.infeasibility.bytes_resident, 80);
  EXPECT_NE(r.infeasibility.reason.find("op 2"), std::string::npos);
}

TEST(EventModelTest, AllKeepPeakMatchesTheReplay) {
  TinyTrace t;
  t.Fwd(10, 0, 7), t.Fwd(10), t.Bwd(20, 0, 30), t.Bwd(20);
  t.Tensor(100, 0, {1, 3});
  t.Tensor(50, 1, {2});
  const Trace trace = t.Build();
  EXPECT_EQ(AllKeepPeakBytes(trace), 180);  // A + B + op 2's workspace
  EXPECT_EQ(Replay(trace, PlanOf("kk")).peak_resident_bytes, 180);
}

TEST(EventModelTest, TimeRangeGuardRejectsAHopelesslySlowLink) {
  TinyTrace t;
  t.Fwd(10), t.Bwd(10);
  t.Tensor(int64_t{1} << 59, 0, {1});
  Hardware slow = ByteNanosecondLink();
  slow.d2h_bytes_per_second = 1;
  absl::StatusOr<SimulationResult> r =
      Simulate(t.Build(), slow, PlanOf("k"), SimulationOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(
      absl::StartsWith(r.status().message(), "hardware.d2h_bytes_per_second"));
}

// Three forward operators make A (12 MiB, rebuilt before op 4), B (14 MiB)
// and C (16 MiB); op 3 reads B and C. The allocator sees, in order:
//   malloc A, malloc B, free A (op 1, its last forward use, ends),
//   malloc C, free B and C (op 3 ends), malloc A (its rebuild), free A.

}  // namespace
}  // namespace slackswap
