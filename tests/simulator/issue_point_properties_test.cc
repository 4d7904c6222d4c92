// The property the searches lean on to fix issue points (docs/planner.md,
// "Issue points at the earliest"): under the any-speed admission rule,
// without HBM contention, skewed ranks or an allocator model, a swap's
// prefetch issued earlier in its window never makes a replay slower or stop
// completing. Checked over generated and random traces (some with fixed
// transfers), random plans and budgets, with and without per-layer barriers,
// on each GPU's own link and behind a shared uplink.
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simulator/event_model.h"
#include "simulator/plan.h"
#include "tests/simulator/random_plans.h"

namespace slackswap {
namespace {

using ::slackswap::testing::MixedWorkloads;
using ::slackswap::testing::RandomPlan;
using ::slackswap::testing::SharedUplink;
using ::slackswap::testing::Workload;

constexpr uint64_t kSeed = 20261205;
constexpr int kTrials = 16;

// Generated workloads (2 layers, four GPUs), random small traces (half of
// them with random fixed transfers) and random medium traces.
std::vector<Workload> Workloads() {
  return MixedWorkloads(kSeed, {"titan-x", "a100", "h100", "gh200"}, 60, 2, 12,
                        60);
}

struct Counts {
  int plans = 0;        // completed random plans
  int comparisons = 0;  // earlier issue points replayed against them
  int faster = 0;       // of which strictly faster
};

// `later` completes under `options`; `earlier` (the same plan with issue
// points earlier) must complete no later.
void ExpectNoSlower(const Workload& w, const Hardware& hw, const Plan& earlier,
                    const SimulationResult& later,
                    const SimulationOptions& options, Counts& counts) {
  const SimulationResult r = *Simulate(w.trace, hw, earlier, options);
  ++counts.comparisons;
  ASSERT_TRUE(r.feasible) << r.infeasibility.reason;
  EXPECT_LE(r.iteration_ns, later.iteration_ns);
  if (r.iteration_ns < later.iteration_ns) ++counts.faster;
}

TEST(IssuePointPropertyTest, AnEarlierIssuePointIsNeverSlower) {
  std::mt19937_64 rng(kSeed);
  Counts counts;
  for (const Workload& w : Workloads()) {
    for (int trial = 0; trial < kTrials; ++trial) {
      SCOPED_TRACE(absl::StrCat(w.name, " trial ", trial));
      const bool barriers = trial % 3 == 2;
      const Hardware hw =
          trial % 4 == 1 ? SharedUplink(w.hardware, 2) : w.hardware;
      const Plan plan = RandomPlan(w.trace, barriers, rng);
      SimulationOptions options;
      options.per_layer_barriers = barriers;
      options.budget_bytes =
          static_cast<int64_t>(static_cast<double>(AllKeepPeakBytes(w.trace)) *
                               (0.35 + 0.75 * trial / kTrials));
      const SimulationResult r = *Simulate(w.trace, hw, plan, options);
      if (!r.feasible) continue;
      ++counts.plans;
      // Every swap at the earliest point of its window.
      ExpectNoSlower(w, hw, IssuedAtEarliest(w.trace, plan), r, options,
                     counts);
      // One swap at a time, to a random earlier point.
      for (int32_t t = 0; t < w.trace.num_tensors(); ++t) {
        const int32_t earliest = w.trace.tensors[t].last_forward_use + 1;
        if (plan.decisions[t] != Decision::kSwap ||
            plan.prefetch_issue_op[t] <= earliest) {
          continue;
        }
        Plan earlier = plan;
        earlier.prefetch_issue_op[t] = std::uniform_int_distribution<int32_t>(
            earliest, plan.prefetch_issue_op[t] - 1)(rng);
        ExpectNoSlower(w, hw, earlier, r, options, counts);
      }
    }
  }
  std::cout << counts.plans << " completed plans, " << counts.comparisons
            << " with earlier issue points, " << counts.faster
            << " of them faster\n";
  // Not vacuous: many comparisons, and issue points that matter.
  EXPECT_GE(counts.comparisons, 1000);
  EXPECT_GE(counts.faster, 50);
}

}  // namespace
}  // namespace slackswap
