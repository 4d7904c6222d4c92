// The local search's trades (planner/trades.h) on random plans of medium
// traces: each link trade swaps one rebuilt tensor and rebuilds the swapped
// tensors cheapest to rebuild per byte until their bytes cover its own, so
// the link carries no more bytes and the rebuilds take gain_ns less; at
// most kMaxLinkTrades, the largest gains; and MakeTrade makes one only
// while its tensors still have the decisions it was made for.
#include "planner/trades.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "planner/lower_bound.h"
#include "simulator/medium_traces.h"
#include "simulator/trace_validation.h"
#include "tests/simulator/random_plans.h"

namespace slackswap {
namespace {

using ::slackswap::testing::RandomPlan;

constexpr int kTraces = 12;

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
    const std::vector<Trade> link = Trades(trace, plan, false, true);
    const std::vector<Trade> memory = Trades(trace, plan, true, false);
    EXPECT_LE(link.size(), kMaxLinkTrades);
    capped += link.size() == kMaxLinkTrades;
    // Both kinds together: the same trades, the largest gain first.
    const std::vector<Trade> both = Trades(trace, plan, true, true);
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

}  // namespace
}  // namespace slackswap
