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
#include "simulator/medium_traces.h"
#include "simulator/plan.h"
#include "simulator/small_traces.h"
#include "simulator/splitmix.h"
#include "simulator/trace_validation.h"
#include "tests/simulator/random_plans.h"

namespace slackswap {
namespace {

using ::slackswap::testing::AddRandomFixedTransfers;
using ::slackswap::testing::RandomPlan;
using ::slackswap::testing::SharedUplink;
using ::slackswap::testing::SmallWorkloads;
using ::slackswap::testing::Workload;

constexpr uint64_t kSeed = 20261205;
constexpr int kTrials = 16;

// Generated workloads (2 layers, four GPUs), random small traces (half of
// them with random fixed transfers) and random medium traces.
std::vector<Workload> Workloads() {
  std::vector<Workload> out =
      SmallWorkloads(2, {"titan-x", "a100", "h100", "gh200"});
  SplitMix64 rng(kSeed);
  for (int seed = 1; seed <= 60; ++seed) {
    SmallTrace small =
        RandomSmallTrace(static_cast<uint64_t>(seed), {2, 12, 10});
    if (seed % 2 == 0) AddRandomFixedTransfers(small.trace, rng);
    absl::StatusOr<Trace> trace = ValidateTrace(small.trace);
    EXPECT_TRUE(trace.ok()) << "seed " << seed << ": " << trace.status();
    if (!trace.ok()) continue;
    out.push_back(
        {absl::StrCat("random-", seed), *std::move(trace), small.hardware});
  }
  // Medium chains, branched blocks and DAGs of 20 to 60 tensors.
  for (int seed = 1; seed <= 12; ++seed) {
    MediumTraceOptions options;
    options.shape = static_cast<MediumShape>(seed % 3);
    options.max_tensors = 60;
    const MediumTrace medium = RandomMediumTrace(kSeed + seed, options);
    absl::StatusOr<Trace> trace = ValidateTrace(medium.trace);
    EXPECT_TRUE(trace.ok()) << "medium " << seed << ": " << trace.status();
    if (!trace.ok()) continue;
    out.push_back(
        {absl::StrCat("medium-", seed), *std::move(trace), medium.hardware});
  }
  return out;
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
