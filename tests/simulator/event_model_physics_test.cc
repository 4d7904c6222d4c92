// Hand-computed traces for the event model's memory and node rules
// (docs/event-model.md): the caching allocator and reserved budgets, ranks
// sharing an uplink, skew, HBM contention, and the physics it refuses.
// The link moves 1 byte/ns unless a test says otherwise.
#include <limits>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "simulator/event_model.h"
#include "simulator/replay.h"
#include "simulator/schedule.h"
#include "tests/simulator/event_model_helpers.h"

namespace slackswap {
namespace {

using ::slackswap::testing::ByteNanosecondLink;
using ::slackswap::testing::Events;
using ::slackswap::testing::PlanOf;
using ::slackswap::testing::Replay;
using ::slackswap::testing::TinyTrace;

Trace AllocatorTrace() {
  TinyTrace t;
  t.Fwd(10), t.Fwd(10), t.Fwd(10), t.Bwd(10), t.Bwd(10);
  t.Tensor(12 << 20, 0, {1, 4}, 5);  // A
  t.Tensor(14 << 20, 1, {3});        // B
  t.Tensor(16 << 20, 2, {3});        // C
  return t.Build();
}

SimulationResult ReplayWith(AllocatorKind allocator, int64_t budget,
                            bool budget_reserved) {
  SimulationOptions options;
  options.budget_bytes = budget;
  options.physics.allocator = allocator;
  options.physics.budget_reserved = budget_reserved;
  absl::StatusOr<SimulationResult> result =
      Simulate(AllocatorTrace(), ByteNanosecondLink(), PlanOf("rkk"), options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : SimulationResult();
}

TEST(EventModelTest, TheCachingAllocatorReservesASegmentPerUnfitRequest) {
  constexpr int64_t MiB = 1 << 20;
  const SimulationResult none =
      ReplayWith(AllocatorKind::kNone, kUnlimitedBytes, false);
  EXPECT_EQ(none.peak_resident_bytes, 30 * MiB);  // B and C
  EXPECT_EQ(none.peak_reserved_bytes, 0);
  // Native: A's 12 MiB segment is cached when C asks for 16: a third
  // segment, 42 MiB reserved while B and C hold 30.
  const SimulationResult native =
      ReplayWith(AllocatorKind::kCaching, kUnlimitedBytes, false);
  EXPECT_EQ(native.peak_reserved_bytes, 42 * MiB);
  EXPECT_EQ(native.fragmentation_bytes, 12 * MiB);
  // The allocator only observes: the timing is the same.
  EXPECT_EQ(native.iteration_ns, none.iteration_ns);
  EXPECT_EQ(native.peak_resident_bytes, none.peak_resident_bytes);
  // Expandable: A [0,12) and B [12,26) in one 40 MiB mapping; A's hole is too
  // small for C, and the 14 MiB tail grows by a page: 60 MiB for 30.
  const SimulationResult expandable =
      ReplayWith(AllocatorKind::kExpandable, kUnlimitedBytes, false);
  EXPECT_EQ(expandable.peak_reserved_bytes, 60 * MiB);
  EXPECT_EQ(expandable.fragmentation_bytes, 30 * MiB);
}

TEST(EventModelTest, AReservedBudgetReleasesCachedSegmentsOrWaits) {
  constexpr int64_t MiB = 1 << 20;
  // 40 MiB: C's segment would make 42, so A's cached segment is released
  // first: 30 MiB at most.
  const SimulationResult fits =
      ReplayWith(AllocatorKind::kCaching, 40 * MiB, true);
  ASSERT_TRUE(fits.feasible) << fits.infeasibility.reason;
  EXPECT_EQ(fits.peak_reserved_bytes, 30 * MiB);
  EXPECT_EQ(fits.memory_wait_ns, 0);
  // Exactly 30 MiB still fits B's and C's segments; a byte less does not,
  // and nothing pending frees B: op 2 waits for ever.
  EXPECT_TRUE(ReplayWith(AllocatorKind::kCaching, 30 * MiB, true).feasible);
  const SimulationResult tight =
      ReplayWith(AllocatorKind::kCaching, 30 * MiB - 1, true);
  ASSERT_FALSE(tight.feasible);
  EXPECT_EQ(tight.infeasibility.op, 2);
  EXPECT_EQ(tight.infeasibility.waiting_for, WaitCause::kMemory);
  EXPECT_TRUE(absl::StrContains(tight.infeasibility.reason, "reserved"))
      << tight.infeasibility.reason;
  // Expandable at 40 MiB: the mapping A and B share cannot shrink (B is in
  // its second page), and C needs a third page: op 2 cannot run.
  const SimulationResult expandable =
      ReplayWith(AllocatorKind::kExpandable, 40 * MiB, true);
  EXPECT_FALSE(expandable.feasible);
  EXPECT_EQ(expandable.infeasibility.op, 2);
  // Allocated bytes within 40 MiB, unbudgeted reserved bytes: it runs.
  EXPECT_TRUE(ReplayWith(AllocatorKind::kExpandable, 40 * MiB, false).feasible);
}

// Node physics. One tensor of 100 bytes, swapped, its prefetch issued once op
// 1 ends; the links move 1 byte/ns each way.
Trace SharedLinkTrace(int64_t backward_ns) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(500), t.Bwd(backward_ns), t.Bwd(10);
  t.Tensor(100, 0, {3});
  return t.Build();
}

SimulationResult ReplayOnNode(const Trace& trace, const Hardware& hw,
                              const Physics& physics = Physics()) {
  SimulationOptions options;
  options.record_timeline = true;
  options.physics = physics;
  absl::StatusOr<SimulationResult> r =
      Simulate(trace, hw, PlanOf("s", 2), options);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SimulationResult();
}

TEST(EventModelTest, RanksSharingAnUplinkSplitItsRate) {
  Hardware hw = ByteNanosecondLink();
  hw.gpus_per_uplink = 2;
  hw.uplink_d2h_bytes_per_second = 1'000'000'000;
  hw.uplink_h2d_bytes_per_second = 1'000'000'000;
  // Both ranks offload at 10 and prefetch at 510, each at half a byte/ns:
  // 200 ns per copy. With 500 ns of backward op 2 nothing waits.
  SimulationResult r = ReplayOnNode(SharedLinkTrace(500), hw);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.iteration_ns, 1020);
  EXPECT_EQ(r.d2h_busy_ns, 200);
  EXPECT_EQ(r.uplink_wait_ns, 200);  // 100 more per copy than alone
  std::vector<TimelineEvent> prefetch = Events(r, TimelineKind::kPrefetch);
  ASSERT_EQ(prefetch.size(), 1u);
  EXPECT_EQ(prefetch[0].start_ns, 510);
  EXPECT_EQ(prefetch[0].end_ns, 710);
  // With 50 ns of op 2, op 3 (ready at 560) waits for the prefetch: 150 ns,
  // where one GPU alone waits 50.
  r = ReplayOnNode(SharedLinkTrace(50), hw);
  EXPECT_EQ(r.prefetch_wait_ns, 150);
  EXPECT_EQ(r.iteration_ns, 720);
  EXPECT_EQ(
      ReplayOnNode(SharedLinkTrace(50), ByteNanosecondLink()).iteration_ns,
      620);
  // An uplink as fast as both links costs nothing.
  hw.uplink_d2h_bytes_per_second = hw.uplink_h2d_bytes_per_second =
      2'000'000'000;
  r = ReplayOnNode(SharedLinkTrace(50), hw);
  EXPECT_EQ(r.iteration_ns, 620);
  EXPECT_EQ(r.uplink_wait_ns, 0);
}

// A link and uplink at INT64_MAX bytes/s (an infinitely fast link, as the
// speed sweeps scale it): every copy of under 9.2 GB takes 1 ns. The end of
// a copy moving at that rate is ceil(work / rate) without overflowing.
TEST(EventModelTest, ALinkAtTheLargestRateTakesOneNanosecondPerCopy) {
  Hardware hw = ByteNanosecondLink();
  hw.d2h_bytes_per_second = hw.h2d_bytes_per_second =
      std::numeric_limits<int64_t>::max();
  hw.uplink_d2h_bytes_per_second = hw.uplink_h2d_bytes_per_second =
      std::numeric_limits<int64_t>::max();
  for (int32_t ranks : {1, 2}) {
    for (int64_t skew : {int64_t{0}, int64_t{7}}) {
      hw.gpus_per_uplink = ranks;
      Physics skewed;
      skewed.rank_skew_ns = skew;
      const SimulationResult r = ReplayOnNode(SharedLinkTrace(50), hw, skewed);
      ASSERT_TRUE(r.feasible) << ranks << " " << skew;
      const std::vector<TimelineEvent> offload =
          Events(r, TimelineKind::kOffload);
      ASSERT_EQ(offload.size(), 1u);
      EXPECT_EQ(offload[0].end_ns - offload[0].start_ns, 1);
      EXPECT_EQ(r.prefetch_wait_ns, 0);
    }
  }
}

TEST(EventModelTest, SkewedRanksShareOnlyWhileTheirCopiesOverlap) {
  Hardware hw = ByteNanosecondLink();
  hw.gpus_per_uplink = 2;
  hw.uplink_d2h_bytes_per_second = 1'000'000'000;
  hw.uplink_h2d_bytes_per_second = 1'000'000'000;
  // Rank 1 starts 50 ns later. Rank 0's offload moves 50 bytes alone
  // (10..60), then both move at half a byte/ns: rank 0's ends at 160, rank
  // 1's moves its last 50 bytes alone, ending at 210 (160 in its own time).
  // The prefetches (510 and 560) overlap the same way: rank 0's ends at
  // 660, and op 3, ready at 560, waits 100 ns.
  Physics skewed;
  skewed.rank_skew_ns = 50;
  SimulationResult r = ReplayOnNode(SharedLinkTrace(50), hw, skewed);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.iteration_ns, 670);
  EXPECT_EQ(r.prefetch_wait_ns, 100);
  EXPECT_EQ(r.uplink_wait_ns, 100);
  EXPECT_EQ(r.rank, 0);  // both ranks take 670: the first is reported
  std::vector<TimelineEvent> offload = Events(r, TimelineKind::kOffload);
  ASSERT_EQ(offload.size(), 1u);
  EXPECT_EQ(offload[0].end_ns, 160);
  // 150 ns apart the copies never overlap: each rank runs as if alone.
  skewed.rank_skew_ns = 150;
  r = ReplayOnNode(SharedLinkTrace(50), hw, skewed);
  EXPECT_EQ(r.iteration_ns, 620);
  EXPECT_EQ(r.uplink_wait_ns, 0);
  // Its events are both ranks': twice those of a rank replayed alone.
  hw.gpus_per_uplink = 1;
  const SimulationResult alone = ReplayOnNode(SharedLinkTrace(50), hw, skewed);
  EXPECT_EQ(alone.iteration_ns, 620);
  EXPECT_GT(alone.events, SharedLinkTrace(50).num_ops());
  EXPECT_EQ(r.events, 2 * alone.events);
}

TEST(EventModelTest, CopiesSlowMemoryBoundOpsBeneathThem) {
  TinyTrace t;
  t.Fwd(10), t.Fwd(500), t.Bwd(500), t.Bwd(10);
  t.Tensor(100, 0, {3});
  // Op 1 reads and writes 2000 bytes at 4 bytes/ns: memory-bound, 500 ns.
  t.spec.operators[1].memory_traffic_bytes = 2000;
  Hardware hw = ByteNanosecondLink();
  hw.hbm_bytes_per_second = 4'000'000'000;
  Physics contended;
  contended.hbm_contention = true;
  // The offload (10..110) takes 1 byte/ns of the 4: op 1 runs at 3/4 speed
  // for 100 ns (75 ns of its work), then at full speed for 425: it ends at
  // 535, not 510. Op 2 has no traffic figure: the prefetch beneath it costs
  // nothing.
  const SimulationResult r = ReplayOnNode(t.Build(), hw, contended);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.contention_ns, 25);
  EXPECT_EQ(r.iteration_ns, 1045);
  const std::vector<TimelineEvent> ops = Events(r, TimelineKind::kOp);
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[1].start_ns, 10);
  EXPECT_EQ(ops[1].end_ns, 535);
  // Without contention the same trace takes 1020.
  EXPECT_EQ(ReplayOnNode(t.Build(), hw).iteration_ns, 1020);
  // An op whose roofline is compute-bound even with the HBM left is not
  // slowed: 7e5 FLOPs at 1e12 FLOP/s take 700 ns of roofline time, above
  // the 2000 bytes at 3 bytes/ns (667 ns). At 5e5 FLOPs (500 ns) it is.
  t.spec.operators[1].flops = 700'000;
  EXPECT_EQ(ReplayOnNode(t.Build(), hw, contended).iteration_ns, 1020);
  t.spec.operators[1].flops = 500'000;
  EXPECT_EQ(ReplayOnNode(t.Build(), hw, contended).iteration_ns, 1045);
}

// Contention at the limits a request may set: 2^60 FLOPs and bytes of
// traffic, matmul and HBM rates of INT64_MAX, links at 2^60 bytes/s. The
// offload of 2^40 bytes moves for ceil(2^40 * 1e9 / 2^60) = 954 ns beneath op
// 1, taking 2^60 of the HBM's 2^63 - 1 bytes/s: op 1 progresses at
// floor(65536 * (2^63 - 1 - 2^60) / (2^63 - 1)) = 57343 units per ns of the
// 65536 of full speed, so it has 2000 * 65536 - 954 * 57343 units left at 964
// and ends 1166 ns later, at 2130: 120 ns of contention. (Its products reach
// 2^123 and the scaled ones overflowed 128 bits.)
TEST(EventModelTest, ContentionAtTheLimitsFollowsTheFormula) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Hardware hw = ByteNanosecondLink();
  hw.d2h_bytes_per_second = hw.h2d_bytes_per_second = int64_t{1} << 60;
  hw.matmul_flops_per_second = kMax;
  hw.hbm_bytes_per_second = kMax;
  Physics contended;
  contended.hbm_contention = true;
  EXPECT_EQ(internal::ContendedRate(int64_t{1} << 60, int64_t{1} << 60, hw,
                                    int64_t{1} << 60),
            57343);
  // Both links at once leave 3/4 of the HBM: floor(65536 * (2^63 - 1 -
  // 2^61) / (2^63 - 1)) = 49151.
  EXPECT_EQ(internal::ContendedRate(int64_t{1} << 60, int64_t{1} << 60, hw,
                                    int64_t{1} << 61),
            49151);
  // Memory-bound (F / P < M / B): the HBM left over the HBM.
  EXPECT_EQ(internal::ContendedRate(1, int64_t{1} << 60, hw, int64_t{1} << 60),
            57343);
  TinyTrace t;
  t.Fwd(10), t.Fwd(2000), t.Bwd(2000), t.Bwd(10);
  t.Tensor(int64_t{1} << 40, 0, {3});
  t.spec.operators[1].flops = int64_t{1} << 60;
  t.spec.operators[1].memory_traffic_bytes = int64_t{1} << 60;
  const SimulationResult r = ReplayOnNode(t.Build(), hw, contended);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.contention_ns, 120);
  const std::vector<TimelineEvent> ops = Events(r, TimelineKind::kOp);
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[1].end_ns, 2130);
}

TEST(EventModelTest, PhysicsTheModelCannotReplayIsRejectedByField) {
  const Trace trace = SharedLinkTrace(50);
  Hardware hw = ByteNanosecondLink();
  hw.hbm_bytes_per_second = 3'000'000'000;  // under twice the two links
  SimulationOptions options;
  options.physics.hbm_contention = true;
  absl::StatusOr<SimulationResult> r =
      Simulate(trace, hw, PlanOf("s", 2), options);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(
      absl::StrContains(r.status().message(), "hardware.hbm_bytes_per_second"))
      << r.status();
  options.physics.hbm_contention = false;
  options.physics.rank_skew_ns = -1;
  r = Simulate(trace, hw, PlanOf("s", 2), options);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "physics.rank_skew_ns"))
      << r.status();
}

}  // namespace
}  // namespace slackswap
