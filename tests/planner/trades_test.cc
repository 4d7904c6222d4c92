// The local search's trades (planner/trades.h) on random plans of medium
// traces: each link trade swaps one rebuilt tensor and rebuilds the swapped
// tensors cheapest to rebuild per byte until their bytes cover its own, so
// the link carries no more bytes and the rebuilds take gain_ns less; at
// most kMaxLinkTrades, the largest gains; and MakeTrade makes one only
// while its tensors still have the decisions it was made for.
#include "planner/trades.h"

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "planner/lower_bound.h"
#include "planner/slackswap.h"
#include "simulator/event_model.h"
#include "simulator/medium_traces.h"
#include "simulator/trace_validation.h"
#include "tests/simulator/random_plans.h"

namespace slackswap {
namespace {

using ::slackswap::testing::RandomPlan;

constexpr int kTraces = 12;

TradeKinds Kinds(bool memory, bool link) {
  TradeKinds kinds;
  kinds.memory = memory;
  kinds.link = link;
  return kinds;
}

TEST(TradesTest, ALinkTradeSwapsADearRebuildForCheapOnesOfAsManyBytes) {
  std::mt19937_64 rng(20261208);
  int link_trades = 0, capped = 0, made = 0;
  for (int i = 0; i < kTraces; ++i) {
    MediumTraceOptions options;
    options.shape = static_cast<MediumShape>(i % 3);
    const Trace trace =
        *ValidateTrace(RandomMediumTrace(9000 + i, options).trace);
    const Plan plan = RandomPlan(trace, false, rng);
    SCOPED_TRACE(absl::StrCat("trace ", i));
    const std::vector<Trade> link = Trades(trace, plan, Kinds(false, true));
    const std::vector<Trade> memory = Trades(trace, plan, Kinds(true, false));
    EXPECT_LE(link.size(), kMaxLinkTrades);
    capped += link.size() == kMaxLinkTrades;
    // Both kinds together: the same trades, the largest gain first.
    const std::vector<Trade> both = Trades(trace, plan, Kinds(true, true));
    EXPECT_EQ(both.size(), link.size() + memory.size());
    for (size_t k = 1; k < both.size(); ++k)
      EXPECT_GE(both[k - 1].gain_ns, both[k].gain_ns);
    // The swapped tensors that may be rebuilt, the cheapest per byte first
    // (ties: the later tensor first).
    std::vector<int32_t> cheap;
    for (int32_t t = trace.num_tensors() - 1; t >= 0; --t) {
      const Tensor& x = trace.tensors[t];
      if (plan.decisions[t] == Decision::kSwap && x.size_bytes > 0 &&
          !x.recompute_forbidden) {
        cheap.push_back(t);
      }
    }
    std::stable_sort(cheap.begin(), cheap.end(), [&](int32_t a, int32_t b) {
      return CheaperToRebuildPerByte(trace.tensors[a], trace.tensors[b]);
    });
    for (const Trade& trade : link) {
      ++link_trades;
      const Tensor& tensor = trace.tensors[trade.tensor];
      EXPECT_EQ(trade.from, Decision::kRecompute);
      EXPECT_EQ(trade.to, Decision::kSwap);
      EXPECT_EQ(plan.decisions[trade.tensor], Decision::kRecompute);
      EXPECT_FALSE(tensor.swap_forbidden);
      int64_t covered = 0, rebuilt_ns = 0;
      for (int32_t t : trade.others) {
        EXPECT_EQ(plan.decisions[t], Decision::kSwap);
        covered += trace.tensors[t].size_bytes;
        rebuilt_ns += trace.tensors[t].recompute_ns;
      }
      // The cheapest, just enough of them: no more bytes on the link.
      ASSERT_LE(trade.others.size(), cheap.size());
      EXPECT_TRUE(
          std::equal(trade.others.begin(), trade.others.end(), cheap.begin()));
      EXPECT_GE(covered, tensor.size_bytes);
      EXPECT_LT(covered - trace.tensors[trade.others.back()].size_bytes,
                tensor.size_bytes);
      EXPECT_EQ(trade.gain_ns, tensor.recompute_ns - rebuilt_ns);
      EXPECT_GT(trade.gain_ns, 0);
      // Made: the decisions exchanged, where the chains fit.
      std::vector<uint32_t> stamp(trace.tensors.size(), 0);
      uint32_t walk = 0;
      Plan next = plan;
      if (MakeTrade(trace, plan, trade, 1 << 20, stamp, walk, next)) {
        ++made;
        EXPECT_EQ(next.decisions[trade.tensor], Decision::kSwap);
        for (int32_t t : trade.others)
          EXPECT_EQ(next.decisions[t], Decision::kRecompute);
        int32_t changed = 0;
        for (int32_t t = 0; t < trace.num_tensors(); ++t)
          changed += next.decisions[t] != plan.decisions[t];
        EXPECT_EQ(changed, 1 + static_cast<int32_t>(trade.others.size()));
        // Once made, neither it nor any trade over the same tensor applies.
        Plan again = next;
        EXPECT_FALSE(
            MakeTrade(trace, next, trade, 1 << 20, stamp, walk, again));
      }
    }
    for (const Trade& trade : memory) {
      EXPECT_EQ(trade.from, Decision::kKeep);
      EXPECT_EQ(trade.to, Decision::kRecompute);
    }
  }
  // Not vacuous.
  EXPECT_GE(link_trades, 30);
  EXPECT_GE(capped, 3);
  EXPECT_GE(made, 20);
}

// The bytes resident at op o at the least under `decisions` (as RoomTrades
// counts them): kept tensors from production to last use, others while
// the forward pass reads them and from their first backward use on.
int64_t LeastResident(const Trace& trace, const std::vector<Decision>& d,
                      int32_t o) {
  int64_t bytes = trace.transient_bytes(o);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& x = trace.tensors[t];
    const bool forward = o >= x.producer_op && o <= x.last_forward_use;
    const bool backward = o >= x.first_backward_use && o <= x.last_backward_use;
    const bool between = o > x.last_forward_use && o < x.first_backward_use;
    if (forward || backward || (between && d[t] == Decision::kKeep))
      bytes += x.size_bytes;
  }
  return bytes;
}

// Room trades on the passes' plans of medium traces, 2% and 10% of the way
// from their floor to their all-keep peak: each keeps a swapped or rebuilt
// tensor that would not fit alone and rebuilds (or, in place of a swap, swaps)
// kept tensors that free bytes within its span, until at every op of that span
// the bytes resident at the least fit; its gain is exact.
TEST(TradesTest, ARoomTradeKeepsATensorWhereKeptOnesMakeRoom) {
  int room = 0, swaps = 0, made = 0;
  for (int i = 0; i < 2 * kTraces; ++i) {
    MediumTraceOptions options;
    options.shape = static_cast<MediumShape>(i % 3);
    const MediumTrace medium = RandomMediumTrace(9100 + i / 2, options);
    const Trace trace = *ValidateTrace(medium.trace);
    const TransferTimes times =
        ComputeTransferTimes(trace, medium.hardware, Physics());
    const int64_t floor = ComputeProvenFloor(trace).bytes;
    const int64_t budget =
        floor + (AllKeepPeakBytes(trace) - floor) * (i % 2 == 0 ? 2 : 10) / 100;
    PlannerOptions passes;
    passes.search_time_ms = 0;
    const PlanningResult planned =
        *PlanSlackSwap(trace, medium.hardware, budget, passes);
    if (!planned.feasible) continue;
    const Plan& plan = planned.plan;
    SCOPED_TRACE(absl::StrCat("trace ", i));
    TradeKinds kinds;
    kinds.room = true;
    kinds.budget_bytes = budget;
    kinds.h2d_ns = &times.h2d_ns;
    const std::vector<Trade> trades = Trades(trace, plan, kinds);
    EXPECT_LE(trades.size(), 2 * kMaxRoomTrades);
    for (size_t k = 1; k < trades.size(); ++k)
      EXPECT_GE(trades[k - 1].gain_ns, trades[k].gain_ns);
    for (const Trade& trade : trades) {
      ++room;
      const int32_t t = trade.tensor;
      const Tensor& x = trace.tensors[t];
      EXPECT_EQ(plan.decisions[t], trade.from);
      EXPECT_NE(trade.from, Decision::kKeep);
      EXPECT_EQ(trade.to, Decision::kKeep);
      ASSERT_FALSE(trade.others.empty());
      // Alone it would not fit somewhere in its span; with the others it
      // fits everywhere there.
      std::vector<Decision> alone = plan.decisions;
      alone[t] = Decision::kKeep;
      std::vector<Decision> with = alone;
      int64_t others_bytes = 0, others_h2d = 0, others_rebuilt = 0;
      for (int32_t k : trade.others) {
        EXPECT_EQ(plan.decisions[k], Decision::kKeep);
        with[k] = trade.others_to;
        others_bytes += trace.tensors[k].size_bytes;
        others_h2d += times.h2d_ns[k];
        others_rebuilt += trace.tensors[k].recompute_ns;
      }
      bool short_alone = false;
      for (int32_t o = x.last_forward_use + 1; o < x.first_backward_use; ++o) {
        short_alone |= LeastResident(trace, alone, o) > budget;
        EXPECT_LE(LeastResident(trace, with, o), budget) << "op " << o;
      }
      EXPECT_TRUE(short_alone);
      if (trade.others_to == Decision::kSwap) {
        ++swaps;
        EXPECT_EQ(trade.from, Decision::kSwap);
        EXPECT_LE(others_bytes, x.size_bytes);
        EXPECT_EQ(trade.gain_ns, times.h2d_ns[t] - others_h2d);
      } else {
        EXPECT_EQ(trade.others_to, Decision::kRecompute);
        const int64_t saved =
            trade.from == Decision::kSwap ? times.h2d_ns[t] : x.recompute_ns;
        EXPECT_EQ(trade.gain_ns, saved - others_rebuilt);
      }
      EXPECT_GT(trade.gain_ns, 0);
      std::vector<uint32_t> stamp(trace.tensors.size(), 0);
      uint32_t walk = 0;
      Plan next = plan;
      if (MakeTrade(trace, plan, trade, 1 << 20, stamp, walk, next)) {
        ++made;
        EXPECT_EQ(next.decisions, with);
      }
    }
  }
  std::cout << room << " room trades, " << swaps << " with swaps, " << made
            << " made\n";
  // Not vacuous.
  EXPECT_GE(room, 30);
  EXPECT_GE(swaps, 5);
  EXPECT_GE(made, 20);
}

}  // namespace
}  // namespace slackswap
