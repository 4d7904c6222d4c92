// The copy times a planner computes once per trace (TransferTimes,
// SimulationOptions::transfer_times): a replay that looks them up gives the
// result of one that works each out, field for field, with its timeline;
// on each GPU's own link, on a shared uplink in lockstep (with HBM
// contention now and then), with ranks started apart, with barriers, an
// allocator model, fixed transfers and a cutoff. A table made for other
// rates is not used; one with the replay's rates is.
#include <cstdint>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/plan.h"
#include "simulator/schedule.h"
#include "tests/simulator/fingerprints.h"
#include "tests/simulator/random_plans.h"

namespace slackswap {
namespace {

using ::slackswap::testing::Fingerprint;
using ::slackswap::testing::MixedWorkloads;
using ::slackswap::testing::RandomPlan;
using ::slackswap::testing::SharedUplink;
using ::slackswap::testing::Workload;

constexpr uint64_t kSeed = 20261207;
constexpr int kTrials = 7;

TEST(TransferTimesTest, TheTableHoldsTheReplaysCopyTimes) {
  for (const Workload& w :
       MixedWorkloads(kSeed, {"a100", "v100"}, 6, 2, 3, 60)) {
    SCOPED_TRACE(w.name);
    for (const bool shared : {false, true}) {
      const Hardware hw = shared ? SharedUplink(w.hardware, 3) : w.hardware;
      const TransferTimes times = ComputeTransferTimes(w.trace, hw, {});
      // Under node physics, each direction's lockstep share of the uplink.
      const Hardware link = shared ? LockstepShare(hw) : hw;
      EXPECT_EQ(times.d2h_bytes_per_second, link.d2h_bytes_per_second);
      EXPECT_EQ(times.h2d_bytes_per_second, link.h2d_bytes_per_second);
      if (shared)
        EXPECT_LT(times.h2d_bytes_per_second, hw.h2d_bytes_per_second);
      const int32_t items =
          w.trace.num_tensors() + w.trace.num_fixed_transfers();
      ASSERT_EQ(times.d2h_ns.size(), static_cast<size_t>(items));
      ASSERT_EQ(times.h2d_ns.size(), static_cast<size_t>(items));
      for (int32_t item = 0; item < items; ++item) {
        const int64_t bytes = ItemBytes(w.trace, item);
        EXPECT_EQ(times.d2h_ns[item],
                  TransferNs(bytes, link.d2h_bytes_per_second,
                             hw.transfer_latency_ns));
        EXPECT_EQ(times.h2d_ns[item],
                  TransferNs(bytes, link.h2d_bytes_per_second,
                             hw.transfer_latency_ns));
      }
    }
  }
}

TEST(TransferTimesTest, AReplayThatLooksUpIsTheReplayThatWorksOut) {
  std::mt19937_64 rng(kSeed);
  int compared = 0, with_fixed = 0, shared_uplink = 0, cut_off = 0;
  for (const Workload& w :
       MixedWorkloads(kSeed, {"a100", "h100"}, 18, 3, 9, 120)) {
    for (int trial = 0; trial < kTrials; ++trial) {
      SCOPED_TRACE(absl::StrCat(w.name, " trial ", trial));
      Hardware hw = w.hardware;
      SimulationOptions options;
      options.record_timeline = trial % 2 == 0;
      if (trial == 1 || trial == 2 || trial == 3) {
        hw = SharedUplink(hw, 2);
        options.physics.hbm_contention = trial == 2 &&
                                         hw.matmul_flops_per_second > 0 &&
                                         hw.hbm_bytes_per_second > 0;
        // Ranks started apart share the uplink by the event (its rates
        // change as copies start and end): the table does not apply.
        if (trial == 3) options.physics.rank_skew_ns = 1000;
      }
      if (trial == 4) options.per_layer_barriers = true;
      if (trial == 5) options.physics.allocator = AllocatorKind::kCaching;
      if (!CheckPhysics(w.trace, hw, options.physics).ok()) continue;
      options.budget_bytes =
          static_cast<int64_t>(static_cast<double>(AllKeepPeakBytes(w.trace)) *
                               (0.3 + 0.7 * trial / kTrials));
      const Plan plan = RandomPlan(w.trace, options.per_layer_barriers, rng);
      const Schedule schedule = DeriveSchedule(w.trace, plan);
      const SimulationResult plain =
          SimulateSchedule(w.trace, hw, plan, schedule, options);
      const TransferTimes times =
          ComputeTransferTimes(w.trace, hw, options.physics);
      SimulationOptions looked_up = options;
      looked_up.transfer_times = &times;
      EXPECT_EQ(Fingerprint(plain),
                Fingerprint(
                    SimulateSchedule(w.trace, hw, plan, schedule, looked_up)));
      // With a cutoff short of the plan's time.
      if (plain.feasible && trial != 3) {
        options.cutoff_ns = plain.iteration_ns - plain.iteration_ns / 20;
        looked_up.cutoff_ns = options.cutoff_ns;
        const SimulationResult cut =
            SimulateSchedule(w.trace, hw, plan, schedule, options);
        EXPECT_EQ(Fingerprint(cut),
                  Fingerprint(SimulateSchedule(w.trace, hw, plan, schedule,
                                               looked_up)));
        cut_off += cut.cut_off;
      }
      ++compared;
      with_fixed += w.trace.num_fixed_transfers() > 0;
      shared_uplink += hw.gpus_per_uplink > 1;
    }
  }
  EXPECT_GE(compared, 150);
  EXPECT_GE(with_fixed, 20);
  EXPECT_GE(shared_uplink, 50);
  EXPECT_GE(cut_off, 20);
}

TEST(TransferTimesTest, OnlyATableOfTheReplaysRatesIsUsed) {
  // Tables whose times are all doubled: with the replay's rates the replay
  // takes them (it ends later); made for another link, it does not.
  int used = 0;
  for (const Workload& w : MixedWorkloads(kSeed + 1, {"a100"}, 8, 100, 4, 80)) {
    SCOPED_TRACE(w.name);
    // Every tensor that may be swapped is, each prefetch issued at its need.
    Plan plan = Plan::AllKeep(w.trace);
    for (int32_t t = 0; t < w.trace.num_tensors(); ++t) {
      if (!w.trace.tensors[t].swap_forbidden)
        plan.decisions[t] = Decision::kSwap;
    }
    const std::vector<int32_t> need = DeriveNeeds(w.trace, plan.decisions);
    for (int32_t t = 0; t < w.trace.num_tensors(); ++t) {
      if (plan.decisions[t] == Decision::kSwap)
        plan.prefetch_issue_op[t] = need[t];
    }
    const Schedule schedule = DeriveSchedule(w.trace, plan);
    if (schedule.prefetch_order.empty()) continue;
    SimulationOptions options;
    const SimulationResult plain =
        SimulateSchedule(w.trace, w.hardware, plan, schedule, options);
    ASSERT_TRUE(plain.feasible);
    Hardware slower = w.hardware;
    slower.h2d_bytes_per_second /= 2;
    for (const bool same_rates : {true, false}) {
      TransferTimes times = ComputeTransferTimes(
          w.trace, same_rates ? w.hardware : slower, options.physics);
      for (int64_t& ns : times.d2h_ns) ns *= 2;
      for (int64_t& ns : times.h2d_ns) ns *= 2;
      options.transfer_times = &times;
      const SimulationResult r =
          SimulateSchedule(w.trace, w.hardware, plan, schedule, options);
      if (same_rates) {
        EXPECT_GT(r.h2d_busy_ns, plain.h2d_busy_ns);
        used += r.h2d_busy_ns > plain.h2d_busy_ns;
      } else {
        EXPECT_EQ(Fingerprint(r), Fingerprint(plain));
      }
    }
  }
  EXPECT_GE(used, 5);
}

}  // namespace
}  // namespace slackswap
