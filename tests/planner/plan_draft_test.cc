// The plan draft (planner/plan_draft.h) updates needs, releases and the
// memory profile incrementally; after any sequence of decision changes they
// must equal the same quantities computed from scratch from the decisions.
#include "planner/plan_draft.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "simulator/plan.h"
#include "simulator/schedule.h"
#include "simulator/small_traces.h"
#include "simulator/trace_validation.h"
#include "tests/planner/shaped_traces.h"

namespace slackswap {
namespace {

struct Reference {
  std::vector<int32_t> need;
  std::vector<int32_t> release;
  std::vector<int64_t> profile;  // bytes resident at each op's start
};

// From the header's definitions, with nothing incremental: needs from the
// simulator's DeriveNeeds, lifetimes per decision, bytes summed per op.
Reference FromScratch(const Trace& trace, const Plan& plan,
                      const std::vector<int32_t>& forward_free) {
  Reference r;
  // need: the first backward op that reads t, directly or through the
  // rebuild of a recomputed dependent (dependents after inputs in the
  // topological order). The simulator's DeriveNeeds says the same for every
  // tensor it schedules (swapped or recomputed).
  r.need.assign(trace.tensors.size(), 0);
  const auto& order = trace.recompute_topological_order;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    int32_t need = trace.tensors[*it].first_backward_use;
    for (int32_t d : trace.recompute_dependents.Row(*it)) {
      if (plan.decisions[d] == Decision::kRecompute)
        need = std::min(need, r.need[d]);
    }
    r.need[*it] = need;
  }
  const std::vector<int32_t> scheduled = DeriveNeeds(trace, plan.decisions);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (plan.decisions[t] != Decision::kKeep) {
      EXPECT_EQ(scheduled[t], r.need[t]);
    }
  }
  r.release.assign(trace.tensors.size(), 0);
  r.profile.assign(trace.ops.size(), 0);
  for (int32_t o = 0; o < trace.num_ops(); ++o)
    r.profile[o] = trace.ops[o].workspace_bytes;
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    int32_t release = trace.tensors[t].last_backward_use;
    for (int32_t d : trace.recompute_dependents.Row(t)) {
      if (plan.decisions[d] == Decision::kRecompute)
        release = std::max(release, r.need[d]);
    }
    r.release[t] = release;
  }
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& tensor = trace.tensors[t];
    int32_t a0 = tensor.producer_op, a1 = -1, b0 = 0, b1 = -1;
    switch (plan.decisions[t]) {
      case Decision::kKeep:
        a1 = r.release[t];
        break;
      case Decision::kRecompute:
        a1 = tensor.last_forward_use;
        b0 = r.need[t];
        b1 = r.release[t];
        break;
      case Decision::kSwap:
        a1 = std::max(tensor.last_forward_use, forward_free[t]);
        b0 = std::min(plan.prefetch_issue_op[t], r.need[t]);
        b1 = r.release[t];
        if (b0 <= a1) {  // the copies overlap: one lifetime
          a1 = std::max(a1, r.release[t]);
          b1 = -1;
        }
        break;
    }
    for (int32_t o = 0; o < trace.num_ops(); ++o) {
      if ((a0 <= o && o <= a1) || (b0 <= o && o <= b1))
        r.profile[o] += tensor.size_bytes;
    }
  }
  return r;
}

void CheckRandomChanges(const Trace& trace, uint64_t seed, int changes) {
  std::mt19937_64 random(seed);
  PlanDraft draft(trace);
  std::vector<int32_t> forward_free(trace.tensors.size(), 0);
  for (int step = 0; step < changes; ++step) {
    const int32_t t = static_cast<int32_t>(random() % trace.tensors.size());
    const Tensor& tensor = trace.tensors[t];
    switch (random() % 3) {
      case 0:
        draft.SetKeep(t);
        forward_free[t] = 0;
        break;
      case 1:
        if (tensor.recompute_forbidden) continue;
        draft.SetRecompute(t);
        forward_free[t] = 0;
        break;
      default: {
        if (tensor.swap_forbidden) continue;
        const int32_t free_op =
            tensor.last_forward_use + static_cast<int32_t>(random() % 3);
        const int32_t issue =
            tensor.last_forward_use + 1 +
            static_cast<int32_t>(
                random() %
                std::max<int32_t>(
                    1, trace.num_ops() - tensor.last_forward_use - 1));
        draft.SetSwap(t, free_op, issue);
        forward_free[t] = free_op;
      }
    }
    const Reference want = FromScratch(trace, draft.plan(), forward_free);
    for (int32_t u = 0; u < trace.num_tensors(); ++u) {
      ASSERT_EQ(draft.need(u), want.need[u])
          << "tensor " << u << " step " << step;
      ASSERT_EQ(draft.release(u), want.release[u]) << "tensor " << u;
    }
    int64_t peak = 0;
    for (int32_t o = 0; o < trace.num_ops(); ++o) {
      ASSERT_EQ(draft.BytesAt(o), want.profile[o])
          << "op " << o << " step " << step;
      peak = std::max(peak, want.profile[o]);
    }
    ASSERT_EQ(draft.PeakBytes(), peak);
  }
}

TEST(PlanDraftTest, RandomSmallTracesMatchAFromScratchProfile) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    absl::StatusOr<Trace> trace = ValidateTrace(RandomSmallTrace(seed).trace);
    ASSERT_TRUE(trace.ok()) << trace.status();
    SCOPED_TRACE(seed);
    CheckRandomChanges(*trace, seed, 40);
  }
}

TEST(PlanDraftTest, ManyDependentsTakeTheSegmentTreePath) {
  // star: every tensor is rebuilt from the first, far more dependents than
  // the draft scans (its needs then live in a segment tree); dag: up to
  // three inputs each.
  for (const std::string shape : {"star", "dag", "chain"}) {
    absl::StatusOr<Trace> trace =
        ValidateTrace(testing::ShapedTrace(shape, 60));
    ASSERT_TRUE(trace.ok()) << trace.status();
    SCOPED_TRACE(shape);
    CheckRandomChanges(*trace, 7, 300);
  }
}

TEST(PlanDraftTest, RebuildChainSizeCountsRecomputedInputsOnce) {
  absl::StatusOr<Trace> trace =
      ValidateTrace(testing::ShapedTrace("chain", 10));
  ASSERT_TRUE(trace.ok());
  PlanDraft draft(*trace);
  // Tensor i is rebuilt from i - 1: with 0..4 recomputed, rebuilding 5
  // rebuilds 4, 3, 2, 1 and 0 first.
  for (int32_t t = 0; t < 5; ++t) draft.SetRecompute(t);
  EXPECT_EQ(draft.RebuildChainSize(5, 100), 6);
  EXPECT_EQ(draft.RebuildChainSize(2, 100), 3);
  // Counting stops past the limit.
  EXPECT_LE(draft.RebuildChainSize(5, 2), 3);
  const std::vector<int32_t> both = {5, 3};
  EXPECT_EQ(draft.RebuildChainSize(absl::MakeConstSpan(both), 100), 6);
}

}  // namespace
}  // namespace slackswap
