// SlackSwap around the job's own host traffic (issue 30; docs/planner.md,
// "Fixed transfers"): pass 1 budgets the link the fixed transfers leave,
// the prefetches are issued around them, and the lower bound counts where
// the traffic alone makes each op start and what must follow the last op.
// The hand-worked traces use a link of 1 byte/ns, so every time can be
// checked with pencil and paper.
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "planner/issue_points.h"
#include "planner/link_budget_pass.h"
#include "planner/lower_bound.h"
#include "planner/plan_draft.h"
#include "planner/slackswap.h"
#include "simulator/event_model.h"
#include "simulator/offload_traffic.h"
#include "simulator/plan.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"
#include "tests/simulator/event_model_helpers.h"
#include "tests/simulator/random_plans.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace {

using ::slackswap::testing::ByteNanosecondLink;
using ::slackswap::testing::PlanOf;
using ::slackswap::testing::RandomPlan;
using ::slackswap::testing::SmallWorkloads;
using ::slackswap::testing::TinyTrace;
using ::slackswap::testing::Workload;

// Ops 0-2 forward (10, 100, 100 ns), 3-4 backward (100 ns each). Tensor 0
// (20 bytes, made by op 0, read by op 4, never recomputed) is the one swap
// candidate: tensor 1 (100 bytes, op 2 to op 3) puts the all-keep peak at
// op 2, which starts at 110: the offload is due then. The forward pass ends
// at 210, when the prefetch is released; it is needed at 310.
TinyTrace PassOneTrace() {
  TinyTrace t;
  t.Fwd(10), t.Fwd(100), t.Fwd(100), t.Bwd(100), t.Bwd(100);
  const int a = t.Tensor(20, 0, {4});
  t.spec.tensors[a].recompute_forbidden = true;
  const int b = t.Tensor(100, 2, {3});
  t.spec.tensors[b].swap_forbidden = true;
  t.spec.tensors[b].recompute_forbidden = true;
  return t;
}

std::vector<int32_t> PassOne(const TinyTrace& t) {
  const Trace trace = t.Build();
  PlannerOptions options;
  options.guard_fraction = 0;
  return SelectSwaps(trace, ByteNanosecondLink(), IdealTimeline(trace),
                     /*budget_bytes=*/100, options);
}

TEST(FixedTrafficPlanningTest, PassOneLeavesTheBackwardLinkToParameterFetches) {
  EXPECT_EQ(PassOne(PassOneTrace()), std::vector<int32_t>{0});
  // An 85-byte fetch released at 210 and needed by op 4 goes first at the
  // tie: it ends at 295, the prefetch at 315, past its need at 310.
  TinyTrace busy = PassOneTrace();
  busy.Fixed(Direction::kH2D, 85, 2, 4);
  EXPECT_TRUE(PassOne(busy).empty());
  // 70 bytes end at 280; the prefetch arrives at 300.
  TinyTrace room = PassOneTrace();
  room.Fixed(Direction::kH2D, 70, 2, 4);
  EXPECT_EQ(PassOne(room), std::vector<int32_t>{0});
  // The same 85 bytes needed by no op go after every prefetch.
  TinyTrace unneeded = PassOneTrace();
  unneeded.Fixed(Direction::kH2D, 85, 2, -1);
  EXPECT_EQ(PassOne(unneeded), std::vector<int32_t>{0});
}

TEST(FixedTrafficPlanningTest, AFetchReleasedLateHoldsTheQueueBehindIt) {
  // 30 bytes released when op 3 ends (310) and needed by op 4: late
  // whatever the plan (due when it would end, 340). The prefetch behind it
  // in the strict queue would end at 360, past 310.
  TinyTrace t = PassOneTrace();
  t.Fixed(Direction::kH2D, 30, 3, 4);
  EXPECT_TRUE(PassOne(t).empty());
}

TEST(FixedTrafficPlanningTest, PassOneDelaysNoFetchQueuedBehindAPrefetch) {
  // Op 2's 100-byte workspace with tensor 0 passes the 100-byte budget, so
  // tensor 0 (20 bytes, needed by op 4 at 310) is a candidate. A fetch
  // released at the forward pass's end (210) and needed by op 5 (410) goes
  // after the prefetch in the queue. 185 bytes end at 395 alone, at 415
  // behind the prefetch: the swap would make the job's copy late.
  auto trace = [](int64_t fetch_bytes) {
    TinyTrace t;
    t.Fwd(10), t.Fwd(100), t.Fwd(100, 0, 100);
    t.Bwd(100), t.Bwd(100), t.Bwd(100);
    const int a = t.Tensor(20, 0, {4});
    t.spec.tensors[a].recompute_forbidden = true;
    t.Fixed(Direction::kH2D, fetch_bytes, 2, 5);
    return t.Build();
  };
  PlannerOptions options;
  options.guard_fraction = 0;
  for (const auto& [bytes, admitted] :
       std::vector<std::pair<int64_t, size_t>>{{185, 0}, {170, 1}}) {
    const Trace t = trace(bytes);
    EXPECT_EQ(
        SelectSwaps(t, ByteNanosecondLink(), IdealTimeline(t), 100, options)
            .size(),
        admitted)
        << bytes << " bytes";
  }
}

TEST(FixedTrafficPlanningTest, APrefetchFollowsTheFetchNeededByTheSameOp) {
  // Ops 3-12 take 10 ns from 210; tensor 0 (20 bytes) is needed by op 12 at
  // 300. A 30-byte fetch released at 210 and needed by op 12 goes first at
  // the tie, as one needed by op 11 would: either way the prefetch can start
  // as late as 280, at op 10.
  for (int32_t before : {12, 11}) {
    TinyTrace t;
    t.Fwd(10), t.Fwd(100), t.Fwd(100, 0, 100);
    for (int i = 0; i < 10; ++i) t.Bwd(10);
    t.Tensor(20, 0, {12});
    t.Fixed(Direction::kH2D, 30, 2, before);
    const Trace trace = t.Build();
    PlanDraft draft(trace);
    draft.SetSwap(0, 0, trace.first_backward_op());
    PlaceSwaps(trace, ByteNanosecondLink(), IdealTimeline(trace),
               BlockRunStarts(trace), false,
               std::vector<int64_t>(trace.tensors.size(), 0),
               std::vector<uint8_t>(trace.tensors.size(), 0), draft);
    EXPECT_EQ(draft.plan().prefetch_issue_op[0], 10)
        << "fetch before " << before;
  }
}

TEST(FixedTrafficPlanningTest, OffloadsQueueBehindTheJobsEarlierCopies) {
  // A 100-byte D2H copy from the start runs 0..100; the offload, ready at
  // 10, then runs 100..120, past its deadline at 110.
  TinyTrace busy = PassOneTrace();
  busy.Fixed(Direction::kD2H, 100, -1, -1);
  EXPECT_TRUE(PassOne(busy).empty());
  // 50 bytes: 0..50, the offload 50..70.
  TinyTrace room = PassOneTrace();
  room.Fixed(Direction::kD2H, 50, -1, -1);
  EXPECT_EQ(PassOne(room), std::vector<int32_t>{0});
  // Ready only after op 0, at the same op as the tensor's producer: the
  // job's copy goes first (10..110) and the offload ends at 130.
  TinyTrace tie = PassOneTrace();
  tie.Fixed(Direction::kD2H, 100, 0, -1);
  EXPECT_TRUE(PassOne(tie).empty());
}

// GPT-2 XL at 50% on the A100 with each offload mode: the passes' plan
// needs no repair (before the prefetches were issued around the parameter
// fetches, FSDP's took 42 rounds) and no prefetch is late.
TEST(FixedTrafficPlanningTest, PrefetchesAreIssuedAroundTheFixedTraffic) {
  const Hardware hw = *HardwarePreset("a100");
  for (Offload offload :
       {Offload::kZero, Offload::kZeroDpu, Offload::kFsdpCpu}) {
    SCOPED_TRACE(OffloadName(offload));
    WorkloadSpec spec = *WorkloadPreset("gpt2-xl");
    spec.offload = offload;
    const Trace trace = *ValidateTrace(*GenerateTrace(spec, hw));
    PlannerOptions options;
    options.search_time_ms = 0;
    const absl::StatusOr<PlanningResult> r =
        PlanSlackSwap(trace, hw, AllKeepPeakBytes(trace) / 2, options);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(r->feasible) << r->reason;
    EXPECT_EQ(r->stats.repair_iterations, 0);
    EXPECT_EQ(r->replay.prefetch_wait_ns, 0);
    EXPECT_GT(r->stats.swaps_admitted, 0);
    EXPECT_LE(r->lower_bound.iteration_ns, r->replay.iteration_ns);
    // Within 1% of the bound (the passes alone, no search).
    EXPECT_LE(r->replay.iteration_ns, r->lower_bound.iteration_ns * 101 / 100);
  }
}

TEST(FixedTrafficBoundTest, TheTransfersAfterTheLastOpFollowIt) {
  // Ideal 200 ns; 70 bytes of updated parameters may start only when the
  // last op has ended: no plan ends before 270, and all-keep ends there.
  TinyTrace t;
  t.Fwd(100), t.Bwd(100);
  t.Tensor(50, 0, {1});
  t.Fixed(Direction::kH2D, 70, 1, -1);
  const Trace trace = t.Build();
  const LowerBound bound =
      ComputeLowerBound(trace, ByteNanosecondLink(), AllKeepPeakBytes(trace));
  EXPECT_EQ(bound.iteration_ns, 270);
  EXPECT_EQ(
      testing::Replay(trace, PlanOf("k"), AllKeepPeakBytes(trace)).iteration_ns,
      270);
}

TEST(FixedTrafficBoundTest, EachOpStartsNoEarlierThanTheTrafficLetsIt) {
  // Ops of 10 ns under a 100-byte budget. Tensor 1 (100 bytes, op 1 to op
  // 2, neither swapped nor recomputed) leaves no room at ops 1 and 2 for
  // tensor 0 (100 bytes, op 0 to op 3, rebuilt in 30 ns): it must be gone.
  // Without traffic the bound is the ideal 40 plus the rebuild (an offload
  // would keep op 1 waiting 90 ns): 70. A 50-byte parameter copy needed by
  // op 1 makes it start at 50 in every plan, and the rebuild still follows
  // (swapping instead: op 1 waits until 110): 110, which the recompute plan
  // takes.
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(100, 0, {3}, 30);
  const int b = t.Tensor(100, 1, {2});
  t.spec.tensors[b].swap_forbidden = true;
  t.spec.tensors[b].recompute_forbidden = true;
  const LowerBound plain =
      ComputeLowerBound(t.Build(), ByteNanosecondLink(), /*budget_bytes=*/100);
  EXPECT_EQ(plain.iteration_ns, 70);
  t.Fixed(Direction::kH2D, 50, -1, 1);
  const Trace trace = t.Build();
  const LowerBound bound =
      ComputeLowerBound(trace, ByteNanosecondLink(), /*budget_bytes=*/100);
  EXPECT_EQ(bound.iteration_ns, 110);
  const SimulationResult r = testing::Replay(trace, PlanOf("rk"), 100);
  ASSERT_TRUE(r.feasible) << r.infeasibility.reason;
  EXPECT_EQ(r.iteration_ns, 110);
  EXPECT_EQ(r.fixed_transfer_wait_ns, 40);
}

TEST(FixedTrafficBoundTest, AFetchLongerThanItsWindowAddsItsWait) {
  // Ops of 10 ns, 2-5 backward. Tensor 1 leaves no room at ops 1 and 2 for
  // tensor 0 (100 bytes, read by op 3, rebuilt in 30 ns) under a 100-byte
  // budget: without traffic the bound is the ideal 60 plus the rebuild, 90.
  // A 50-byte fetch released when op 3 ends and needed by op 5 takes 40 ns
  // longer than op 4 between them, and no rebuild can run there (tensor 0
  // is needed by op 3): 130, which the recompute plan takes. The traffic
  // alone (all-keep, unlimited memory) takes only 100.
  TinyTrace t;
  t.Fwd(10), t.Fwd(10);
  for (int i = 0; i < 4; ++i) t.Bwd(10);
  t.Tensor(100, 0, {3}, 30);
  const int b = t.Tensor(100, 1, {2});
  t.spec.tensors[b].swap_forbidden = true;
  t.spec.tensors[b].recompute_forbidden = true;
  EXPECT_EQ(
      ComputeLowerBound(t.Build(), ByteNanosecondLink(), 100).iteration_ns, 90);
  t.Fixed(Direction::kH2D, 50, 3, 5);
  const Trace trace = t.Build();
  EXPECT_EQ(testing::Replay(trace, PlanOf("kk")).iteration_ns, 100);
  EXPECT_EQ(ComputeLowerBound(trace, ByteNanosecondLink(), 100).iteration_ns,
            130);
  const SimulationResult r = testing::Replay(trace, PlanOf("rk"), 100);
  ASSERT_TRUE(r.feasible) << r.infeasibility.reason;
  EXPECT_EQ(r.iteration_ns, 130);
  // Read by op 4 instead, the tensor is rebuilt while the fetch moves
  // (40..70, op 4 70..80, op 5 from 90): 100, the bound's too.
  TinyTrace hidden;
  hidden.Fwd(10), hidden.Fwd(10);
  for (int i = 0; i < 4; ++i) hidden.Bwd(10);
  hidden.Tensor(100, 0, {4}, 30);
  const int c = hidden.Tensor(100, 1, {2});
  hidden.spec.tensors[c].swap_forbidden = true;
  hidden.spec.tensors[c].recompute_forbidden = true;
  hidden.Fixed(Direction::kH2D, 50, 3, 5);
  const Trace h = hidden.Build();
  EXPECT_EQ(ComputeLowerBound(h, ByteNanosecondLink(), 100).iteration_ns, 100);
  const SimulationResult rh = testing::Replay(h, PlanOf("rk"), 100);
  ASSERT_TRUE(rh.feasible) << rh.infeasibility.reason;
  EXPECT_EQ(rh.iteration_ns, 100);
}

TEST(FixedTrafficBoundTest, SkewedRanksMayFindTheUplinkToThemselves) {
  // Two GPUs behind a 1 byte/ns uplink: in lockstep each rank's 100-byte
  // parameter copy takes 200 ns, but a rank 1 ms ahead of the other has the
  // uplink to itself: 100 ns, and all-keep ends at 110. The bound uses the
  // GPU's own link under skew.
  TinyTrace t;
  t.Fwd(10), t.Bwd(10);
  t.Tensor(10, 0, {1});
  t.Fixed(Direction::kH2D, 100, -1, 1);
  const Trace trace = t.Build();
  Hardware hw = ByteNanosecondLink();
  hw.gpus_per_uplink = 2;
  hw.uplink_d2h_bytes_per_second = 1'000'000'000;
  hw.uplink_h2d_bytes_per_second = 1'000'000'000;
  SimulationOptions skewed;
  skewed.physics.rank_skew_ns = 1'000'000;
  const absl::StatusOr<SimulationResult> r =
      Simulate(trace, hw, Plan::AllKeep(trace), skewed);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->feasible);
  EXPECT_EQ(r->iteration_ns, 110);
  PlannerOptions options;
  options.physics.rank_skew_ns = 1'000'000;
  options.search_time_ms = 0;
  const absl::StatusOr<PlanningResult> p =
      PlanSlackSwap(trace, hw, AllKeepPeakBytes(trace), options);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->feasible);
  EXPECT_EQ(p->lower_bound.iteration_ns, 110);
  EXPECT_LE(p->lower_bound.iteration_ns, p->replay.iteration_ns);
}

// The bound stays below every plan that fits: random plans and SlackSwap's
// own, on every small preset with random fixed traffic.
TEST(FixedTrafficBoundTest, TheBoundIsBelowEveryFeasiblePlan) {
  std::mt19937_64 rng(30);
  int compared = 0;
  for (uint64_t seed : {1, 2, 3}) {
    for (const Workload& w : SmallWorkloads(3, {"a100", "h100"}, seed)) {
      const int64_t peak = AllKeepPeakBytes(w.trace);
      for (int tenth = 2; tenth <= 10; tenth += 4) {
        SCOPED_TRACE(w.name + " at " + std::to_string(tenth * 10) + "%");
        const int64_t budget = peak * tenth / 10;
        const LowerBound bound = ComputeLowerBound(w.trace, w.hardware, budget);
        SimulationOptions sim;
        sim.budget_bytes = budget;
        std::vector<Plan> plans = {Plan::AllKeep(w.trace)};
        for (int i = 0; i < 8; ++i)
          plans.push_back(RandomPlan(w.trace, false, rng));
        for (const Plan& plan : plans) {
          const SimulationResult r = *Simulate(w.trace, w.hardware, plan, sim);
          if (!r.feasible) continue;
          ++compared;
          EXPECT_TRUE(bound.feasible) << bound.reason;
          EXPECT_LE(bound.iteration_ns, r.iteration_ns);
        }
        PlannerOptions options;
        options.search_time_ms = 5;
        const absl::StatusOr<PlanningResult> p =
            PlanSlackSwap(w.trace, w.hardware, budget, options);
        ASSERT_TRUE(p.ok()) << p.status();
        if (p->feasible) {
          ++compared;
          EXPECT_LE(p->lower_bound.iteration_ns, p->replay.iteration_ns);
          EXPECT_EQ(p->lower_bound.iteration_ns, bound.iteration_ns);
        }
      }
    }
  }
  EXPECT_GT(compared, 100);
}

}  // namespace
}  // namespace slackswap
