// Each baseline on a small hand-checked trace, and the genetic search's
// guarantees.
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "planner/checkpointing.h"
#include "planner/genetic_search.h"
#include "planner/policies.h"
#include "planner/superneurons.h"
#include "planner/swapadvisor.h"
#include "planner/vdnn.h"
#include "simulator/event_model.h"
#include "tests/simulator/random_plans.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace {

using ::slackswap::testing::ByteNanosecondLink;
using ::slackswap::testing::SmallWorkloads;
using ::slackswap::testing::TinyTrace;

// Two layers (blocks 1 and 2) of three ops each, then their backward:
//   op 0 (block 0, matmul) -> t0 (block input, 100 B)
//   ops 1-3 (block 1): matmul -> t1 (100), elementwise -> t2 (100), matmul ->
//   t3 (out, 100) ops 4-6 (block 2): matmul -> t4 (100), elementwise -> t5
//   (100), matmul -> t6 (100) backward ops 7..13 mirror them.
TinyTrace TwoLayers() {
  TinyTrace t;
  t.Fwd(100, 0);
  for (int block = 1; block <= 2; ++block) {
    t.Fwd(100, block), t.Fwd(100, block), t.Fwd(100, block);
  }
  for (int block = 2; block >= 1; --block) {
    t.Bwd(200, block), t.Bwd(200, block), t.Bwd(200, block);
  }
  t.Bwd(200, 0);
  const OpKind kinds[] = {OpKind::kMatmul,      OpKind::kMatmul,
                          OpKind::kElementwise, OpKind::kMatmul,
                          OpKind::kMatmul,      OpKind::kElementwise,
                          OpKind::kMatmul};
  for (int o = 0; o < 7; ++o) t.spec.operators[o].kind = kinds[o];
  // Tensor i is produced by op i, read by op i + 1 (forward) and by the
  // backward op mirroring op i + 1; rebuilt from tensor i - 1 by op i.
  for (int i = 0; i < 7; ++i) {
    std::initializer_list<int32_t> uses = {};
    const int32_t forward = i + 1 < 7 ? i + 1 : -1;
    const int32_t backward = 13 - i;
    if (forward >= 0) {
      t.Tensor(100, i, {forward, backward}, 100, {});
    } else {
      t.Tensor(100, i, {backward}, 100, {});
    }
    (void)uses;
    if (i > 0) t.spec.tensors[i].recompute_inputs.push_back(i - 1);
  }
  t.spec.tensors[2].recompute_duration_ns = 10;  // elementwise: cheap
  t.spec.tensors[5].recompute_duration_ns = 10;
  t.spec.tensors[0].recompute_forbidden = true;
  return t;
}

// In this trace every tensor is live from its producer until the backward op
// mirroring its reader, so the all-keep peak (700) spans ops 6 and 7, and a
// one-layer-ahead prefetch brings block 1's tensors back at op 7.

TEST(PoliciesTest, EveryPolicyIsListedOnceAndNamedBothWays) {
  // Arrays indexed by policy (the server's metrics) are kNumPolicies long.
  ASSERT_EQ(static_cast<int>(AllPolicies().size()), kNumPolicies);
  std::vector<int> seen(kNumPolicies, 0);
  for (Policy p : AllPolicies()) {
    const int i = static_cast<int>(p);
    ASSERT_GE(i, 0);
    ASSERT_LT(i, kNumPolicies);
    ++seen[i];
    absl::StatusOr<Policy> back = PolicyFromName(PolicyName(p));
    ASSERT_TRUE(back.ok()) << PolicyName(p);
    EXPECT_EQ(*back, p);
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

TEST(VdnnTest, SwapsInProductionOrderUntilTheBudgetIsMetWithBarriers) {
  const Trace trace = TwoLayers().Build();
  // 650 needs 50 bytes gone at ops 6 and 7: t0, first in production order,
  // is enough (needed at op 13, prefetched one layer ahead at op 10).
  const PlanningResult r =
      *PlanVdnn(trace, ByteNanosecondLink(), 650, Physics());
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_TRUE(r.per_layer_barriers);
  const Decision s = Decision::kSwap, k = Decision::kKeep;
  EXPECT_EQ(r.plan.decisions, (std::vector<Decision>{s, k, k, k, k, k, k}));
  EXPECT_EQ(r.plan.prefetch_issue_op[0], 10);
  // The barrier after block 0 (op 0) holds op 1 until t0's offload ends:
  // offload 100..200, op 1 ready at 100.
  EXPECT_EQ(r.replay.barrier_wait_ns, 100);
  EXPECT_LE(r.replay.peak_resident_bytes, 650);
  // Tighter, it keeps swapping in production order: t0..t3 at 450.
  const PlanningResult tighter =
      *PlanVdnn(trace, ByteNanosecondLink(), 450, Physics());
  EXPECT_EQ(tighter.plan.decisions[3], s);
  EXPECT_LE(tighter.replay.peak_resident_bytes, 450);
}

TEST(SuperNeuronsTest, RecomputesCheapOutputsAndSwapsExpensiveOnes) {
  const Trace trace = TwoLayers().Build();
  // 550: t0 and t1 (matmul outputs) are swapped, t2 (elementwise, rebuilt by
  // its producer alone) recomputed; then op 7 holds t1, t3..t6 = 500.
  const PlanningResult r =
      *PlanSuperNeurons(trace, ByteNanosecondLink(), 550, Physics());
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_TRUE(r.per_layer_barriers);
  const Decision s = Decision::kSwap, k = Decision::kKeep,
                 c = Decision::kRecompute;
  EXPECT_EQ(r.plan.decisions, (std::vector<Decision>{s, s, c, k, k, k, k}));
  EXPECT_EQ(r.replay.recompute_ns, 10);
  EXPECT_LE(r.replay.peak_resident_bytes, 550);
}

TEST(CheckpointingTest, RecomputesTheFewestBlocksAndLeavesTheLinkIdle) {
  const Trace trace = TwoLayers().Build();
  // Bodies: block 2 {t4, t5, t6} (300 B) goes first, block 1 {t1, t2} (t3 is
  // read by block 2) next. At 600, block 2 alone is not enough: rebuilding
  // it at op 7 brings back all 700; with block 1 too, op 7 holds 500.
  const PlanningResult r =
      *PlanCheckpointing(trace, ByteNanosecondLink(), 600, Physics());
  ASSERT_TRUE(r.feasible) << r.reason;
  const Decision k = Decision::kKeep, c = Decision::kRecompute;
  EXPECT_EQ(r.plan.decisions, (std::vector<Decision>{k, c, c, k, c, c, c}));
  EXPECT_EQ(r.replay.swapped_bytes, 0);
  EXPECT_EQ(r.replay.d2h_busy_ns, 0);
  // No checkpointing at all when everything fits.
  const PlanningResult none =
      *PlanCheckpointing(trace, ByteNanosecondLink(), 700, Physics());
  EXPECT_EQ(none.replay.recomputed_bytes, 0);
  // Below the floor of checkpointing alone: infeasible, and it says so.
  const PlanningResult floor =
      *PlanCheckpointing(trace, ByteNanosecondLink(), 250, Physics());
  EXPECT_FALSE(floor.feasible);
  EXPECT_LE(floor.replay.peak_resident_bytes, 250);
}

TEST(SwapAdvisorTest, SwapsOnlyAndIsDeterministicForASeed) {
  const Trace trace = TwoLayers().Build();
  GeneticOptions options;
  options.max_evaluations = 600;
  const PlanningResult a =
      *PlanSwapAdvisor(trace, ByteNanosecondLink(), 650, options);
  const PlanningResult b =
      *PlanSwapAdvisor(trace, ByteNanosecondLink(), 650, options);
  ASSERT_TRUE(a.feasible) << a.reason;
  EXPECT_EQ(a.replay.recomputed_bytes, 0);
  EXPECT_FALSE(a.per_layer_barriers);
  EXPECT_EQ(a.plan.decisions, b.plan.decisions);
  EXPECT_EQ(a.plan.prefetch_issue_op, b.plan.prefetch_issue_op);
  EXPECT_EQ(a.stats.plans_evaluated, 600);
  // Never worse than its vDNN seed replayed the same way (without barriers).
  SimulationOptions sim;
  sim.budget_bytes = 650;
  const SimulationResult seed = *Simulate(
      trace, ByteNanosecondLink(),
      PlanVdnn(trace, ByteNanosecondLink(), 650, Physics())->plan, sim);
  EXPECT_LE(a.replay.iteration_ns, seed.iteration_ns);
}

TEST(GeneticSearchTest, NeverWorseThanSlackSwapAndDeterministic) {
  int checked = 0;
  for (const auto& w : SmallWorkloads(3, {"a100"})) {
    const int64_t budget = AllKeepPeakBytes(w.trace) * 6 / 10;
    const PlanningResult slackswap =
        *PlanSlackSwap(w.trace, w.hardware, budget, PlannerOptions());
    if (!slackswap.feasible) continue;
    GeneticOptions options;
    options.max_evaluations = 400;
    options.seed = 7;
    const PlanningResult a =
        *PlanGeneticSearch(w.trace, w.hardware, budget, options);
    options.threads = 1;  // the thread count must not change the result
    const PlanningResult b =
        *PlanGeneticSearch(w.trace, w.hardware, budget, options);
    ASSERT_TRUE(a.feasible) << w.name;
    EXPECT_LE(a.replay.iteration_ns, slackswap.replay.iteration_ns) << w.name;
    EXPECT_EQ(a.plan.decisions, b.plan.decisions) << w.name;
    EXPECT_EQ(a.replay.iteration_ns, b.replay.iteration_ns) << w.name;
    EXPECT_EQ(a.stats.plans_evaluated, 400);
    EXPECT_LE(a.lower_bound.iteration_ns, a.replay.iteration_ns);
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

TEST(PoliciesTest, EveryPolicyReturnsAValidPlanWithinBudgetOrSaysWhy) {
  PolicyOptions options;
  options.swapadvisor.max_evaluations = 200;
  options.genetic_search.max_evaluations = 200;
  for (const auto& w : SmallWorkloads(2, {"a100"})) {
    const int64_t budget = AllKeepPeakBytes(w.trace) / 2;
    for (Policy policy : AllPolicies()) {
      SCOPED_TRACE(w.name + " " + PolicyName(policy));
      absl::StatusOr<PlanningResult> r =
          RunPolicy(policy, w.trace, w.hardware, budget, options);
      if (policy == Policy::kOptimum &&
          w.trace.num_tensors() > kMaxOptimumTensors) {
        // The exact search refuses traces this large, naming the field.
        EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
        continue;
      }
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_FALSE(absl::StartsWith(r->reason, "internal error")) << r->reason;
      if (!r->feasible) {
        EXPECT_FALSE(r->reason.empty());
        continue;
      }
      SimulationOptions sim;
      sim.budget_bytes = policy == Policy::kIdeal ? kUnlimitedBytes : budget;
      sim.per_layer_barriers = r->per_layer_barriers;
      const SimulationResult replay =
          *Simulate(w.trace, w.hardware, r->plan, sim);
      EXPECT_EQ(replay.iteration_ns, r->replay.iteration_ns);
      if (policy != Policy::kIdeal) {
        EXPECT_LE(r->replay.peak_resident_bytes, budget);
        EXPECT_LE(r->lower_bound.iteration_ns, r->replay.iteration_ns);
      }
    }
  }
  EXPECT_EQ(PolicyFromName("vdnn").value(), Policy::kVdnn);
  EXPECT_FALSE(PolicyFromName("magic").ok());
}

}  // namespace
}  // namespace slackswap
