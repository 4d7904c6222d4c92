// Hand-computed traces for the fixed-transfer rules of the event model
// (docs/event-model.md, "Fixed transfers"): the job's own traffic on the
// copy streams beside the plan's, the memory it holds, what waits for it, and
// the shared uplink it takes its share of. The link moves 1 byte/ns, so every
// time below can be checked with pencil and paper.
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "simulator/event_model.h"
#include "simulator/schedule.h"
#include "tests/simulator/event_model_helpers.h"

namespace slackswap {
namespace {

using ::slackswap::testing::ByteNanosecondLink;
using ::slackswap::testing::Events;
using ::slackswap::testing::PlanOf;
using ::slackswap::testing::Replay;
using ::slackswap::testing::TinyTrace;

// The stalls of one cause, in order.
std::vector<TimelineEvent> Stalls(const SimulationResult& r, WaitCause cause) {
  std::vector<TimelineEvent> out;
  for (const TimelineEvent& e : Events(r, TimelineKind::kStall)) {
    if (e.cause == cause) out.push_back(e);
  }
  return out;
}

TEST(FixedTransferTest, AnOpWaitsForTheParameterCopyItNeeds) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(10, 0, {3});
  // A 50-byte H2D copy from the start, needed by op 1: 0..50. Op 0 runs
  // 0..10, op 1 waits 10..50 for it, then ops 1-3 run 50..80.
  t.Fixed(Direction::kH2D, 50, -1, 1);
  const SimulationResult r = Replay(t.Build(), PlanOf("k"));
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.iteration_ns, 80);
  EXPECT_EQ(r.fixed_transfer_wait_ns, 40);
  EXPECT_EQ(r.prefetch_wait_ns, 0);
  EXPECT_EQ(r.stall_ns(), 40);
  EXPECT_EQ(r.h2d_busy_ns, 50);
  const std::vector<TimelineEvent> fixed =
      Events(r, TimelineKind::kFixedTransfer);
  ASSERT_EQ(fixed.size(), 1u);
  EXPECT_EQ(fixed[0].index, 0);
  EXPECT_EQ(fixed[0].start_ns, 0);
  EXPECT_EQ(fixed[0].end_ns, 50);
  const std::vector<TimelineEvent> stalls =
      Stalls(r, WaitCause::kFixedTransfer);
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_EQ(stalls[0].index, 1);
  EXPECT_EQ(stalls[0].start_ns, 10);
  EXPECT_EQ(stalls[0].end_ns, 50);
}

TEST(FixedTransferTest, TheH2DQueueIsEarliestNeedFirstFixedFirstAtTies) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(100), t.Bwd(10), t.Bwd(10);
  const int s = t.Tensor(50, 0, {3});  // swapped, needed by op 3
  // F needed by op 3 too: at equal needs it goes first. Offload of S 10..60;
  // at 110 (op 1 ends) F 110..140, then S 140..190. Op 3, ready at 120,
  // waits for F until 140 (fixed), then for S until 190 (prefetch), and
  // runs 190..200.
  t.Fixed(Direction::kH2D, 30, 1, 3);
  const SimulationResult r = Replay(t.Build(), PlanOf("s", 2));
  ASSERT_TRUE(r.feasible);
  const std::vector<TimelineEvent> fixed =
      Events(r, TimelineKind::kFixedTransfer);
  const std::vector<TimelineEvent> prefetches =
      Events(r, TimelineKind::kPrefetch);
  ASSERT_EQ(fixed.size(), 1u);
  ASSERT_EQ(prefetches.size(), 1u);
  EXPECT_EQ(fixed[0].start_ns, 110);
  EXPECT_EQ(prefetches[0].index, s);
  EXPECT_EQ(prefetches[0].start_ns, 140);
  EXPECT_EQ(r.fixed_transfer_wait_ns, 20);
  EXPECT_EQ(r.prefetch_wait_ns, 50);
  EXPECT_EQ(r.iteration_ns, 200);

  // Needed only by the iteration's end, F goes behind S: S 110..160, op 3
  // waits 120..160 and runs 160..170, F 160..190 outlasts it by 20.
  TinyTrace late = t;
  late.spec.fixed_transfers[0].before_op = -1;
  const SimulationResult l = Replay(late.Build(), PlanOf("s", 2));
  ASSERT_TRUE(l.feasible);
  EXPECT_EQ(Events(l, TimelineKind::kPrefetch)[0].start_ns, 110);
  EXPECT_EQ(Events(l, TimelineKind::kFixedTransfer)[0].start_ns, 160);
  EXPECT_EQ(l.prefetch_wait_ns, 40);
  EXPECT_EQ(l.fixed_transfer_wait_ns, 20);
  EXPECT_EQ(l.iteration_ns, 190);
  // The wait at the end is a stall after the last operator.
  const std::vector<TimelineEvent> end = Stalls(l, WaitCause::kFixedTransfer);
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].index, 4);
  EXPECT_EQ(end[0].start_ns, 170);
  EXPECT_EQ(end[0].end_ns, 190);
}

TEST(FixedTransferTest, TheD2HQueueRunsInReadinessOrderFixedFirstAtTies) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Fwd(100), t.Bwd(10), t.Bwd(10);
  const int a = t.Tensor(30, 1, {4});  // swapped, ready after op 1
  // G ready after op 0 goes first (10..50); H, ready after op 1 like A,
  // goes before it (50..70); A 70..100.
  const int g = t.Fixed(Direction::kD2H, 40, 0, -1);
  const int h = t.Fixed(Direction::kD2H, 20, 1, -1);
  const SimulationResult r = Replay(t.Build(), PlanOf("s", 3));
  ASSERT_TRUE(r.feasible);
  const std::vector<TimelineEvent> fixed =
      Events(r, TimelineKind::kFixedTransfer);
  ASSERT_EQ(fixed.size(), 2u);
  EXPECT_EQ(fixed[0].index, g);
  EXPECT_EQ(fixed[0].start_ns, 10);
  EXPECT_EQ(fixed[1].index, h);
  EXPECT_EQ(fixed[1].start_ns, 50);
  const std::vector<TimelineEvent> offloads = Events(r, TimelineKind::kOffload);
  ASSERT_EQ(offloads.size(), 1u);
  EXPECT_EQ(offloads[0].index, a);
  EXPECT_EQ(offloads[0].start_ns, 70);
  EXPECT_EQ(offloads[0].end_ns, 100);
  EXPECT_EQ(r.d2h_busy_ns, 90);
}

TEST(FixedTransferTest, AGradientSourceIsHeldUntilItsCopyEnds) {
  TinyTrace t;
  t.Fwd(10), t.Bwd(10), t.Bwd(10, 0, 50);
  t.Tensor(40, 0, {1});
  // Op 1 writes a 50-byte gradient (resident 90 while it runs), copied to
  // the host 20..70. Op 2's 50-byte workspace does not fit beside it under
  // 90 bytes: it waits for the copy, 20..70, and runs 70..80.
  t.Fixed(Direction::kD2H, 50, 1, -1, 50);
  const Trace trace = t.Build();
  EXPECT_EQ(trace.op_allocation_bytes[1], 50);
  const SimulationResult r = Replay(trace, PlanOf("k"), 90);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.peak_resident_bytes, 90);
  EXPECT_EQ(r.memory_wait_ns, 50);
  EXPECT_EQ(r.iteration_ns, 80);
  // With room for both, op 2 runs 20..30 beside the copy (100 resident),
  // and the copy (20..70) outlasts the compute stream: the iteration ends
  // at 70, waiting 40 ns for it.
  const SimulationResult roomy = Replay(trace, PlanOf("k"), 140);
  EXPECT_EQ(roomy.memory_wait_ns, 0);
  EXPECT_EQ(roomy.peak_resident_bytes, 100);
  EXPECT_EQ(roomy.iteration_ns, 70);
  EXPECT_EQ(roomy.fixed_transfer_wait_ns, 40);
}

TEST(FixedTransferTest, AnOpWaitsForAGradientCopyItIsOrderedAfter) {
  TinyTrace t;
  t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(10, 0, {2});
  // Op 2 may not start before the 30-byte copy after op 0 (10..40) ends.
  t.Fixed(Direction::kD2H, 30, 0, 2);
  const SimulationResult r = Replay(t.Build(), PlanOf("k"));
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.fixed_transfer_wait_ns, 20);  // ready at 20, waits until 40
  EXPECT_EQ(r.iteration_ns, 50);
}

TEST(FixedTransferTest,
     AParameterFetchIsAdmittedOnlyIfEveryStepBeforeItsNeedFits) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10, 0, 40), t.Fwd(10), t.Bwd(10);
  t.Tensor(10, 0, {3});
  // P: 40 bytes held from its start until op 2 ends, needed by op 2.
  t.Fixed(Direction::kH2D, 40, -1, 2, 40, 2);
  const Trace trace = t.Build();
  // Budget 60. At 0, P fits (0 + 40) but op 1 would not beside it (A 10 +
  // workspace 40 + P 40 = 90): held. Op 0 0..10, op 1 10..20 (50
  // resident), P 20..60 once op 1's workspace is gone, op 2 waits 20..60
  // and runs 60..70, op 3 70..80.
  const SimulationResult r = Replay(trace, PlanOf("k"), 60);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(Events(r, TimelineKind::kFixedTransfer)[0].start_ns, 20);
  EXPECT_EQ(r.fixed_transfer_wait_ns, 40);
  EXPECT_EQ(r.iteration_ns, 80);
  EXPECT_EQ(r.peak_resident_bytes, 50);
  // Under the fits-now rule P starts at 0 and op 1 can never get its
  // workspace: P is freed only after op 2.
  const SimulationResult now =
      Replay(trace, PlanOf("k"), 60, false, ByteNanosecondLink(),
             PrefetchAdmission::kFitsNow);
  EXPECT_FALSE(now.feasible);
  EXPECT_EQ(now.infeasibility.op, 1);
  EXPECT_EQ(now.infeasibility.waiting_for, WaitCause::kMemory);
  // Unlimited: P 0..40 and nothing else waits (op 2 is ready at 20 and
  // waits for P until 40).
  const SimulationResult free = Replay(trace, PlanOf("k"));
  EXPECT_EQ(free.iteration_ns, 60);
  EXPECT_EQ(free.peak_resident_bytes, 90);
}

TEST(FixedTransferTest, ACopyThatCanNeverFitIsInfeasibleNamingTheTransfer) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(10);
  t.Tensor(10, 0, {2});
  t.Fixed(Direction::kH2D, 40, -1, 1, 40, 1);
  // Budget 45: A (10) and P (40) never fit together before op 1.
  const SimulationResult r = Replay(t.Build(), PlanOf("k"), 45);
  EXPECT_FALSE(r.feasible);
  EXPECT_EQ(r.infeasibility.op, 1);
  EXPECT_EQ(r.infeasibility.waiting_for, WaitCause::kFixedTransfer);
  EXPECT_EQ(r.infeasibility.bytes_needed, 40);
  EXPECT_TRUE(absl::StrContains(r.infeasibility.reason, "fixed transfer 0"))
      << r.infeasibility.reason;
}

TEST(FixedTransferTest, FixedTransfersTakeTheirShareOfTheUplink) {
  TinyTrace t;
  t.Fwd(10), t.Bwd(10);
  t.Tensor(10, 0, {1});
  // Two ranks on a 1 byte/ns uplink: each rank's 100-byte copy after op 1
  // moves at half a byte/ns, 20..220: 100 ns beyond its time alone.
  t.Fixed(Direction::kH2D, 100, 1, -1);
  Hardware hw = ByteNanosecondLink();
  hw.gpus_per_uplink = 2;
  hw.uplink_d2h_bytes_per_second = 1'000'000'000;
  hw.uplink_h2d_bytes_per_second = 1'000'000'000;
  const SimulationResult r =
      Replay(t.Build(), PlanOf("k"), kUnlimitedBytes, false, hw);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.iteration_ns, 220);
  EXPECT_EQ(r.uplink_wait_ns, 100);
  EXPECT_EQ(r.fixed_transfer_wait_ns, 200);
}

TEST(FixedTransferTest, TheScheduleKeepsThePlansQueuesForTheRuntime) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(10, 0, {3});
  t.Tensor(10, 1, {2});
  t.Fixed(Direction::kH2D, 5, -1, 3);
  t.Fixed(Direction::kD2H, 5, 2, -1);
  const Trace trace = t.Build();
  const Schedule s = DeriveSchedule(trace, PlanOf("ss", 2));
  // Items 2 and 3 are the fixed transfers.
  EXPECT_EQ(s.offload_order, (std::vector<int32_t>{0, 1, 3}));
  // Needs: tensor 1 op 2, fixed 2 and tensor 0 op 3 (fixed first).
  EXPECT_EQ(s.prefetch_order, (std::vector<int32_t>{1, 2, 0}));
  EXPECT_EQ(s.prefetches_needed[s.OpStep(2)], 1);
  EXPECT_EQ(s.prefetches_needed[s.OpStep(3)], 3);
  EXPECT_EQ(s.fixed_h2d_needed[s.OpStep(3)], 2);
}

}  // namespace
}  // namespace slackswap
